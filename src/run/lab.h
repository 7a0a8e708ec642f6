// The lab: what a proposer may do with a run. It reads the folded state, hands candidates in for
// evaluation (each one logged as a proposal, run through the cascade and judged against the best),
// logs events of its own, and asks whether a budget says stop.
// A proposer drives a run one step at a time: the search proposer evaluates one point per step, the
// LLM proposer takes one turn of its conversation. Uses: run.cc implements Lab; search_driver.cc and
// the LLM agent implement Proposer.
//
// Lab calls may throw to unwind a run that is being stopped (Ctrl-C, a log that cannot be written);
// a proposer must let such exceptions pass.
#pragma once
#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/candidate.h"
#include "run/state.h"
#include "task/task.h"
#include "util/result.h"

namespace longhaul {

class Lab {
 public:
  virtual ~Lab() = default;
  virtual const Task& task() const = 0;
  virtual const RunState& state() const = 0;
  virtual Candidate candidate_of(const Attempt& attempt) = 0;
  // The task's starting files (as logged when the run began) with these parameter values.
  virtual Candidate base_candidate(const nlohmann::json& params) = 0;
  // Logs the proposal (`extra` joins its payload: a hypothesis, the tool call it answers), evaluates
  // and judges it. Returns its attempt index; the result is in state().ledger.
  virtual int evaluate(const Candidate& candidate, const std::string& strategy,
                       const nlohmann::json& extra = nlohmann::json::object()) = 0;
  virtual int64_t log(const std::string& type, const nlohmann::json& payload, int64_t parent = 0) = 0;
  virtual std::string put_blob(std::string_view data) = 0;
  virtual std::string get_blob(const std::string& hash) = 0;
  // The clock events are stamped with (simulated in tests).
  virtual double now() const = 0;
  // The run's events after `after_seq`, oldest first: how a proposer folds a state of its own (the
  // LLM proposer's conversation) from the log.
  virtual std::vector<Event> read_events(int64_t after_seq) = 0;
  // Raised when the user stops the run; a proposer blocked on I/O (an HTTP request) should watch it.
  virtual const std::atomic<bool>* cancel_flag() const { return nullptr; }
};

class Proposer {
 public:
  virtual ~Proposer() = default;
  // Rebuilds the proposer's own state from the log, once, before the first step of a session. Every
  // attempt in the ledger is evaluated by then.
  virtual Status resume(Lab& lab) = 0;
  // One unit of work. Returns a reason to stop ("exhausted", or a budget of the proposer's own), or
  // nullopt to be called again.
  virtual std::optional<std::string> step(Lab& lab) = 0;
};

// The proposer the run's log names (run_created's "proposer": "search" or "llm").
Result<std::unique_ptr<Proposer>> make_proposer(const RunState& state, const Task& task);

// Higher-is-better score of an attempt for proposers; nullopt for a failed one.
std::optional<double> attempt_score(const RunState& state, const Attempt& attempt);

}  // namespace longhaul
