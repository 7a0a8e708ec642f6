#include "run/state.h"

#include <gtest/gtest.h>

namespace longhaul {
namespace {

// Builds a log by hand, with explicit times, to check what the fold derives from it.
class Log {
 public:
  int64_t add(const std::string& type, nlohmann::json payload, double time, int64_t parent = 0) {
    events.push_back({int64_t(events.size()) + 1, time, type, parent, std::move(payload)});
    return events.back().seq;
  }
  std::vector<Event> events;
};

nlohmann::json created() {
  return {{"task", {{"name", "t"}, {"hash", "h0"}}},
          {"goal", {{"metric", "ms"}, {"direction", "minimize"}, {"target_ratio", 4.0}}},
          {"budget", {{"max_evals", 10}}},
          {"seed", "1"}};
}

void attempt(Log& log, int i, const std::string& strategy, const std::string& outcome,
             std::optional<double> metric, double t, bool crowned) {
  int64_t p = log.add("proposal", {{"attempt", i}, {"candidate", "c" + std::to_string(i)},
                                   {"strategy", strategy}, {"params", {{"X", i}}}}, t);
  int64_t s = log.add("eval_started", {{"attempt", i}}, t, p);
  nlohmann::json r = {{"attempt", i}, {"candidate", "c" + std::to_string(i)}, {"outcome", outcome}};
  if (metric) r["metric"] = *metric;
  log.add("eval_finished", r, t + 0.5, s);
  if (outcome == "ok") log.add("verdict", {{"attempt", i}, {"crowned", crowned}, {"metric", metric.value_or(0)}}, t + 0.5);
}

TEST(Fold, DerivesBaselineBestCountsAndPatience) {
  Log log;
  log.add("run_created", created(), 0);
  log.add("session_started", {{"task_hash", "h0"}}, 0);
  attempt(log, 0, "baseline", "ok", 8.0, 1, true);
  attempt(log, 1, "random", "ok", 4.0, 2, true);
  attempt(log, 2, "random", "incorrect", std::nullopt, 3, false);
  attempt(log, 3, "hill", "ok", 5.0, 4, false);
  RunState s = fold(log.events);
  ASSERT_EQ(s.ledger.size(), 4u);
  EXPECT_EQ(s.evaluations, 4);
  EXPECT_EQ(s.outcomes["ok"], 3);
  EXPECT_EQ(s.outcomes["incorrect"], 1);
  EXPECT_EQ(*s.baseline_metric, 8.0);
  EXPECT_EQ(*s.best, 1);
  EXPECT_EQ(s.best_metric, 4.0);
  EXPECT_DOUBLE_EQ(*s.ratio(s.best_metric), 2.0);
  EXPECT_EQ(s.since_gain, 2);
  EXPECT_FALSE(s.target_reached());
  EXPECT_EQ(*s.budget.max_evals, 10);
  EXPECT_DOUBLE_EQ(s.elapsed_s, 4.5);
  EXPECT_EQ(s.ledger[2].outcome, "incorrect");
  EXPECT_FALSE(s.ledger[3].crowned);
}

TEST(Fold, TracksWhatIsInFlight) {
  Log log;
  log.add("run_created", created(), 0);
  log.add("session_started", {}, 0);
  attempt(log, 0, "baseline", "ok", 8.0, 1, true);
  int64_t p = log.add("proposal", {{"attempt", 1}, {"candidate", "c1"}, {"strategy", "grid"}}, 2);
  int64_t intent = log.add("eval_started", {{"attempt", 1}}, 2, p);
  RunState s = fold(log.events);
  EXPECT_EQ(s.ledger[1].open_intent, intent);
  EXPECT_FALSE(s.ledger[1].evaluated());
  log.add("session_started", {}, 100);
  log.add("eval_interrupted", {{"attempt", 1}}, 100, intent);
  s = fold(log.events);
  EXPECT_EQ(s.ledger[1].open_intent, 0);
  EXPECT_EQ(s.sessions, 2);
  // The gap between the sessions is not the run's time: 2 s in the first, 0 in the second.
  EXPECT_DOUBLE_EQ(s.elapsed_s, 2.0);
}

TEST(Fold, PendingVerdictAndTargetAndDuplicates) {
  Log log;
  log.add("run_created", created(), 0);
  log.add("session_started", {{"budget", {{"max_evals", 20}, {"patience", 5}}}}, 0);
  attempt(log, 0, "baseline", "ok", 8.0, 1, true);
  int64_t p = log.add("proposal", {{"attempt", 1}, {"candidate", "c1"}, {"strategy", "llm"}}, 2);
  log.add("eval_finished", {{"attempt", 1}, {"candidate", "c1"}, {"outcome", "ok"}, {"metric", 1.0}}, 3, p);
  RunState s = fold(log.events);
  EXPECT_TRUE(s.ledger[1].verdict_pending);
  EXPECT_EQ(*s.budget.max_evals, 20);
  EXPECT_EQ(*s.budget.patience, 5);
  log.add("verdict", {{"attempt", 1}, {"crowned", true}, {"metric", 1.0}}, 3);
  p = log.add("proposal", {{"attempt", 2}, {"candidate", "c1"}, {"strategy", "llm"}}, 4);
  log.add("eval_finished", {{"attempt", 2}, {"outcome", "ok"}, {"metric", 1.0}, {"duplicate_of", 1}}, 4, p);
  s = fold(log.events);
  EXPECT_TRUE(s.target_reached());
  EXPECT_EQ(s.evaluations, 2) << "a duplicate is not an evaluation";
  EXPECT_FALSE(s.ledger[2].verdict_pending);
  EXPECT_EQ(s.ledger[2].duplicate_of, 1);
}

TEST(Fold, IsPureAndIncremental) {
  Log log;
  log.add("run_created", created(), 0);
  log.add("session_started", {}, 0);
  for (int i = 0; i < 20; ++i) attempt(log, i, i ? "random" : "baseline", "ok", 20.0 - i, i + 1, true);
  RunState whole = fold(log.events);
  RunState step;
  for (const auto& e : log.events) step.apply(e);
  EXPECT_EQ(whole.best, step.best);
  EXPECT_EQ(whole.evaluations, step.evaluations);
  EXPECT_EQ(whole.elapsed_s, step.elapsed_s);
  EXPECT_EQ(fold(log.events).best_metric, whole.best_metric);
}

}  // namespace
}  // namespace longhaul
