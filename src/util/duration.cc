#include "util/duration.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace longhaul {

std::optional<double> parse_duration(std::string_view text) {
  if (text.empty()) return std::nullopt;
  double total = 0;
  size_t i = 0;
  bool any = false;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
    if (i == start) return std::nullopt;
    std::string number(text.substr(start, i - start));
    char* end = nullptr;
    double v = std::strtod(number.c_str(), &end);
    if (*end != '\0') return std::nullopt;
    size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string_view unit = text.substr(unit_start, i - unit_start);
    double scale;
    if (unit.empty()) {
      if (any || i != text.size()) return std::nullopt;  // a bare number stands alone
      scale = 1;
    } else if (unit == "ms") scale = 1e-3;
    else if (unit == "s") scale = 1;
    else if (unit == "m") scale = 60;
    else if (unit == "h") scale = 3600;
    else if (unit == "d") scale = 86400;
    else return std::nullopt;
    total += v * scale;
    any = true;
  }
  if (!std::isfinite(total)) return std::nullopt;
  return total;
}

std::string format_duration(double s) {
  char buf[32];
  if (s < 0) s = 0;
  if (s < 60) std::snprintf(buf, sizeof buf, "%.1fs", s);
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%dm%02ds", int(s) / 60, int(s) % 60);
  else std::snprintf(buf, sizeof buf, "%dh%02dm", int(s) / 3600, int(s) % 3600 / 60);
  return buf;
}

}  // namespace longhaul
