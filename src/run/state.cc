#include "run/state.h"

#include <algorithm>

namespace longhaul {
namespace {

void merge_budget(Budget& b, const nlohmann::json& j) {
  if (!j.is_object()) return;
  if (j.contains("max_evals") && !j["max_evals"].is_null()) b.max_evals = j["max_evals"].get<int>();
  if (j.contains("wall_time_s") && !j["wall_time_s"].is_null())
    b.wall_time_s = j["wall_time_s"].get<double>();
  if (j.contains("patience") && !j["patience"].is_null()) b.patience = j["patience"].get<int>();
}

}  // namespace

void RunState::apply(const Event& e) {
  static const nlohmann::json kNone = nlohmann::json::object();
  const nlohmann::json& p = e.payload.is_object() ? e.payload : kNone;
  last_seq = e.seq;
  last_time = e.time;
  // Wall time counts inside sessions only: the gap before a resume is not the run's time.
  if (sessions > 0 && e.type != "session_started")
    elapsed_s = closed_sessions_s_ + (e.time - session_start_);

  auto attempt = [&]() -> Attempt* {
    int i = p.value("attempt", -1);
    return i >= 0 && i < int(ledger.size()) ? &ledger[size_t(i)] : nullptr;
  };

  if (e.type == "run_created") {
    config = p;
    task_hash = p.value("task", kNone).value("hash", "");
    direction = p.value("goal", kNone).value("direction", "minimize") == "maximize"
                    ? Direction::maximize
                    : Direction::minimize;
    merge_budget(budget, p.value("budget", nlohmann::json::object()));
  } else if (e.type == "session_started") {
    if (sessions > 0) closed_sessions_s_ = elapsed_s;
    ++sessions;
    session_start_ = e.time;
    elapsed_s = closed_sessions_s_;
    stop_reason.clear();
    task_hash = p.value("task_hash", task_hash);
    merge_budget(budget, p.value("budget", nlohmann::json::object()));
  } else if (e.type == "proposal") {
    Attempt a;
    a.index = int(ledger.size());
    a.proposal_seq = e.seq;
    a.candidate = p.value("candidate", "");
    a.params = p.value("params", nlohmann::json::object());
    a.files = p.value("files", std::map<std::string, std::string>{});
    a.strategy = p.value("strategy", "");
    a.hypothesis = p.value("hypothesis", "");
    ledger.push_back(std::move(a));
  } else if (e.type == "eval_started") {
    if (Attempt* a = attempt()) a->open_intent = e.seq;
  } else if (e.type == "eval_interrupted") {
    if (Attempt* a = attempt()) a->open_intent = 0;
  } else if (e.type == "eval_finished") {
    Attempt* a = attempt();
    if (!a) return;
    a->open_intent = 0;
    a->outcome = p.value("outcome", "");
    a->failed_step = p.value("failed_step", "");
    a->detail = p.value("detail", "");
    if (p.contains("metric") && p["metric"].is_number()) a->metric = p["metric"].get<double>();
    a->spread = p.value("spread", 0.0);
    a->metrics = p.value("metrics", nlohmann::json::object());
    if (p.contains("profile") && p["profile"].is_string()) a->profile = p["profile"].get<std::string>();
    a->duplicate_of = p.value("duplicate_of", -1);
    if (a->duplicate_of >= 0) return;
    by_candidate.emplace(a->candidate, a->index);
    ++outcomes[a->outcome];
    ++evaluations;
    if (a->baseline() && a->metric) baseline_metric = a->metric;
    if (!a->baseline()) ++since_gain;
    a->verdict_pending = a->outcome == "ok" && a->metric.has_value();
  } else if (e.type == "remeasure_started" || e.type == "confirm_started") {
    open_remeasure = e.seq;
    open_remeasure_kind = e.type.substr(0, e.type.find('_'));
  } else if (e.type == "remeasure_finished" || e.type == "remeasure_interrupted" ||
             e.type == "confirm_finished" || e.type == "confirm_interrupted") {
    open_remeasure = 0;
    if (e.type == "confirm_finished") {
      auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v.empty() ? 0.0 : v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
      };
      auto best = p.value("candidate_values", std::vector<double>{});
      auto base = p.value("incumbent_values", std::vector<double>{});
      if (!best.empty() && best.size() == base.size() && median(best) > 0 && median(base) > 0) {
        confirmed_attempt = p.value("attempt", -1);
        confirmed_ratio = direction == Direction::minimize ? median(base) / median(best)
                                                           : median(best) / median(base);
      }
    }
  } else if (e.type == "verdict") {
    Attempt* a = attempt();
    if (!a) return;
    a->verdict_pending = false;
    if (p.value("crowned", false)) {
      a->crowned = true;
      best = a->index;
      best_metric = p.value("metric", a->metric.value_or(0));
      if (!a->baseline()) since_gain = 0;
    }
  } else if (e.type == "stopped") {
    stop_reason = p.value("reason", "");
  }
}

std::optional<double> RunState::ratio(double metric) const {
  if (!baseline_metric || *baseline_metric == 0 || metric == 0) return std::nullopt;
  return direction == Direction::minimize ? *baseline_metric / metric : metric / *baseline_metric;
}

bool RunState::target_reached() const {
  if (!best) return false;
  const auto& goal = config.value("goal", nlohmann::json::object());
  if (goal.contains("target") && goal["target"].is_number()) {
    double t = goal["target"].get<double>();
    return direction == Direction::minimize ? best_metric <= t : best_metric >= t;
  }
  if (goal.contains("target_ratio") && goal["target_ratio"].is_number()) {
    auto r = ratio(best_metric);
    return r && *r >= goal["target_ratio"].get<double>();
  }
  return false;
}

RunState fold(const std::vector<Event>& events) {
  RunState s;
  for (const auto& e : events) s.apply(e);
  return s;
}

}  // namespace longhaul
