#include "cli/report.h"

#include <fmt/format.h>

#include "util/duration.h"

namespace longhaul {
namespace {

const char* kOutcomeOrder[] = {"ok", "rule_violation", "build_error", "incorrect",
                               "timeout", "crashed", "bad_output"};

std::string unit(const RunState& s) { return s.config["goal"].value("unit", ""); }

std::string budget_left(const RunState& s) {
  std::string out;
  auto add = [&](const std::string& part) { out += (out.empty() ? "" : ", ") + part; };
  if (s.budget.max_evals) add(fmt::format("{} evals", std::max(0, *s.budget.max_evals - s.evaluations)));
  if (s.budget.wall_time_s) add(format_duration(std::max(0.0, *s.budget.wall_time_s - s.elapsed_s)));
  if (s.budget.patience) add(fmt::format("patience {}", std::max(0, *s.budget.patience - s.since_gain)));
  return out.empty() ? "unlimited" : out;
}

std::string ratio_text(const RunState& s, double metric) {
  auto r = s.ratio(metric);
  return r ? fmt::format("{:.2f}x", *r) : "-";
}

}  // namespace

std::string format_metric(const RunState& s, double value) {
  std::string u = unit(s);
  return fmt::format("{:.6g}{}{}", value, u.empty() ? "" : " ", u);
}

std::string format_params(const nlohmann::json& params) {
  std::string out;
  for (const auto& [k, v] : params.items())
    out += (out.empty() ? "" : " ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  return out;
}

std::string progress_line(const RunState& s) {
  std::string best = s.best ? fmt::format("best {} ({} baseline)", format_metric(s, s.best_metric),
                                          ratio_text(s, s.best_metric))
                            : "no best yet";
  int failed = s.evaluations - (s.outcomes.count("ok") ? s.outcomes.at("ok") : 0);
  return fmt::format("[{} evals, {} failed] {} | {} elapsed | left: {}", s.evaluations, failed, best,
                     format_duration(s.elapsed_s), budget_left(s));
}

nlohmann::json status_json(const RunState& s, const std::string& run_dir, bool running) {
  nlohmann::json j = {{"run", run_dir},
                      {"task", s.config["task"]},
                      {"goal", s.config["goal"]},
                      {"strategy", s.config.value("strategy", "")},
                      {"seed", s.config.value("seed", "")},
                      {"state", running ? "running" : s.stop_reason.empty() ? "interrupted" : "stopped"},
                      {"stop_reason", s.stop_reason},
                      {"evaluations", s.evaluations},
                      {"attempts", s.ledger.size()},
                      {"outcomes", s.outcomes},
                      {"sessions", s.sessions},
                      {"elapsed_s", s.elapsed_s},
                      {"since_gain", s.since_gain}};
  nlohmann::json budget = nlohmann::json::object();
  if (s.budget.max_evals) budget["max_evals"] = *s.budget.max_evals;
  if (s.budget.wall_time_s) budget["wall_time_s"] = *s.budget.wall_time_s;
  if (s.budget.patience) budget["patience"] = *s.budget.patience;
  j["budget"] = budget;
  j["baseline"] = s.baseline_metric ? nlohmann::json(*s.baseline_metric) : nlohmann::json();
  if (s.best) {
    const Attempt& b = s.ledger[size_t(*s.best)];
    j["best"] = {{"attempt", b.index}, {"metric", s.best_metric}, {"candidate", b.candidate},
                 {"params", b.params}, {"strategy", b.strategy}};
    if (auto r = s.ratio(s.best_metric)) j["best"]["ratio"] = *r;
    if (s.confirmed_ratio && s.confirmed_attempt == b.index) j["best"]["confirmed_ratio"] = *s.confirmed_ratio;
  }
  j["target_reached"] = s.target_reached();
  return j;
}

std::string status_text(const RunState& s, const std::string& run_dir, bool running) {
  const auto& goal = s.config["goal"];
  std::string out;
  out += fmt::format("run       {} (task {}, strategy {}, seed {})\n", run_dir,
                     s.config["task"].value("name", "?"), s.config.value("strategy", "?"),
                     s.config.value("seed", "?"));
  std::string target;
  if (goal.contains("target")) target = fmt::format(", target {}", format_metric(s, goal["target"].get<double>()));
  if (goal.contains("target_ratio"))
    target = fmt::format(", target {:.2f}x baseline", goal["target_ratio"].get<double>());
  out += fmt::format("goal      {} {}{}\n", goal.value("direction", "?"), goal.value("metric", "?"), target);
  out += fmt::format("baseline  {}\n", s.baseline_metric ? format_metric(s, *s.baseline_metric) : "-");
  if (s.best) {
    const Attempt& b = s.ledger[size_t(*s.best)];
    out += fmt::format("best      {} ({} baseline) at attempt {} by {}{}\n", format_metric(s, s.best_metric),
                       ratio_text(s, s.best_metric), b.index, b.strategy,
                       b.params.empty() ? "" : ": " + format_params(b.params));
    if (s.confirmed_ratio && s.confirmed_attempt == b.index)
      out += fmt::format("confirmed {:.2f}x over the baseline, both re-measured side by side\n",
                         *s.confirmed_ratio);
  } else {
    out += "best      -\n";
  }
  std::string counts;
  for (const char* o : kOutcomeOrder)
    if (s.outcomes.count(o)) counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", o, s.outcomes.at(o));
  out += fmt::format("evals     {}{}\n", s.evaluations, counts.empty() ? "" : " (" + counts + ")");
  out += fmt::format("spent     {} in {} session{}; {} evals since the last gain\n",
                     format_duration(s.elapsed_s), s.sessions, s.sessions == 1 ? "" : "s", s.since_gain);
  out += fmt::format("left      {}\n", budget_left(s));
  std::string state = running ? "running"
                      : s.stop_reason.empty() ? "interrupted (longhaul resume " + run_dir + " carries on)"
                      : s.stop_reason == "interrupted" ? "interrupted (longhaul resume " + run_dir + " carries on)"
                                                       : "stopped: " + s.stop_reason;
  out += fmt::format("state     {}\n", state);
  return out;
}

}  // namespace longhaul
