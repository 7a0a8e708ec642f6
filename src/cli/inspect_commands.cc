// status, log and export: read-only views of a run's log.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <thread>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/report.h"
#include "eval/workspace.h"
#include "exec/process.h"
#include "run/run.h"
#include "store/event_store.h"
#include "util/fs.h"

namespace longhaul {
namespace fs = std::filesystem;
namespace {

std::unique_ptr<EventStore> open_run(const std::string& run_dir) {
  if (!fs::exists(run_db_path(run_dir))) {
    std::fprintf(stderr, "longhaul: %s holds no run (no run.db)\n", run_dir.c_str());
    return nullptr;
  }
  auto store = EventStore::open(run_db_path(run_dir), /*read_only=*/true);
  if (!store) {
    std::fprintf(stderr, "longhaul: %s\n", store.error().c_str());
    return nullptr;
  }
  return std::move(*store);
}

// The folded state of an opened run, or nullopt after saying why it could not be read.
std::optional<RunState> fold_run(const EventStore& store) {
  auto events = store.read();
  if (!events) {
    std::fprintf(stderr, "longhaul: %s\n", events.error().c_str());
    return std::nullopt;
  }
  return fold(*events);
}

std::string event_line(const Event& e) {
  std::time_t t = std::time_t(e.time);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%d %H:%M:%S", std::localtime(&t));
  std::string payload = e.payload.dump();
  if (payload.size() > 300) payload = payload.substr(0, 297) + "...";
  return fmt::format("{:>7} {} {:<18} {}{}", e.seq, stamp, e.type,
                     e.parent ? fmt::format("(re {}) ", e.parent) : "", payload);
}

}  // namespace

int cmd_status(const std::string& run_dir, bool json) {
  auto store = open_run(run_dir);
  if (!store) return 2;
  auto state = fold_run(*store);
  if (!state) return 1;
  const RunState& s = *state;
  bool running = run_in_use(run_dir);
  if (json) std::printf("%s\n", status_json(s, run_dir, running).dump(2).c_str());
  else std::printf("%s", status_text(s, run_dir, running).c_str());
  return 0;
}

int cmd_log(const std::string& run_dir, bool json, bool follow, const std::string& type,
            const std::atomic<bool>& cancel) {
  auto store = open_run(run_dir);
  if (!store) return 2;
  int64_t after = 0;
  while (true) {
    // Asked before reading, so that the events of a run that ends meanwhile are still printed.
    bool in_use = follow && run_in_use(run_dir);
    auto events = store->read(after);
    if (!events) {
      std::fprintf(stderr, "longhaul: %s\n", events.error().c_str());
      return 1;
    }
    for (const auto& e : *events) {
      after = e.seq;
      if (!type.empty() && e.type != type) continue;
      if (json) {
        nlohmann::json j = {{"seq", e.seq}, {"time", e.time}, {"type", e.type},
                            {"parent", e.parent}, {"payload", e.payload}};
        std::printf("%s\n", j.dump().c_str());
      } else {
        std::printf("%s\n", event_line(e).c_str());
      }
    }
    std::fflush(stdout);
    // --follow ends once no process carries the run on.
    if (!in_use || cancel.load()) return 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
}

int cmd_export(const std::string& run_dir, const std::string& to, const std::string& patch,
               std::optional<int> attempt_index) {
  if (to.empty() == patch.empty()) {
    std::fprintf(stderr, "longhaul: export needs exactly one of --to DIR or --patch FILE\n");
    return 2;
  }
  auto store = open_run(run_dir);
  if (!store) return 2;
  auto state = fold_run(*store);
  if (!state) return 1;
  const RunState& s = *state;
  int index;
  if (attempt_index) {
    if (*attempt_index < 0 || *attempt_index >= int(s.ledger.size())) {
      std::fprintf(stderr, "longhaul: --attempt %d: the run has attempts 0 to %zu\n", *attempt_index,
                   s.ledger.size() - 1);
      return 2;
    }
    index = *attempt_index;
  } else if (s.best) {
    index = *s.best;
  } else {
    std::fprintf(stderr, "longhaul: the run has no best candidate yet\n");
    return 1;
  }
  const Attempt& a = s.ledger[size_t(index)];
  // The parameter header is part of what the candidate is, so it is exported beside its files.
  Task task;
  auto loaded = load_task(s.config["task"].value("dir", ""));
  if (auto* t = std::get_if<Task>(&loaded)) task = *t;

  auto write_tree = [&](const fs::path& root, const std::map<std::string, std::string>& files,
                        const nlohmann::json& params) -> bool {
    for (const auto& [path, hash] : files) {
      auto content = store->get_blob(hash);
      if (!content || !write_file(root / path, *content)) {
        std::fprintf(stderr, "longhaul: cannot write %s\n", (root / path).c_str());
        return false;
      }
    }
    if (!task.space.header.empty() && !params.empty())
      if (!write_file(root / task.space.header, params_header(task, params))) return false;
    return true;
  };

  if (!to.empty()) {
    if (!write_tree(to, a.files, a.params)) return 1;
    if (!a.params.empty()) (void)write_file(fs::path(to) / "params.json", a.params.dump(2) + "\n");
    std::printf("exported attempt %d (%s) into %s\n", a.index,
                a.metric ? format_metric(s, *a.metric).c_str() : a.outcome.c_str(), to.c_str());
    return 0;
  }
  // A patch against the baseline: both trees side by side, compared by diff(1).
  fs::path tmp = fs::temp_directory_path() / fmt::format("longhaul-export-{}", ::getpid());
  std::error_code ec;
  fs::remove_all(tmp, ec);
  std::map<std::string, std::string> base;
  for (const auto& [path, hash] : s.config["base_files"].items()) base[path] = hash.get<std::string>();
  nlohmann::json base_params = s.ledger.empty() ? nlohmann::json::object() : s.ledger[0].params;
  if (!write_tree(tmp / "a", base, base_params) || !write_tree(tmp / "b", a.files, a.params)) return 1;
  ProcessSpec spec;
  spec.command = "diff -ruN a b";
  spec.cwd = tmp;
  spec.timeout_s = 60;
  spec.keep_bytes = 64 * 1024 * 1024;
  ProcessResult r = run_process(spec);
  fs::remove_all(tmp, ec);
  if (r.end != ProcessResult::End::exited || r.exit_code > 1) {
    std::fprintf(stderr, "longhaul: diff failed: %s\n", r.err.c_str());
    return 1;
  }
  // patch(1) skips leading prose, so the patch can say what it is.
  std::string text = fmt::format("longhaul export of {}: attempt {} ({}){}\n", run_dir, a.index,
                                 a.metric ? format_metric(s, *a.metric) : a.outcome,
                                 a.params.empty() ? "" : ", parameters " + format_params(a.params)) +
                     r.out;
  if (patch == "-") std::fwrite(text.data(), 1, text.size(), stdout);
  else if (!write_file(patch, text)) return 1;
  if (patch != "-")
    std::printf("wrote the patch of attempt %d against the baseline to %s (apply with patch -p1)\n",
                a.index, patch.c_str());
  return 0;
}

}  // namespace longhaul
