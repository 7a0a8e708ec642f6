#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <filesystem>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/report.h"
#include "llm/agent_config.h"
#include "run/run.h"
#include "util/duration.h"

namespace longhaul {
namespace fs = std::filesystem;
namespace {

// The progress line rewrites itself on a terminal and prints one line per attempt elsewhere.
class Progress {
 public:
  explicit Progress(bool quiet) : quiet_(quiet), tty_(::isatty(STDERR_FILENO)) {}
  ~Progress() { done(); }
  void update(const RunState& s, const Attempt& a) {
    if (quiet_) return;
    if (a.baseline() && a.metric && a.spread == 0) {
      done();
      std::fprintf(stderr,
                   "longhaul: note: the bench gave the baseline's %s no spread (or 0), so a gain of any size "
                   "is crowned on one measurement; a bench that prints \"spread\" has close calls re-measured "
                   "(docs/metrics-protocol.md)\n",
                   s.config["goal"].value("metric", std::string("metric")).c_str());
    }
    std::string what = fmt::format("#{} {} {}", a.index, a.strategy, a.outcome);
    if (a.metric) what += " " + format_metric(s, *a.metric);
    if (a.crowned) what += " *";
    std::string line = progress_line(s) + " | " + what;
    if (tty_) {
      std::fprintf(stderr, "\r\033[K%s", line.c_str());
      shown_ = true;
    } else {
      std::fprintf(stderr, "%s\n", line.c_str());
    }
    std::fflush(stderr);
  }
  void done() {
    if (shown_) std::fprintf(stderr, "\n");
    shown_ = false;
  }

 private:
  bool quiet_, tty_, shown_ = false;
};

std::optional<RunOptions> options_from(const RunArgs& args, const std::atomic<bool>& cancel) {
  RunOptions o;
  o.seed = args.seed;
  o.strategy = args.strategy;
  o.budget.max_evals = args.max_evals;
  o.budget.patience = args.patience;
  if (!args.wall_time.empty()) {
    auto d = parse_duration(args.wall_time);
    if (!d || *d <= 0) {
      std::fprintf(stderr, "longhaul: --wall-time '%s' is not a duration (e.g. 90s, 5m, 1h30m)\n",
                   args.wall_time.c_str());
      return std::nullopt;
    }
    o.budget.wall_time_s = *d;
  }
  if (args.max_evals && *args.max_evals < 1) {
    std::fprintf(stderr, "longhaul: --max-evals must be at least 1\n");
    return std::nullopt;
  }
  if (args.patience && *args.patience < 1) {
    std::fprintf(stderr, "longhaul: --patience must be at least 1\n");
    return std::nullopt;
  }
  o.force = args.force;
  o.cancel = &cancel;
  return o;
}

// The llm proposer's settings: the --llm-config file (or the defaults of docs/llm.md), then the --llm-*
// options over it. Prints what is wrong and returns nullopt on a usage error.
std::optional<llm::AgentConfig> agent_config_from(const RunArgs& args) {
  llm::AgentConfig config;
  if (!args.llm_config.empty()) {
    auto loaded = llm::load_agent_config(args.llm_config);
    if (!loaded) {
      std::fprintf(stderr, "longhaul: %s\n", loaded.error().c_str());
      return std::nullopt;
    }
    config = std::move(*loaded);
  } else if (!args.llm_model) {
    std::fprintf(stderr, "longhaul: --proposer llm needs --llm-config FILE.toml or --llm-model NAME (see docs/llm.md)\n");
    return std::nullopt;
  }
  if (args.llm_base_url) config.client.base_url = *args.llm_base_url;
  if (args.llm_model) config.client.model = *args.llm_model;
  if (args.llm_api_key_env) config.client.api_key_env = *args.llm_api_key_env;
  if (config.client.model.empty()) {
    std::fprintf(stderr, "longhaul: llm.model is required (in --llm-config, or --llm-model)\n");
    return std::nullopt;
  }
  if (!llm::env_name(config.client.api_key_env)) {
    std::fprintf(stderr, "longhaul: --llm-api-key-env takes the NAME of an environment variable (letters, digits, _), "
                         "not the key\n");
    return std::nullopt;
  }
  return config;
}

int finish(const RunEnd& end, const std::string& run_dir, bool json, Progress& progress) {
  progress.done();
  if (json) {
    auto j = status_json(end.state, run_dir, false);
    j["exit_code"] = end.exit_code;
    if (!end.message.empty()) j["message"] = end.message;
    std::printf("%s\n", j.dump(2).c_str());
  } else {
    if (!end.state.config.is_null()) std::printf("%s", status_text(end.state, run_dir, false).c_str());
    if (end.exit_code == 0 && end.state.best)
      std::printf("export    longhaul export %s --to DIR (or --patch FILE)\n", run_dir.c_str());
  }
  if (!end.message.empty()) std::fprintf(stderr, "longhaul: %s\n", end.message.c_str());
  return end.exit_code;
}

}  // namespace

bool run_in_use(const std::string& run_dir) {
  int fd = ::open((fs::path(run_dir) / "lock").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0;
  ::close(fd);
  return held;
}

int cmd_run(const RunArgs& args, const std::atomic<bool>& cancel) {
  auto loaded = load_task(args.task);
  if (auto* err = std::get_if<TaskError>(&loaded)) {
    std::fprintf(stderr, "longhaul: %s\n", err->str().c_str());
    return 2;
  }
  auto options = options_from(args, cancel);
  if (!options) return 2;
  const bool llm_options = !args.llm_config.empty() || args.llm_base_url || args.llm_model || args.llm_api_key_env;
  options->proposer = !args.proposer.empty() ? args.proposer : llm_options ? "llm" : "search";
  if (options->proposer == "llm") {
    auto config = agent_config_from(args);
    if (!config) return 2;
    options->proposer_config = llm::to_json(*config);
  } else if (llm_options) {
    std::fprintf(stderr, "longhaul: --llm-config and --llm-* are for --proposer llm\n");
    return 2;
  }
  const Task& task = std::get<Task>(loaded);
  std::string out = args.out;
  if (out.empty()) {
    char stamp[32];
    std::time_t now = std::time(nullptr);
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
    out = "runs/" + task.name + "-" + stamp;
  }
  Progress progress(args.quiet || args.json);
  options->on_attempt = [&](const RunState& s, const Attempt& a) { progress.update(s, a); };
  if (!args.quiet && !args.json)
    std::fprintf(stderr, "longhaul: running %s into %s (Ctrl-C stops; `longhaul resume %s` carries on)\n",
                 task.name.c_str(), out.c_str(), out.c_str());
  return finish(start_run(task, out, *options), out, args.json, progress);
}

int cmd_resume(const std::string& run_dir, const RunArgs& args, const std::atomic<bool>& cancel) {
  auto options = options_from(args, cancel);
  if (!options) return 2;
  Progress progress(args.quiet || args.json);
  options->on_attempt = [&](const RunState& s, const Attempt& a) { progress.update(s, a); };
  return finish(resume_run(run_dir, *options), run_dir, args.json, progress);
}

}  // namespace longhaul
