#include "llm/diff.h"

#include <gtest/gtest.h>

namespace longhaul::llm {
namespace {

TEST(LlmDiff, ChangedLinesAndUnifiedDiff) {
  std::string a = "one\ntwo\nthree\nfour\nfive\n", b = "one\n2\nthree\nfour\nfive\nsix\n";
  LineChange c = changed_lines(a, b);
  EXPECT_EQ(c.added, 2);
  EXPECT_EQ(c.removed, 1);
  EXPECT_EQ(changed_lines(a, a).total(), 0);
  EXPECT_EQ(unified_diff(a, a, "f"), "");
  std::string d = unified_diff(a, b, "f");
  EXPECT_EQ(d.rfind("--- a/f\n+++ b/f\n@@ -1,5 +1,6 @@\n", 0), 0u) << d;
  EXPECT_NE(d.find("-two\n+2\n"), std::string::npos) << d;
  EXPECT_NE(d.find("+six\n"), std::string::npos) << d;
  std::map<std::string, std::string> x = {{"a", a}}, y = {{"a", a}, {"new", "x\n"}};
  EXPECT_EQ(changed_lines(x, y).added, 1);
  EXPECT_NE(unified_diff(x, y).find("+++ b/new"), std::string::npos);
}

}  // namespace
}  // namespace longhaul::llm
