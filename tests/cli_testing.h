// Helpers for tests that drive the real `longhaul` binary: run it to completion, or start it and
// kill it, and read a run's log back through the store. Uses: crash, cascade and CLI tests.
#pragma once
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "exec/process.h"
#include "run/state.h"
#include "store/event_store.h"

namespace longhaul::testing {

inline std::filesystem::path fixture(const std::string& name) {
  return std::filesystem::path(LONGHAUL_SOURCE_DIR) / "tests" / "fixtures" / name;
}

// Temporary folders made by a test process, removed when it exits.
struct TempDirs {
  std::vector<std::filesystem::path> dirs;
  ~TempDirs() {
    std::error_code ec;
    for (const auto& d : dirs) std::filesystem::remove_all(d, ec);
  }
};
inline TempDirs temp_dirs;

inline std::filesystem::path fresh_dir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("longhaul-test-" + std::to_string(::getpid()) + "-" + name);
  std::filesystem::remove_all(dir);
  temp_dirs.dirs.push_back(dir);
  return dir;
}

// Runs `longhaul ARGS` to completion and returns its result (stdout, stderr, exit status).
inline ProcessResult longhaul(const std::string& args, double timeout_s = 300) {
  ProcessSpec spec;
  spec.command = std::string(LONGHAUL_BINARY) + " " + args;
  spec.cwd = std::filesystem::current_path();
  spec.timeout_s = timeout_s;
  return run_process(spec);
}

// Starts `longhaul ARGS` in the background with its output discarded; returns its pid.
inline pid_t spawn_longhaul(const std::vector<std::string>& args) {
  pid_t pid = fork();
  if (pid == 0) {
    std::vector<char*> argv;
    std::string bin = LONGHAUL_BINARY;
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    freopen("/dev/null", "w", stdout);
    freopen("/dev/null", "w", stderr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  return pid;
}

inline std::vector<Event> read_events(const std::filesystem::path& run_dir) {
  auto store = EventStore::open(run_dir / "run.db", /*read_only=*/true);
  if (!store) return {};
  auto events = (*store)->read();
  return events ? *events : std::vector<Event>{};
}

inline RunState read_state(const std::filesystem::path& run_dir) { return fold(read_events(run_dir)); }

}  // namespace longhaul::testing
