#include "eval/metrics.h"

#include <cmath>

#include <nlohmann/json.hpp>

namespace longhaul {
namespace {

std::string quote(std::string_view line) {
  std::string s(line.substr(0, 120));
  return "'" + s + (line.size() > 120 ? "...'" : "'");
}

}  // namespace

Result<std::map<std::string, Metric>> parse_metrics(std::string_view out) {
  std::map<std::string, Metric> metrics;
  int line_no = 0;
  while (!out.empty()) {
    size_t end = out.find('\n');
    std::string_view line = out.substr(0, end);
    out = end == std::string_view::npos ? std::string_view() : out.substr(end + 1);
    ++line_no;
    size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string_view::npos || line[first] != '{') continue;
    auto j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    std::string where = "stdout line " + std::to_string(line_no) + " " + quote(line);
    if (j.is_discarded() || !j.is_object()) return Error{where + " is not a JSON object"};
    if (!j.contains("metric") || !j["metric"].is_string() || j["metric"].get<std::string>().empty())
      return Error{where + " has no \"metric\" name"};
    if (!j.contains("value") || !j["value"].is_number())
      return Error{where + " has no numeric \"value\""};
    Metric m;
    m.value = j["value"].get<double>();
    if (j.contains("spread")) {
      if (!j["spread"].is_number() || j["spread"].get<double>() < 0)
        return Error{where + " has a \"spread\" that is not a non-negative number"};
      m.spread = j["spread"].get<double>();
    }
    if (j.contains("samples")) {
      if (!j["samples"].is_number_integer() || j["samples"].get<int>() < 1)
        return Error{where + " has \"samples\" that is not a positive integer"};
      m.samples = j["samples"].get<int>();
    }
    if (!std::isfinite(m.value) || !std::isfinite(m.spread))
      return Error{where + " has a value that is not finite"};
    metrics[j["metric"].get<std::string>()] = m;
  }
  return metrics;
}

}  // namespace longhaul
