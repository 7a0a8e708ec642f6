// The subcommands of `longhaul`, each a function from parsed options to an exit status:
// 0 success, 1 failure, 2 usage error (bad options, a malformed task), 130 interrupted.
// Uses: main.cc wires them to CLI11.
#pragma once
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

namespace longhaul {

struct RunArgs {
  std::string task;
  std::string out;                  // run folder; "" picks runs/<task>-<time>
  std::optional<uint64_t> seed;
  std::string strategy = "bandit";
  std::string proposer;             // "search" or "llm"; "" picks llm when any --llm-* is given
  std::string llm_config;           // a TOML file with [llm] and [agent] tables (docs/llm.md)
  // Over the file's [llm] settings, or in place of a file: the server, the model, the key's variable.
  std::optional<std::string> llm_base_url, llm_model, llm_api_key_env;
  std::optional<int> max_evals, patience;
  std::string wall_time;            // a duration, "" for the task's
  bool force = false;               // resume only
  bool quiet = false;
  bool json = false;
};

int cmd_run(const RunArgs& args, const std::atomic<bool>& cancel);
int cmd_resume(const std::string& run_dir, const RunArgs& args, const std::atomic<bool>& cancel);
int cmd_status(const std::string& run_dir, bool json);
int cmd_log(const std::string& run_dir, bool json, bool follow, const std::string& type,
            const std::atomic<bool>& cancel);
int cmd_export(const std::string& run_dir, const std::string& to, const std::string& patch,
               std::optional<int> attempt);

// Whether a longhaul process holds the run folder now.
bool run_in_use(const std::string& run_dir);

}  // namespace longhaul
