// The CLI end to end through the real binary: usage errors exit 2 with a message naming what is
// wrong; run, status, log and export work together; resume refuses a changed task; Ctrl-C leaves a
// resumable run; budgets stop the run for the reason they name; close calls are re-measured.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "cli_testing.h"
#include "util/fs.h"

namespace longhaul::testing {
namespace {
namespace fs = std::filesystem;

// A copy of a fixture task in a temporary folder, so a test may change it.
fs::path task_copy(const std::string& fixture_name, const std::string& name) {
  fs::path dir = fresh_dir("task-" + name);
  fs::copy(fixture("tasks/" + fixture_name), dir, fs::copy_options::recursive);
  return dir;
}

void replace_in(const fs::path& file, const std::string& from, const std::string& to) {
  std::string s = *read_file(file);
  size_t at = s.find(from);
  ASSERT_NE(at, std::string::npos) << from;
  s.replace(at, from.size(), to);
  ASSERT_TRUE(write_file(file, s).ok());
}

TEST(Cli, UsageErrorsExitTwoAndSayWhatIsWrong) {
  struct Case { std::string args, says; };
  fs::path bad_task = task_copy("quadratic", "bad");
  replace_in(bad_task / "task.toml", "direction = \"minimize\"", "direction = \"smaller\"");
  std::vector<Case> cases = {
      {"", "A subcommand is required"},
      {"frobnicate", "frobnicate"},
      {"run", "task is required"},
      {"run /nonexistent/task", "/nonexistent/task"},
      {"run " + bad_task.string(), "task.toml:"},
      {"run " + fixture("tasks/quadratic").string() + " --wall-time soon", "--wall-time 'soon'"},
      {"run " + fixture("tasks/quadratic").string() + " --max-evals 0", "--max-evals"},
      {"run " + fixture("tasks/quadratic").string() + " --strategy annealing", "annealing"},
      {"run " + fixture("tasks/quadratic").string() + " --seed many", "--seed"},
      {"status /nonexistent/run", "no run"},
      {"resume /nonexistent/run", "no run"},
      {"log /nonexistent/run", "no run"},
      {"export /nonexistent/run --to /tmp/x", "no run"},
  };
  for (const auto& c : cases) {
    ProcessResult r = longhaul(c.args, 60);
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.err;
    EXPECT_NE((r.err + r.out).find(c.says), std::string::npos) << c.args << " said:\n" << r.err;
  }
  for (const char* sub : {"run", "resume", "status", "log", "export"}) {
    ProcessResult r = longhaul(std::string(sub) + " --help", 60);
    EXPECT_EQ(r.exit_code, 0) << sub;
    EXPECT_NE(r.out.find("Usage"), std::string::npos) << sub;
  }
}

TEST(Cli, RunStatusLogExport) {
  fs::path run = fresh_dir("cli-run");
  ProcessResult r = longhaul("run " + fixture("tasks/quadratic").string() + " --out " + run.string() +
                             " --seed 3 --max-evals 25");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("[25 evals"), std::string::npos) << "progress line:\n" << r.err;
  EXPECT_NE(r.err.find("no spread"), std::string::npos) << "quadratic's bench prints no spread:\n" << r.err;
  EXPECT_NE(r.out.find("stopped: max_evals"), std::string::npos) << r.out;
  EXPECT_EQ(longhaul("run " + fixture("tasks/quadratic").string() + " --out " + run.string()).exit_code, 2)
      << "a second run into the same folder must be refused";

  r = longhaul("status " + run.string() + " --json");
  ASSERT_EQ(r.exit_code, 0);
  auto status = nlohmann::json::parse(r.out);
  EXPECT_EQ(status["evaluations"], 25);
  EXPECT_EQ(status["state"], "stopped");
  EXPECT_EQ(status["baseline"], 13 * 13 + 4 * 4 + 1);
  EXPECT_LT(status["best"]["metric"].get<double>(), 186);
  EXPECT_EQ(status["outcomes"]["ok"], 25);

  r = longhaul("log " + run.string() + " --json --type eval_finished");
  ASSERT_EQ(r.exit_code, 0);
  int lines = 0;
  for (size_t at = 0; (at = r.out.find('\n', at)) != std::string::npos; ++at) ++lines;
  EXPECT_EQ(lines, 25);
  EXPECT_EQ(nlohmann::json::parse(r.out.substr(0, r.out.find('\n')))["type"], "eval_finished");
  EXPECT_EQ(longhaul("log " + run.string() + " --follow").exit_code, 0) << "follow ends with the run";

  fs::path out = fresh_dir("cli-export");
  r = longhaul("export " + run.string() + " --to " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(fs::exists(out / "candidate.sh"));
  auto params = nlohmann::json::parse(*read_file(out / "params.json"));
  EXPECT_EQ(params, status["best"]["params"]);
  r = longhaul("export " + run.string() + " --patch " + (out / "best.patch").string() + " --attempt 0");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(read_file(out / "best.patch")->find("attempt 0"), std::string::npos);
  EXPECT_EQ(longhaul("export " + run.string()).exit_code, 2);
  EXPECT_EQ(longhaul("export " + run.string() + " --to x --attempt 999").exit_code, 2);
}

TEST(Cli, ResumeRefusesAChangedTaskUnlessForced) {
  fs::path task = task_copy("quadratic", "changed");
  fs::path run = fresh_dir("cli-changed");
  ASSERT_EQ(longhaul("run " + task.string() + " --out " + run.string() + " --max-evals 5 -q").exit_code, 0);
  replace_in(task / "candidate.sh", "+ 1 ))", "+ 2 ))");
  ProcessResult r = longhaul("resume " + run.string() + " --max-evals 8 -q");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--force"), std::string::npos) << r.err;
  r = longhaul("resume " + run.string() + " --max-evals 8 --force -q");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  RunState s = read_state(run);
  EXPECT_EQ(s.evaluations, 8);
  bool forced = false;
  for (const auto& e : read_events(run)) forced |= e.type == "session_started" && e.payload.value("forced", false);
  EXPECT_TRUE(forced);
}

TEST(Cli, ATaskFileOfAnotherNameIsResumedFromThatFile) {
  fs::path task = task_copy("quadratic", "renamed");
  fs::rename(task / "task.toml", task / "alt.toml");
  fs::path run = fresh_dir("cli-renamed");
  ASSERT_EQ(longhaul("run " + (task / "alt.toml").string() + " --out " + run.string() + " --max-evals 4 -q").exit_code, 0);
  EXPECT_EQ(longhaul("resume " + run.string() + " --max-evals 6 -q").exit_code, 0);
  EXPECT_EQ(read_state(run).evaluations, 6);
  replace_in(task / "alt.toml", "max_evals = 40", "max_evals = 41");
  ProcessResult r = longhaul("resume " + run.string() + " --max-evals 8 -q");
  EXPECT_EQ(r.exit_code, 2) << "a change to the task's own toml file must be noticed";
}

TEST(Cli, InterruptLeavesAResumableRun) {
  fs::path run = fresh_dir("cli-sigint");
  pid_t pid = spawn_longhaul({"run", fixture("tasks/slow-quadratic").string(), "--out", run.string(),
                              "--seed", "5"});
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130);
  RunState s = read_state(run);
  EXPECT_EQ(s.stop_reason, "interrupted");
  EXPECT_GT(s.evaluations, 0);
  ProcessResult r = longhaul("resume " + run.string() + " -q");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(read_state(run).evaluations, 60);
}

TEST(Cli, BudgetsStopForTheirReasons) {
  struct Case { std::string extra, reason; };
  fs::path tiny = task_copy("quadratic", "tiny");
  replace_in(tiny / "task.toml", "range = [0, 19]", "range = [0, 2]");
  replace_in(tiny / "task.toml", "range = [0, 19]", "range = [0, 2]");
  fs::path target = task_copy("quadratic", "target");
  replace_in(target / "task.toml", "direction = \"minimize\"", "direction = \"minimize\"\ntarget = 5");
  std::vector<std::pair<std::string, std::string>> cases = {
      {fixture("tasks/quadratic").string() + " --max-evals 7", "max_evals"},
      {fixture("tasks/quadratic").string() + " --max-evals 400 --patience 1", "patience"},
      {fixture("tasks/slow-quadratic").string() + " --max-evals 400 --wall-time 1s", "wall_time"},
      {target.string() + " --max-evals 400", "target"},
      {tiny.string() + " --max-evals 400", "exhausted"},
  };
  int i = 0;
  for (const auto& [args, reason] : cases) {
    fs::path run = fresh_dir("cli-budget-" + std::to_string(i++));
    ProcessResult r = longhaul("run " + args + " --out " + run.string() + " --seed 2 -q");
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
    RunState s = read_state(run);
    EXPECT_EQ(s.stop_reason, reason) << args;
    if (reason == "max_evals") {
      EXPECT_EQ(s.evaluations, 7);
    } else if (reason == "exhausted") {
      EXPECT_EQ(s.evaluations, 9) << "a 3x3 space has 9 points";
    } else if (reason == "target") {
      EXPECT_LE(s.best_metric, 5);
    }
  }
}

TEST(Cli, BrokenBaselineFailsTheRunClearly) {
  fs::path task = task_copy("quadratic", "broken");
  replace_in(task / "candidate.sh", "build) exit 0", "build) echo 'syntax error here' >&2; exit 1");
  fs::path run = fresh_dir("cli-broken");
  ProcessResult r = longhaul("run " + task.string() + " --out " + run.string() + " -q");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("baseline"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("syntax error here"), std::string::npos) << r.err;
}

TEST(Cli, CloseCallsAreRemeasuredInterleavedWithTheIncumbent) {
  // Every candidate is better than the baseline by less than the spread it reports.
  fs::path task = task_copy("quadratic", "noisy");
  replace_in(task / "candidate.sh", "echo \"{\\\"metric\\\": \\\"cost\\\", \\\"value\\\": $(( (x-13)*(x-13) + (y-4)*(y-4) + 1 ))}\"",
             "echo \"{\\\"metric\\\": \\\"cost\\\", \\\"value\\\": $(( 100000 - x - y )), \\\"spread\\\": 100000}\"");
  fs::path run = fresh_dir("cli-noisy");
  ProcessResult r = longhaul("run " + task.string() + " --out " + run.string() + " --max-evals 6");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err.find("no spread"), std::string::npos) << "this bench prints its spread:\n" << r.err;
  auto events = read_events(run);
  int remeasures = 0;
  for (size_t i = 0; i < events.size(); ++i) {
    if (events[i].type != "remeasure_started") continue;
    ++remeasures;
    int cand = events[i].payload["attempt"], inc = events[i].payload["incumbent"];
    std::vector<int> bench_order;
    for (size_t j = i + 1; j < events.size() && events[j].type != "remeasure_finished"; ++j)
      if (events[j].type == "step_finished" && events[j].payload["step"] == "bench")
        bench_order.push_back(events[j].payload["attempt"]);
    EXPECT_EQ(bench_order, (std::vector<int>{cand, inc, cand, inc, cand, inc}));
  }
  EXPECT_GT(remeasures, 0);
}

}  // namespace
}  // namespace longhaul::testing
