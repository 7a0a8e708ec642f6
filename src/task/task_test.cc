#include "task/task.h"

#include <unistd.h>

#include <algorithm>
#include <regex>
#include <set>

#include <gtest/gtest.h>

#include "util/fs.h"

#ifndef LONGHAUL_SOURCE_DIR
#define LONGHAUL_SOURCE_DIR "."
#endif

namespace longhaul {
namespace fs = std::filesystem;
namespace {

// A fresh temporary task folder with stub files; removed at the end of the test.
class TaskDir {
 public:
  TaskDir() {
    static int counter = 0;
    dir_ = fs::temp_directory_path() /
           ("lh_task_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    write("gemm.cc", "void gemm() {}\n");
    write("harness.cc", "int main() {}\n");
    write("include/gemm.h", "#pragma once\n");
  }
  ~TaskDir() { fs::remove_all(dir_); }
  void write(const std::string& rel, const std::string& content) const {
    ASSERT_TRUE(write_file(dir_ / rel, content).ok());
  }
  std::variant<Task, TaskError> load(const std::string& toml) const {
    write("task.toml", toml);
    return load_task(dir_);
  }
  const fs::path& path() const { return dir_; }

 private:
  fs::path dir_;
};

// The smallest valid task; the mistakes below edit it, so its line numbers matter:
constexpr const char* kBase =
    "name = \"t\"\n"                    // 1
    "[goal]\n"                          // 2
    "metric = \"time_ms\"\n"            // 3
    "direction = \"minimize\"\n"        // 4
    "[files]\n"                         // 5
    "editable = [\"gemm.cc\"]\n"        // 6
    "harness = [\"harness.cc\"]\n"      // 7
    "[steps.build]\n"                   // 8
    "command = \"make\"\n"              // 9
    "[steps.check]\n"                   // 10
    "command = \"./check\"\n"           // 11
    "[steps.bench]\n"                   // 12
    "command = \"./bench\"\n";          // 13

// kBase with the one occurrence of `from` replaced by `to`.
std::string edit(const std::string& from, const std::string& to) {
  std::string s = kBase;
  size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  EXPECT_EQ(s.find(from, at + 1), std::string::npos) << from;
  if (at != std::string::npos) s.replace(at, from.size(), to);
  return s;
}

const char* kParams =
    "[[search.param]]\n"   // 14
    "name = \"MC\"\n"      // 15
    "values = [16, 32]\n"  // 16
    "[[search.param]]\n"   // 17
    "name = \"MR\"\n"      // 18
    "values = [4, 8]\n";   // 19

TaskError must_fail(const std::string& toml) {
  TaskDir d;
  auto r = d.load(toml);
  if (std::holds_alternative<Task>(r)) {
    ADD_FAILURE() << "loaded, but a mistake was expected";
    return {};
  }
  return std::get<TaskError>(r);
}

Task must_load(const std::string& toml) {
  TaskDir d;
  auto r = d.load(toml);
  if (auto* e = std::get_if<TaskError>(&r)) {
    ADD_FAILURE() << e->str();
    return {};
  }
  return std::get<Task>(std::move(r));
}

#define EXPECT_TASK_ERROR(toml, LINE, KEY, FRAGMENT)                                 \
  do {                                                                               \
    TaskError e_ = must_fail(toml);                                                  \
    EXPECT_EQ(e_.line, LINE) << e_.str();                                            \
    EXPECT_EQ(e_.key, KEY) << e_.str();                                              \
    EXPECT_NE(e_.message.find(FRAGMENT), std::string::npos) << e_.str();             \
  } while (0)

TEST(TaskLoad, FullExampleFixture) {
  fs::path dir = fs::path(LONGHAUL_SOURCE_DIR) / "tests/fixtures/tasks/valid";
  auto r = load_task(dir);
  ASSERT_TRUE(std::holds_alternative<Task>(r)) << std::get<TaskError>(r).str();
  const Task& t = std::get<Task>(r);
  EXPECT_TRUE(t.dir.is_absolute());
  EXPECT_EQ(t.dir, fs::weakly_canonical(fs::absolute(dir)));
  EXPECT_EQ(t.name, "gemm-cpu");
  EXPECT_EQ(t.description, "C = A * B for 512x512 float matrices, one thread");

  EXPECT_EQ(t.goal.metric, "time_ms");
  EXPECT_EQ(t.goal.direction, Direction::minimize);
  EXPECT_EQ(t.goal.unit, "ms");
  EXPECT_FALSE(t.goal.target_value);
  ASSERT_TRUE(t.goal.target_ratio);
  EXPECT_DOUBLE_EQ(*t.goal.target_ratio, 4.0);

  EXPECT_EQ(t.editable, (std::vector<std::string>{"gemm.cc"}));
  EXPECT_EQ(t.harness, (std::vector<std::string>{"harness.cc", "include/*.h"}));
  ASSERT_EQ(t.forbidden.size(), 2u);
  EXPECT_EQ(t.forbidden[0].pattern, "cblas_\\w+");
  EXPECT_EQ(t.forbidden[0].reason, "no external BLAS");
  EXPECT_EQ(t.forbidden[1].pattern, "\\basm\\b");

  ASSERT_EQ(t.steps.size(), 4u);
  EXPECT_EQ(t.steps[0].name, "build");
  EXPECT_EQ(t.steps[1].name, "check");
  EXPECT_EQ(t.steps[2].name, "bench");
  EXPECT_EQ(t.steps[3].name, "profile");
  EXPECT_EQ(t.steps[0].command, "g++ -O3 -march=native -Iinclude gemm.cc harness.cc -o gemm");
  EXPECT_DOUBLE_EQ(t.steps[0].timeout_s, 60);
  EXPECT_DOUBLE_EQ(t.steps[1].timeout_s, 30);
  EXPECT_DOUBLE_EQ(t.steps[2].timeout_s, 120);
  EXPECT_DOUBLE_EQ(t.steps[3].timeout_s, 300);
  EXPECT_EQ(t.steps[2].env, (std::map<std::string, std::string>{{"OMP_NUM_THREADS", "1"}}));
  EXPECT_TRUE(t.steps[0].env.empty());
  ASSERT_NE(t.step("bench"), nullptr);
  EXPECT_EQ(t.step("bench")->command, "./gemm --bench");

  EXPECT_DOUBLE_EQ(t.limits.memory_mb, 2048);
  EXPECT_DOUBLE_EQ(t.limits.cpu_seconds, 300);
  EXPECT_DOUBLE_EQ(t.limits.output_kb, 128);
  EXPECT_EQ(t.budget.max_evals, 150);
  EXPECT_EQ(t.budget.wall_time_s, 5400.0);
  EXPECT_EQ(t.budget.patience, 60);

  const ParamSpace& s = t.space;
  EXPECT_EQ(s.header, "params.h");
  EXPECT_TRUE(s.env);
  EXPECT_EQ(s.constraints, (std::vector<std::string>{"MC % MR == 0", "NC % NR == 0"}));
  ASSERT_EQ(s.params.size(), 5u);
  EXPECT_EQ(s.params[0].name, "MC");
  EXPECT_EQ(s.params[0].values, (std::vector<nlohmann::json>{16, 32, 64, 128}));
  EXPECT_EQ(s.params[0].default_index, 2u);
  EXPECT_EQ(s.params[1].name, "MR");
  EXPECT_EQ(s.params[1].default_index, 0u);
  EXPECT_EQ(s.params[2].name, "NC");
  EXPECT_EQ(s.params[2].values,
            (std::vector<nlohmann::json>{64, 128, 192, 256, 320, 384, 448, 512}));
  EXPECT_EQ(s.params[2].default_index, 3u);
  EXPECT_EQ(s.params[3].name, "NR");
  EXPECT_EQ(s.params[3].values, (std::vector<nlohmann::json>{4, 5, 6, 7, 8}));
  EXPECT_EQ(s.params[4].name, "LOOP");
  EXPECT_EQ(s.params[4].values, (std::vector<nlohmann::json>{"ijk", "ikj"}));
  EXPECT_EQ(s.params[4].default_index, 1u);

  // The file itself loads the same task.
  auto by_file = load_task(dir / "task.toml");
  ASSERT_TRUE(std::holds_alternative<Task>(by_file));
  EXPECT_EQ(std::get<Task>(by_file).dir, t.dir);
}

TEST(TaskLoad, MinimalDefaults) {
  Task t = must_load(kBase);
  EXPECT_EQ(t.name, "t");
  EXPECT_EQ(t.description, "");
  EXPECT_EQ(t.goal.unit, "");
  EXPECT_FALSE(t.goal.target_value);
  EXPECT_FALSE(t.goal.target_ratio);
  ASSERT_EQ(t.steps.size(), 3u);
  EXPECT_EQ(t.step("profile"), nullptr);
  for (const Step& s : t.steps) EXPECT_DOUBLE_EQ(s.timeout_s, 60);
  EXPECT_DOUBLE_EQ(t.limits.memory_mb, 4096);
  EXPECT_DOUBLE_EQ(t.limits.cpu_seconds, 600);
  EXPECT_DOUBLE_EQ(t.limits.output_kb, 256);
  EXPECT_FALSE(t.budget.max_evals);
  EXPECT_FALSE(t.budget.wall_time_s);
  EXPECT_FALSE(t.budget.patience);
  EXPECT_TRUE(t.space.empty());
  EXPECT_TRUE(t.space.env);
  EXPECT_EQ(t.space.header, "");
  EXPECT_TRUE(t.forbidden.empty());
}

TEST(TaskLoad, Durations) {
  auto timeout = [](const std::string& value) {
    Task t = must_load(edit("command = \"make\"\n", "command = \"make\"\ntimeout = " + value + "\n"));
    return t.steps.empty() ? -1.0 : t.steps[0].timeout_s;
  };
  EXPECT_DOUBLE_EQ(timeout("\"500ms\""), 0.5);
  EXPECT_DOUBLE_EQ(timeout("\"30s\""), 30);
  EXPECT_DOUBLE_EQ(timeout("\"5m\""), 300);
  EXPECT_DOUBLE_EQ(timeout("\"1h\""), 3600);
  EXPECT_DOUBLE_EQ(timeout("\"1h30m\""), 5400);
  EXPECT_DOUBLE_EQ(timeout("\"1.5s\""), 1.5);
  EXPECT_DOUBLE_EQ(timeout("90"), 90);
  EXPECT_DOUBLE_EQ(timeout("0.25"), 0.25);
}

TEST(TaskLoad, TargetAndMaximize) {
  Task t = must_load(edit("direction = \"minimize\"\n",
                          "direction = \"maximize\"\ntarget = 120\nunit = \"GFLOP/s\"\n"));
  EXPECT_EQ(t.goal.direction, Direction::maximize);
  EXPECT_EQ(t.goal.target_value, 120.0);
  EXPECT_EQ(t.goal.unit, "GFLOP/s");
}

TEST(TaskLoad, RangeWithStepAndStringDefault) {
  Task t = must_load(std::string(kBase) +
                     "[[search.param]]\nname = \"K\"\nrange = [1, 10]\nstep = 3\ndefault = 7\n"
                     "[[search.param]]\nname = \"ORDER\"\nvalues = [\"ijk\", \"ikj\"]\n");
  ASSERT_EQ(t.space.params.size(), 2u);
  EXPECT_EQ(t.space.params[0].values, (std::vector<nlohmann::json>{1, 4, 7, 10}));
  EXPECT_EQ(t.space.params[0].default_index, 2u);
  EXPECT_EQ(t.space.params[1].default_index, 0u);
}

TEST(TaskError, Str) {
  EXPECT_EQ((TaskError{"t/task.toml", 12, "steps.build.timeout", "must be > 0"}).str(),
            "t/task.toml:12: steps.build.timeout: must be > 0");
  EXPECT_EQ((TaskError{"t/task.toml", 0, "name", "missing required key"}).str(),
            "t/task.toml: name: missing required key");
  EXPECT_EQ((TaskError{"t/task.toml", 3, "", "bad"}).str(), "t/task.toml:3: bad");
}

// The mistakes: each names its line, its key and what is wrong.

TEST(TaskMistake, TomlSyntax) {
  TaskError e = must_fail(edit("metric = \"time_ms\"\n", "metric = \n"));
  EXPECT_EQ(e.line, 3);
  EXPECT_EQ(e.key, "");
  EXPECT_NE(e.message.find("expected"), std::string::npos) << e.str();
}

TEST(TaskMistake, DuplicateKeyIsSyntax) {
  EXPECT_TASK_ERROR(edit("metric = \"time_ms\"\n", "metric = \"a\"\nmetric = \"b\"\n"), 4, "",
                    "redefine");
}

TEST(TaskMistake, MissingTaskToml) {
  TaskDir d;
  auto r = load_task(d.path());
  ASSERT_TRUE(std::holds_alternative<TaskError>(r));
  const TaskError& e = std::get<TaskError>(r);
  EXPECT_EQ(e.file, (d.path() / "task.toml").string());
  EXPECT_EQ(e.line, 0);
  EXPECT_EQ(e.key, "");
  EXPECT_NE(e.message.find("no task.toml"), std::string::npos) << e.str();
  auto missing = load_task(d.path() / "nope.toml");
  ASSERT_TRUE(std::holds_alternative<TaskError>(missing));
  EXPECT_NE(std::get<TaskError>(missing).message.find("no such"), std::string::npos);
}

TEST(TaskMistake, FileIsPathAsGiven) {
  TaskDir d;
  d.write("task.toml", edit("name = \"t\"\n", "name = 3\n"));
  auto r = load_task(d.path() / "task.toml");
  ASSERT_TRUE(std::holds_alternative<TaskError>(r));
  EXPECT_EQ(std::get<TaskError>(r).str(),
            (d.path() / "task.toml").string() + ":1: name: expected a string, got an integer");
}

TEST(TaskMistake, MissingName) {
  EXPECT_TASK_ERROR(edit("name = \"t\"\n", "description = \"no name\"\n"), 0, "name",
                    "missing required key");
}

TEST(TaskMistake, BadName) {
  EXPECT_TASK_ERROR(edit("name = \"t\"", "name = \"gemm cpu\""), 1, "name",
                    "only letters, digits, '-' and '_'");
}

TEST(TaskMistake, UnknownTopLevelKey) {
  EXPECT_TASK_ERROR(edit("name = \"t\"\n", "name = \"t\"\nbugdet = 3\n"), 2, "bugdet",
                    "unknown key 'bugdet'; expected one of name, description, goal");
}

TEST(TaskMistake, MissingGoalTable) {
  EXPECT_TASK_ERROR(edit("[goal]\nmetric = \"time_ms\"\ndirection = \"minimize\"\n", ""), 0, "goal",
                    "missing required key");
}

TEST(TaskMistake, MissingMetric) {
  EXPECT_TASK_ERROR(edit("metric = \"time_ms\"\n", "unit = \"ms\"\n"), 2, "goal.metric",
                    "missing required key");
}

TEST(TaskMistake, BadDirection) {
  EXPECT_TASK_ERROR(edit("\"minimize\"", "\"minimise\""), 4, "goal.direction",
                    "expected \"minimize\" or \"maximize\"");
}

TEST(TaskMistake, BothTargetAndRatio) {
  EXPECT_TASK_ERROR(edit("direction = \"minimize\"\n",
                         "direction = \"minimize\"\ntarget = 0.5\ntarget_ratio = 4.0\n"),
                    6, "goal.target_ratio", "not both");
}

TEST(TaskMistake, RatioNotAboveOne) {
  EXPECT_TASK_ERROR(edit("direction = \"minimize\"\n", "direction = \"minimize\"\ntarget_ratio = 0.5\n"),
                    5, "goal.target_ratio", "must be > 1");
}

TEST(TaskMistake, TargetWrongType) {
  EXPECT_TASK_ERROR(edit("direction = \"minimize\"\n", "direction = \"minimize\"\ntarget = \"fast\"\n"),
                    5, "goal.target", "expected a number, got a string");
}

TEST(TaskMistake, EditableMatchesNothing) {
  EXPECT_TASK_ERROR(edit("[\"gemm.cc\"]", "[\"gemm.cc\", \"gemm.cu\"]"), 6, "files.editable[1]",
                    "'gemm.cu' matches no file");
}

TEST(TaskMistake, EditableEmpty) {
  EXPECT_TASK_ERROR(edit("[\"gemm.cc\"]", "[]"), 6, "files.editable", "at least one file");
}

TEST(TaskMistake, HarnessMatchesNothing) {
  EXPECT_TASK_ERROR(edit("[\"harness.cc\"]", "[\"harnes.cc\"]"), 7, "files.harness[0]",
                    "matches no file");
}

TEST(TaskMistake, EditableHarnessOverlap) {
  EXPECT_TASK_ERROR(edit("[\"harness.cc\"]", "[\"*.cc\"]"), 7, "files.harness[0]",
                    "'gemm.cc' is both editable (by 'gemm.cc') and harness (by '*.cc')");
}

TEST(TaskMistake, TaskTomlEditable) {
  EXPECT_TASK_ERROR(edit("[\"gemm.cc\"]", "[\"gemm.cc\", \"*.toml\"]"), 6, "files.editable[1]",
                    "task.toml may not be editable");
}

TEST(TaskMistake, InvalidRegex) {
  EXPECT_TASK_ERROR(std::string(kBase) +
                        "[[rules.forbidden]]\n"        // 14
                        "pattern = \"cblas_\\\\w+\"\n"  // 15
                        "reason = \"no BLAS\"\n"        // 16
                        "[[rules.forbidden]]\n"        // 17
                        "pattern = \"cblas_(\"\n"       // 18
                        "reason = \"no BLAS\"\n",
                    18, "rules.forbidden[1].pattern", "invalid regex 'cblas_('");
}

TEST(TaskMistake, ForbiddenWithoutReason) {
  EXPECT_TASK_ERROR(std::string(kBase) + "[[rules.forbidden]]\npattern = \"x\"\n", 14,
                    "rules.forbidden[0].reason", "missing required key");
}

TEST(TaskMistake, MissingBenchStep) {
  EXPECT_TASK_ERROR(edit("[steps.bench]\ncommand = \"./bench\"\n", ""), 8, "steps.bench",
                    "missing required step");
}

TEST(TaskMistake, UnknownStepName) {
  EXPECT_TASK_ERROR(edit("[steps.bench]", "[steps.benchmark]"), 12, "steps.benchmark",
                    "unknown step 'benchmark'; expected one of build, check, bench, profile");
}

TEST(TaskMistake, UnknownKeyTypo) {
  EXPECT_TASK_ERROR(edit("command = \"make\"", "comand = \"make\""), 9, "steps.build.comand",
                    "unknown key 'comand'; expected one of command, timeout, env");
}

TEST(TaskMistake, CommandWrongType) {
  EXPECT_TASK_ERROR(edit("command = \"./check\"", "command = [\"./check\"]"), 11,
                    "steps.check.command", "expected a string, got an array");
}

TEST(TaskMistake, EmptyCommand) {
  EXPECT_TASK_ERROR(edit("command = \"./check\"", "command = \"  \""), 11, "steps.check.command",
                    "must not be empty");
}

TEST(TaskMistake, BadDurationString) {
  EXPECT_TASK_ERROR(edit("command = \"make\"\n", "command = \"make\"\ntimeout = \"5min\"\n"), 10,
                    "steps.build.timeout", "bad duration '5min'");
}

TEST(TaskMistake, NegativeTimeout) {
  EXPECT_TASK_ERROR(edit("command = \"make\"\n", "command = \"make\"\ntimeout = -5\n"), 10,
                    "steps.build.timeout", "must be > 0");
}

TEST(TaskMistake, EnvValueNotString) {
  EXPECT_TASK_ERROR(edit("command = \"./bench\"\n", "command = \"./bench\"\nenv = { N = 1 }\n"), 14,
                    "steps.bench.env.N", "expected a string, got an integer");
}

TEST(TaskMistake, LimitNotPositive) {
  EXPECT_TASK_ERROR(std::string(kBase) + "[limits]\nmemory_mb = 0\n", 15, "limits.memory_mb",
                    "must be > 0");
}

TEST(TaskMistake, BudgetNotInteger) {
  EXPECT_TASK_ERROR(std::string(kBase) + "[budget]\nmax_evals = 1.5\n", 15, "budget.max_evals",
                    "expected an integer, got a floating-point number");
}

TEST(TaskMistake, BudgetZeroPatience) {
  EXPECT_TASK_ERROR(std::string(kBase) + "[budget]\npatience = 0\n", 15, "budget.patience",
                    "must be >= 1");
}

TEST(TaskMistake, ParamBothValuesAndRange) {
  EXPECT_TASK_ERROR(std::string(kBase) +
                        "[[search.param]]\nname = \"MC\"\nvalues = [1, 2]\nrange = [1, 8]\n",
                    17, "search.param[0].range", "set values or range, not both");
}

TEST(TaskMistake, ParamNeitherValuesNorRange) {
  EXPECT_TASK_ERROR(std::string(kBase) + "[[search.param]]\nname = \"MC\"\n", 14, "search.param[0]",
                    "needs values");
}

TEST(TaskMistake, ParamMixedValueTypes) {
  EXPECT_TASK_ERROR(std::string(kBase) + "[[search.param]]\nname = \"MC\"\nvalues = [16,\n\"32\"]\n",
                    17, "search.param[0].values[1]", "mix integers and strings");
}

TEST(TaskMistake, ParamFloatValues) {
  EXPECT_TASK_ERROR(std::string(kBase) + "[[search.param]]\nname = \"MC\"\nvalues = [1.5, 2.5]\n", 16,
                    "search.param[0].values[0]", "expected an integer or a string");
}

TEST(TaskMistake, ParamDuplicateValue) {
  EXPECT_TASK_ERROR(std::string(kBase) + "[[search.param]]\nname = \"MC\"\nvalues = [16, 32, 16]\n",
                    16, "search.param[0].values[2]", "duplicate value 16");
}

TEST(TaskMistake, DefaultNotInValues) {
  EXPECT_TASK_ERROR(std::string(kBase) +
                        "[[search.param]]\nname = \"MC\"\nvalues = [16, 32]\ndefault = 64\n",
                    17, "search.param[0].default", "default 64 is not one of the values");
}

TEST(TaskMistake, DefaultOffRangeStep) {
  EXPECT_TASK_ERROR(std::string(kBase) +
                        "[[search.param]]\nname = \"K\"\nrange = [0, 8]\nstep = 4\ndefault = 3\n",
                    18, "search.param[0].default", "not one of the values");
}

TEST(TaskMistake, DuplicateParamName) {
  EXPECT_TASK_ERROR(std::string(kBase) + kParams + "[[search.param]]\nname = \"MC\"\nvalues = [1]\n",
                    21, "search.param[2].name", "duplicate parameter name 'MC'");
}

TEST(TaskMistake, ParamNameNotIdentifier) {
  EXPECT_TASK_ERROR(std::string(kBase) + "[[search.param]]\nname = \"2D\"\nvalues = [1]\n", 15,
                    "search.param[0].name", "not a C identifier");
}

TEST(TaskMistake, RangeBackwards) {
  EXPECT_TASK_ERROR(std::string(kBase) + "[[search.param]]\nname = \"K\"\nrange = [8, 1]\n", 16,
                    "search.param[0].range", "lo 8 > hi 1");
}

TEST(TaskMistake, RangeTooLarge) {
  EXPECT_TASK_ERROR(std::string(kBase) + "[[search.param]]\nname = \"K\"\nrange = [0, 100000]\n", 16,
                    "search.param[0].range", "more than 100000 values");
  // Exactly the limit is fine; so is a step that brings a wide range under it.
  must_load(std::string(kBase) + "[[search.param]]\nname = \"K\"\nrange = [1, 100000]\n");
  must_load(std::string(kBase) +
            "[[search.param]]\nname = \"K\"\nrange = [-9223372036854775808, 9223372036854775807]\n"
            "step = 4611686018427387904\n");
}

TEST(TaskMistake, ParamSingleBracket) {
  EXPECT_TASK_ERROR(std::string(kBase) + "[search.param]\nname = \"K\"\nvalues = [1]\n", 14,
                    "search.param", "expected an array of tables (write [[search.param]])");
}

TEST(TaskMistake, HugeDurationNumber) {
  EXPECT_TASK_ERROR(edit("command = \"make\"\n",
                         "command = \"make\"\ntimeout = \"1" + std::string(400, '0') + "s\"\n"),
                    10, "steps.build.timeout", "bad duration");
}

TEST(TaskMistake, StepWithoutRange) {
  EXPECT_TASK_ERROR(std::string(kBase) + "[[search.param]]\nname = \"K\"\nvalues = [1]\nstep = 2\n",
                    17, "search.param[0].step", "only to a range");
}

TEST(TaskMistake, HeaderEscapesWorkspace) {
  EXPECT_TASK_ERROR(std::string(kBase) + "[search]\nheader = \"../params.h\"\n", 15, "search.header",
                    "must not contain '..'");
  EXPECT_TASK_ERROR(std::string(kBase) + "[search]\nheader = \"/tmp/params.h\"\n", 15,
                    "search.header", "relative");
}

TEST(TaskMistake, HeaderIsHarness) {
  EXPECT_TASK_ERROR(edit("[\"harness.cc\"]", "[\"harness.cc\", \"include/*.h\"]") +
                        "[search]\nheader = \"include/gemm.h\"\n",
                    15, "search.header", "harness file");
}

TEST(TaskMistake, SearchEnvNotBoolean) {
  EXPECT_TASK_ERROR(std::string(kBase) + "[search]\nenv = \"yes\"\n", 15, "search.env",
                    "expected a boolean, got a string");
}

TEST(TaskMistake, UnknownParamKey) {
  EXPECT_TASK_ERROR(std::string(kBase) + "[[search.param]]\nname = \"K\"\nvalue = [1]\n", 16,
                    "search.param[0].value",
                    "unknown key 'value'; expected one of name, values, range, step, default");
}

TEST(TaskMistake, InvalidConstraint) {
  std::string toml = std::string(kBase) + kParams +
                     "[search]\n"                                   // 20
                     "constraints = [\"MC % MR == 0\",\n"           // 21
                     "  \"MC % NR == 0\"]\n";                       // 22
  TaskError e = must_fail(toml);
  EXPECT_EQ(e.line, 22) << e.str();
  EXPECT_EQ(e.key, "search.constraints[1]") << e.str();
  EXPECT_NE(e.message.find("NR"), std::string::npos) << e.str();
}

TEST(TaskMistake, ConstraintSyntax) {
  TaskError e = must_fail(std::string(kBase) + kParams + "[search]\nconstraints = [\"MC %% MR\"]\n");
  EXPECT_EQ(e.line, 21) << e.str();
  EXPECT_EQ(e.key, "search.constraints[0]") << e.str();
  EXPECT_FALSE(e.message.empty());
}

TEST(TaskMistake, DefaultsViolateConstraint) {
  EXPECT_TASK_ERROR(std::string(kBase) + kParams + "[search]\nconstraints = [\"MC < MR\"]\n", 21,
                    "search.constraints[0]", "the default values (MC=16, MR=4) violate 'MC < MR'");
}

TEST(TaskLoad, ConstraintsAccepted) {
  Task t = must_load(std::string(kBase) + kParams + "[search]\nconstraints = [\"MC % MR == 0\"]\n");
  EXPECT_EQ(t.space.constraints, (std::vector<std::string>{"MC % MR == 0"}));
}

TEST(TaskHash, CoversTaskFileAndNamedFilesOnly) {
  TaskDir d;
  auto r = d.load(kBase);
  ASSERT_TRUE(std::holds_alternative<Task>(r));
  const Task& t = std::get<Task>(r);
  std::string h0 = task_hash(t);
  EXPECT_EQ(h0.size(), 64u);
  EXPECT_EQ(task_hash(t), h0);

  d.write("notes.txt", "not part of the task");
  EXPECT_EQ(task_hash(t), h0);

  d.write("gemm.cc", "void gemm() { /* changed */ }\n");
  std::string h1 = task_hash(t);
  EXPECT_NE(h1, h0);

  d.write("harness.cc", "int main() { return 1; }\n");
  std::string h2 = task_hash(t);
  EXPECT_NE(h2, h1);

  d.write("task.toml", std::string(kBase) + "# a comment\n");
  EXPECT_NE(task_hash(t), h2);
}

TEST(TaskHash, FramingIsUnambiguous) {
  // Moving bytes between a file's name and its content, or between two files, changes the hash.
  TaskDir a, b;
  a.write("x.cc", "ab");
  b.write("x.c", "cab");
  auto ta = a.load(edit("[\"gemm.cc\"]", "[\"x.c*\"]"));
  auto tb = b.load(edit("[\"gemm.cc\"]", "[\"x.c*\"]"));
  ASSERT_TRUE(std::holds_alternative<Task>(ta));
  ASSERT_TRUE(std::holds_alternative<Task>(tb));
  EXPECT_NE(task_hash(std::get<Task>(ta)), task_hash(std::get<Task>(tb)));
}

}  // namespace
}  // namespace longhaul

namespace longhaul {
namespace {

// The tasks shipped in tasks/ load, and tasks/kda's linked kernel sources are the files it names.
TEST(ShippedTasks, LoadAndNameTheirFiles) {
  for (const char* name : {"gemm-cpu", "kda", "mla"}) {
    auto r = load_task(fs::path(LONGHAUL_SOURCE_DIR) / "tasks" / name);
    ASSERT_TRUE(std::holds_alternative<Task>(r)) << name << ": " << std::get<TaskError>(r).str();
    EXPECT_EQ(std::get<Task>(r).name, name);
  }
  const Task kda = std::get<Task>(load_task(fs::path(LONGHAUL_SOURCE_DIR) / "tasks/kda"));
  EXPECT_EQ(kda.editable, (std::vector<std::string>{"kda/fused.cu"}));
  auto files = list_files(kda.dir);
  ASSERT_TRUE(files.ok());
  for (const char* f : {"kda/fused.cu", "kda/gpu_check.cu", "kda/bench.cu", "kda/build_gpu.sh", "kda/kda.h"})
    EXPECT_NE(std::find(files->begin(), files->end(), f), files->end()) << f;
  EXPECT_EQ(*read_file(kda.dir / "kda/fused.cu"),
            *read_file(fs::path(LONGHAUL_SOURCE_DIR) / "kernels/kda/fused.cu"));
}

TEST(ShippedTasks, GpuTasksLinkEveryKernelFileTheirSourcesInclude) {
  // A GPU task's workspace holds only its own files (links into kernels/), and its build runs there
  // with KERNELS_DIR=.: every quoted include of every source must be a file of the task, and every
  // file of kernels/<task> and kernels/common must be linked, or the build fails only on the GPU.
  // Except a probe that compiles the editable kernel into itself (kda/scan_step_probe.cu): it reads
  // that kernel's internals, so in a workspace any candidate that renamed one would fail to build;
  // build_gpu.sh builds it only where it is present, i.e. from the repository.
  const std::regex include_re(R"re(#\s*include\s*"([^"]+)")re");
  for (const char* name : {"kda", "mla"}) {
    const fs::path dir = fs::path(LONGHAUL_SOURCE_DIR) / "tasks" / name;
    auto files = list_files(dir);
    ASSERT_TRUE(files.ok()) << name;
    const std::set<std::string> listed(files->begin(), files->end());
    const Task task = std::get<Task>(load_task(dir));
    auto includes_editable = [&](const fs::path& path) {
      auto text = read_file(path);
      if (!text.ok()) return false;
      for (std::sregex_iterator it(text->begin(), text->end(), include_re), end; it != end; ++it)
        if (std::find(task.editable.begin(), task.editable.end(), (*it)[1].str()) != task.editable.end()) return true;
      return false;
    };
    for (const std::string& folder : {std::string(name), std::string("common")})
      for (const auto& e : fs::directory_iterator(fs::path(LONGHAUL_SOURCE_DIR) / "kernels" / folder)) {
        const std::string ext = e.path().extension().string();
        const std::string rel = folder + "/" + e.path().filename().string();
        const bool source = ext == ".cu" || ext == ".cuh" || ext == ".h" || ext == ".cc" || ext == ".sh";
        const bool ci_only = rel.ends_with("_test.cc") || rel.ends_with("_testing.h");
        const bool repository_only = source && !listed.count(rel) && includes_editable(e.path());
        EXPECT_TRUE(!source || ci_only || repository_only || listed.count(rel)) << name << " does not link " << rel;
      }
    for (const std::string& rel : listed) {
      auto text = read_file(dir / rel);
      ASSERT_TRUE(text.ok()) << rel;
      for (std::sregex_iterator it(text->begin(), text->end(), include_re), end; it != end; ++it) {
        const std::string inc = (*it)[1];
        if (inc == std::string(name) + "_params.h") continue;  // written by the search, optional
        EXPECT_TRUE(listed.count(inc)) << name << ": " << rel << " includes " << inc << ", not a file of the task";
      }
    }
  }
}

}  // namespace
}  // namespace longhaul
