// The state of a run, derived from its events by a pure left fold: the ledger of attempts, the
// baseline and the best, counts by outcome, what is in flight, and the budget spent. Nothing here is
// stored anywhere else. Uses: the run loop keeps one up to date as it appends; status, export and
// tests fold a log from scratch. Event types and payloads: docs/event-log.md.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "store/event_store.h"
#include "task/task.h"

namespace longhaul {

struct Attempt {
  int index = 0;                              // position in the ledger; 0 is the baseline
  int64_t proposal_seq = 0;
  std::string candidate;                      // candidate hash
  nlohmann::json params = nlohmann::json::object();
  std::map<std::string, std::string> files;   // path -> blob hash
  std::string strategy;                       // "baseline", "hill", "llm", ...
  std::string hypothesis;                     // what the proposer said it was trying, if anything

  std::string outcome;                        // "" until evaluated
  std::string failed_step, detail;
  std::optional<double> metric;               // the goal metric of the first measurement
  double spread = 0;
  nlohmann::json metrics = nlohmann::json::object();
  std::string profile;                        // blob hash of the profile step's output; "" if none
  int duplicate_of = -1;                      // an earlier attempt with the same candidate
  int64_t open_intent = 0;                    // eval_started with no result yet
  bool verdict_pending = false;               // ok, but not yet judged against the best
  bool crowned = false;

  bool evaluated() const { return !outcome.empty(); }
  bool baseline() const { return strategy == "baseline"; }
};

struct RunState {
  nlohmann::json config;                      // the run_created payload
  std::string task_hash;                      // the latest session's
  Direction direction = Direction::minimize;
  Budget budget;                              // the latest session's, overrides applied
  std::vector<Attempt> ledger;
  std::map<std::string, int> by_candidate;    // candidate hash -> first attempt evaluating it
  std::map<std::string, int> outcomes;        // counts of evaluated attempts, duplicates excluded
  int evaluations = 0;                        // evaluated attempts, baseline included, duplicates not
  std::optional<int> best;                    // attempt index of the crowned best
  double best_metric = 0;
  std::optional<double> baseline_metric;
  int since_gain = 0;                         // evaluations since the last crowning
  int64_t open_remeasure = 0;                 // remeasure_ or confirm_started with no result yet
  std::string open_remeasure_kind;            // "remeasure" or "confirm"
  // The last confirmation of the best against the baseline, measured side by side at the end of a
  // session: which attempt, and its ratio over the baseline by the medians of both.
  int confirmed_attempt = -1;
  std::optional<double> confirmed_ratio;
  int sessions = 0;
  double elapsed_s = 0;                       // wall time spent in all sessions
  std::string stop_reason;                    // of the last stopped event; "" while running
  int64_t last_seq = 0;
  double last_time = 0;                       // of the last event

  // Folds one event in. Events must come in sequence order.
  void apply(const Event& e);

  // Improvement of `metric` over the baseline: baseline/metric when minimizing, metric/baseline when
  // maximizing. nullopt without a baseline.
  std::optional<double> ratio(double metric) const;
  bool better(double a, double b) const {
    return direction == Direction::minimize ? a < b : a > b;
  }
  bool target_reached() const;

 private:
  double closed_sessions_s_ = 0, session_start_ = 0;
};

RunState fold(const std::vector<Event>& events);

}  // namespace longhaul
