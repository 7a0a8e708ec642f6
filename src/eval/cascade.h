// The evaluator cascade, cheapest first: rules -> build -> check -> bench -> profile, each step in the
// workspace under the task's limits. (Dedup by candidate hash happens before, in the run loop, which
// knows the history.) The result is typed, so the proposer and the ledger can tell a wrong answer from
// a hang. Uses: the run loop; re-measurement uses run_step() and bench_metric() directly.
#pragma once
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "eval/candidate.h"
#include "eval/metrics.h"
#include "exec/process.h"
#include "task/task.h"

namespace longhaul {

// The typed outcomes, as they appear in events and in the ledger.
namespace outcome {
inline constexpr const char* ok = "ok";
inline constexpr const char* rule_violation = "rule_violation";
inline constexpr const char* build_error = "build_error";
inline constexpr const char* incorrect = "incorrect";
inline constexpr const char* timeout = "timeout";
inline constexpr const char* crashed = "crashed";
inline constexpr const char* bad_output = "bad_output";
}  // namespace outcome

struct EvalResult {
  std::string outcome;                      // one of outcome::*, or "" when cancelled
  std::string failed_step;                  // the step that decided a failure, or ""
  std::string detail;                       // why, trimmed to what helps: first compiler errors etc.
  std::map<std::string, Metric> metrics;    // from bench (and profile, prefixed "profile.")
  std::optional<Metric> goal;               // the goal metric, when ok
  std::string profile;                      // the profile step's output tail, if the task has one
  bool cancelled() const { return outcome.empty(); }
};

struct CascadeContext {
  std::filesystem::path workspace;          // prepared by make_workspace
  uint64_t seed = 0;                        // handed to every step as LONGHAUL_SEED
  const std::atomic<bool>* cancel = nullptr;
  // Called after each step that ran, for logging its captured output.
  std::function<void(const Step&, const ProcessResult&)> on_step;
  // Inherited environment variables the steps must not see: a step runs code a model wrote, and its
  // output is logged, so a secret in its environment could end up in the run's files.
  std::vector<std::string> hidden_env;
};

EvalResult run_cascade(const Task& task, const Candidate& candidate, const CascadeContext& ctx);

ProcessResult run_step(const Task& task, const Step& step, const nlohmann::json& params,
                       const CascadeContext& ctx);

// The bench step's verdict: ok with the goal metric, or a typed failure.
EvalResult bench_result(const Task& task, const ProcessResult& bench);

// The first lines of a step's complaint (stderr, else stdout), at most `max_bytes`.
std::string trim_complaint(const ProcessResult& r, size_t max_bytes = 2000);

}  // namespace longhaul
