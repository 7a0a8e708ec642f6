// A run: the loop that asks the proposer for a candidate, evaluates it through the cascade and judges
// it against the best, logging an intent before every side effect and its result after, until a
// budget stops it. Resuming folds the log, replays it into a fresh proposer, finishes or re-runs what
// was in flight, and carries on exactly as the uninterrupted run would have.
// Uses: `longhaul run` and `longhaul resume`; crash-safety tests.
#pragma once
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "run/state.h"
#include "task/task.h"

namespace longhaul {

struct RunOptions {
  std::optional<uint64_t> seed;         // of the proposer; random (and logged) when not given
  std::string strategy = "bandit";
  std::string proposer = "search";     // "search" or "llm"; written into run_created
  nlohmann::json proposer_config;       // the llm proposer's settings (no secrets); into run_created
  Budget budget;                        // overrides of the task's budget
  bool force = false;                   // resume even though the task changed
  const std::atomic<bool>* cancel = nullptr;
  // Called after each attempt is evaluated and judged; for the progress line.
  std::function<void(const RunState&, const Attempt&)> on_attempt;
  // The clock events are stamped with and budgets are measured by; empty: the wall clock. Tests
  // simulate a day with it.
  std::function<double()> clock;
};

struct RunEnd {
  int exit_code = 0;                    // 0 done, 1 failed, 2 usage error, 130 interrupted
  std::string message;                  // what went wrong, when exit_code != 0
  RunState state;
};

RunEnd start_run(const Task& task, const std::filesystem::path& run_dir, const RunOptions& options);
RunEnd resume_run(const std::filesystem::path& run_dir, const RunOptions& options);

// The editable files of a run's baseline and the task it was made from, as recorded in the log.
std::filesystem::path run_db_path(const std::filesystem::path& run_dir);

}  // namespace longhaul
