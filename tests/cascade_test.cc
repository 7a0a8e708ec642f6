// Each typed outcome of the cascade, produced by a small purpose-made candidate of the `cascade`
// fixture task: a good one, a build error, a wrong answer, a hang, a segfault, a memory hog, a rule
// violation, an edit outside the editable files, and garbage where metrics belong.
#include "eval/cascade.h"

#include <gtest/gtest.h>

#include "cli_testing.h"
#include "eval/workspace.h"
#include "util/fs.h"

namespace longhaul::testing {
namespace {

class Cascade : public ::testing::Test {
 protected:
  void SetUp() override {
    auto loaded = load_task(fixture("tasks/cascade"));
    ASSERT_TRUE(std::holds_alternative<Task>(loaded)) << std::get<TaskError>(loaded).str();
    task_ = std::get<Task>(loaded);
  }

  EvalResult evaluate(const std::string& main_body, const std::string& extra = "") {
    Candidate c;
    c.files["prog.c"] = "#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n" + extra +
                        "int main(int argc, char** argv) {\n"
                        "  int check = argc > 1 && strcmp(argv[1], \"check\") == 0;\n" +
                        main_body + "\n  return 0;\n}\n";
    return evaluate(c);
  }

  EvalResult evaluate(const Candidate& c) {
    auto ws = fresh_dir("cascade-ws-" + std::to_string(counter_++));
    EXPECT_TRUE(make_workspace(task_, c, ws).ok());
    CascadeContext ctx{ws, 7, nullptr, {}, {}};
    EvalResult r = run_cascade(task_, c, ctx);
    std::filesystem::remove_all(ws);
    return r;
  }

  Task task_;
  int counter_ = 0;
};

constexpr const char* kGoodBench =
    "  if (check) printf(\"42\\n\");\n"
    "  else printf(\"{\\\"metric\\\": \\\"time_ms\\\", \\\"value\\\": 2.5}\\n\");";

TEST_F(Cascade, GoodCandidateIsOkWithItsMetric) {
  EvalResult r = evaluate(kGoodBench);
  ASSERT_EQ(r.outcome, outcome::ok) << r.detail;
  ASSERT_TRUE(r.goal.has_value());
  EXPECT_DOUBLE_EQ(r.goal->value, 2.5);
}

TEST_F(Cascade, SyntaxErrorIsBuildError) {
  EvalResult r = evaluate("  this is not C;");
  EXPECT_EQ(r.outcome, outcome::build_error);
  EXPECT_EQ(r.failed_step, "build");
  EXPECT_NE(r.detail.find("error"), std::string::npos) << r.detail;
}

TEST_F(Cascade, WrongAnswerIsIncorrect) {
  EvalResult r = evaluate("  printf(\"41\\n\");");
  EXPECT_EQ(r.outcome, outcome::incorrect);
  EXPECT_EQ(r.failed_step, "check");
  EXPECT_NE(r.detail.find("expected 42, got '41'"), std::string::npos) << r.detail;
}

TEST_F(Cascade, HangIsTimeout) {
  EvalResult r = evaluate("  for (;;) {}");
  EXPECT_EQ(r.outcome, outcome::timeout);
  EXPECT_EQ(r.failed_step, "check");
}

TEST_F(Cascade, SegfaultIsCrashed) {
  EvalResult r = evaluate("  if (!check) { volatile int* p = 0; *p = 1; }\n" + std::string(kGoodBench));
  EXPECT_EQ(r.outcome, outcome::crashed) << r.detail;
  EXPECT_EQ(r.failed_step, "bench");
  EXPECT_NE(r.detail.find("signal 11"), std::string::npos) << r.detail;
}

TEST_F(Cascade, CrashUnderAHarnessScriptIsCrashedNotIncorrect) {
  // check.sh runs the candidate in a subshell and passes on its status, 128+11.
  EvalResult r = evaluate("  if (check) { volatile int* p = 0; *p = 1; }\n" + std::string(kGoodBench));
  EXPECT_EQ(r.outcome, outcome::crashed) << r.detail;
  EXPECT_EQ(r.failed_step, "check");
  EXPECT_NE(r.detail.find("signal 11"), std::string::npos) << r.detail;
}

TEST_F(Cascade, MemoryHogIsStoppedByTheLimit) {
  // 256 MiB is the task's limit: the hog's allocations fail and it aborts instead of eating the host.
  EvalResult r = evaluate(
      "  if (check) for (size_t i = 0; i < 64; ++i) {\n"
      "    char* p = malloc(64u << 20); if (!p) abort(); memset(p, 1, 64u << 20); }\n" +
      std::string(kGoodBench));
  EXPECT_EQ(r.outcome, outcome::crashed) << r.detail;
  EXPECT_EQ(r.failed_step, "check");
}

TEST_F(Cascade, ForbiddenPatternIsRuleViolation) {
  EvalResult r = evaluate("  system(\"echo 42\");");
  EXPECT_EQ(r.outcome, outcome::rule_violation);
  EXPECT_NE(r.detail.find("prog.c:"), std::string::npos) << r.detail;
  EXPECT_NE(r.detail.find("may not run shell commands"), std::string::npos) << r.detail;
}

TEST_F(Cascade, EditingTheHarnessIsRuleViolation) {
  Candidate c;
  c.files["prog.c"] = *read_file(task_.dir / "prog.c");
  c.files["check.sh"] = "exit 0\n";
  EvalResult r = evaluate(c);
  EXPECT_EQ(r.outcome, outcome::rule_violation);
  EXPECT_NE(r.detail.find("check.sh"), std::string::npos) << r.detail;
}

TEST_F(Cascade, GarbageOnStdoutIsBadOutput) {
  EvalResult r = evaluate("  if (check) printf(\"42\\n\"); else printf(\"{fast!!}\\n\");");
  EXPECT_EQ(r.outcome, outcome::bad_output);
  EXPECT_NE(r.detail.find("not a JSON object"), std::string::npos) << r.detail;
}

TEST_F(Cascade, MissingGoalMetricIsBadOutput) {
  EvalResult r = evaluate("  if (check) printf(\"42\\n\"); else printf(\"very fast\\n\");");
  EXPECT_EQ(r.outcome, outcome::bad_output);
  EXPECT_NE(r.detail.find("time_ms"), std::string::npos) << r.detail;
}

TEST_F(Cascade, CheckSeesTheSeedItIsHanded) {
  EvalResult r = evaluate(
      "  const char* s = getenv(\"LONGHAUL_SEED\");\n"
      "  if (check) printf(s && strcmp(s, \"7\") == 0 ? \"42\\n\" : \"no seed\\n\");\n"
      "  else printf(\"{\\\"metric\\\": \\\"time_ms\\\", \\\"value\\\": 1}\\n\");");
  EXPECT_EQ(r.outcome, outcome::ok) << r.detail;
}

}  // namespace
}  // namespace longhaul::testing
