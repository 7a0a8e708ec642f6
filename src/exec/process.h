// Runs one shell command as an untrusted child: its own process group, a wall-clock timeout that kills
// the whole group, address-space and CPU-time limits, no inherited descriptors, and stdout/stderr
// captured with only their tails kept. Uses: every step of the evaluator cascade.
#pragma once
#include <atomic>
#include <cstddef>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace longhaul {

struct ProcessSpec {
  std::string command;                       // run as /bin/sh -c command
  std::filesystem::path cwd;
  std::map<std::string, std::string> env;    // added to (and overriding) the inherited environment
  std::vector<std::string> env_remove;       // inherited variables the child must not see (secrets)
  double timeout_s = 60;
  size_t memory_bytes = 0;                   // RLIMIT_AS; 0 = no limit
  double cpu_seconds = 0;                    // RLIMIT_CPU; 0 = no limit
  size_t keep_bytes = 256 * 1024;            // tail of each stream that is kept
};

struct ProcessResult {
  enum class End { exited, signaled, timed_out, cancelled, failed_to_start };
  End end = End::failed_to_start;
  int exit_code = -1;      // when exited
  int signal = 0;          // when signaled
  double wall_s = 0;
  std::string out;         // last keep_bytes of stdout
  std::string err;         // last keep_bytes of stderr
  bool out_truncated = false;
  bool err_truncated = false;
  std::string error;       // why it failed to start
};

// Blocks until the command ends, times out, or `cancel` becomes true (then the group is killed and
// End::cancelled returned). The group is always killed on return, so no grandchild outlives a step.
ProcessResult run_process(const ProcessSpec& spec, const std::atomic<bool>* cancel = nullptr);

const char* to_string(ProcessResult::End end);

}  // namespace longhaul
