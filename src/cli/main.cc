// longhaul: keeps an optimization campaign going, restart-proof. See README.md and docs/.
#include <csignal>
#include <cstdio>

#include <CLI/CLI.hpp>

#include "cli/commands.h"
#include "search/proposer.h"

namespace {

std::atomic<bool> g_cancel{false};

void on_signal(int) { g_cancel.store(true); }

void install_signal_handlers() {
  struct sigaction sa = {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
}

void add_budget_options(CLI::App* cmd, longhaul::RunArgs& a) {
  cmd->add_option("--max-evals", a.max_evals, "stop after this many evaluations (baseline included)");
  cmd->add_option("--wall-time", a.wall_time, "stop after this much wall time, e.g. 90s, 5m, 2h");
  cmd->add_option("--patience", a.patience, "stop after this many evaluations without a gain");
  cmd->add_flag("--quiet,-q", a.quiet, "no progress line");
  cmd->add_flag("--json", a.json, "print the final status as JSON");
}

}  // namespace

int main(int argc, char** argv) {
  using namespace longhaul;
  CLI::App app{"longhaul: a restart-proof optimization campaign against one measurable goal"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "help for every subcommand");

  RunArgs run_args;
  auto* run = app.add_subcommand("run", "start a run of TASK (a folder with task.toml)");
  run->add_option("task", run_args.task, "task folder or task.toml")->required();
  run->add_option("--out,-o", run_args.out, "run folder to create (default runs/<task>-<time>)");
  run->add_option("--seed", run_args.seed, "seed of the proposer (default: random, logged)");
  run->add_option("--strategy", run_args.strategy, "search strategy")
      ->check(CLI::IsMember(search_strategies()));
  run->add_option("--proposer", run_args.proposer, "search (the default) or llm")
      ->check(CLI::IsMember({"search", "llm"}));
  run->add_option("--llm-config", run_args.llm_config,
                  "TOML file with the llm proposer's [llm] and [agent] settings (docs/llm.md)");
  run->add_option("--llm-base-url", run_args.llm_base_url,
                  "llm proposer: the server's OpenAI-compatible URL, e.g. http://localhost:8000/v1");
  run->add_option("--llm-model", run_args.llm_model, "llm proposer: the model's name as served");
  run->add_option("--llm-api-key-env", run_args.llm_api_key_env,
                  "llm proposer: the NAME of the environment variable holding the API key");
  add_budget_options(run, run_args);

  RunArgs resume_args;
  std::string run_dir;
  auto* resume = app.add_subcommand("resume", "carry on a stopped, interrupted or killed run");
  resume->add_option("run_dir", run_dir, "run folder")->required();
  resume->add_flag("--force", resume_args.force, "resume even though the task's files changed");
  add_budget_options(resume, resume_args);

  bool json = false, follow = false;
  auto* status = app.add_subcommand("status", "goal, baseline, best, counts by outcome, budget left");
  status->add_option("run_dir", run_dir, "run folder")->required();
  status->add_flag("--json", json, "machine-readable output");

  std::string type;
  auto* log = app.add_subcommand("log", "the run's events, oldest first");
  log->add_option("run_dir", run_dir, "run folder")->required();
  log->add_flag("--json", json, "one JSON object per line");
  log->add_flag("--follow,-f", follow, "keep printing new events while the run goes on");
  log->add_option("--type", type, "only events of this type, e.g. eval_finished");

  std::string to, patch;
  std::optional<int> attempt;
  auto* exp = app.add_subcommand("export", "write the best (or a chosen) candidate out");
  exp->add_option("run_dir", run_dir, "run folder")->required();
  exp->add_option("--to", to, "folder to write the candidate's files into");
  exp->add_option("--patch", patch, "file to write a patch against the baseline into ('-': stdout)");
  exp->add_option("--attempt", attempt, "export this attempt instead of the best");

  // CLI11 would only say that a subcommand is required; name the word it did not know.
  if (argc > 1 && argv[1][0] != '-') {
    std::string word = argv[1];
    if (word != "run" && word != "resume" && word != "status" && word != "log" && word != "export") {
      std::fprintf(stderr, "longhaul: unknown command '%s'; expected run, resume, status, log or export\n",
                   word.c_str());
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }
  install_signal_handlers();
  if (*run) return cmd_run(run_args, g_cancel);
  if (*resume) return cmd_resume(run_dir, resume_args, g_cancel);
  if (*status) return cmd_status(run_dir, json);
  if (*log) return cmd_log(run_dir, json, follow, type, g_cancel);
  if (*exp) return cmd_export(run_dir, to, patch, attempt);
  return 2;
}
