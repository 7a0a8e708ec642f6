#include "search/expr.h"

#include <gtest/gtest.h>

namespace longhaul {
namespace {

const std::vector<std::string> kNames = {"MC", "NR", "KC", "ORDER"};
const std::vector<bool> kInteger = {true, true, true, false};

std::shared_ptr<const Constraint> compile_ok(const std::string& text) {
  auto c = Constraint::compile(text, kNames, kInteger);
  EXPECT_TRUE(c.ok()) << text << ": " << (c.ok() ? "" : c.error());
  return c.ok() ? c.value() : nullptr;
}

std::string compile_error(const std::string& text) {
  auto c = Constraint::compile(text, kNames, kInteger);
  EXPECT_FALSE(c.ok()) << text;
  return c.ok() ? "" : c.error();
}

bool holds(const std::string& text, std::vector<int64_t> values) {
  auto c = compile_ok(text);
  return c && c->holds(values);
}

TEST(ConstraintTest, ArithmeticAndComparison) {
  EXPECT_TRUE(holds("MC % NR == 0", {64, 8, 0, 0}));
  EXPECT_FALSE(holds("MC % NR == 0", {64, 6, 0, 0}));
  EXPECT_TRUE(holds("MC % NR == 0 && KC * NR <= 4096", {64, 8, 512, 0}));
  EXPECT_FALSE(holds("MC % NR == 0 && KC * NR <= 4096", {64, 8, 513, 0}));
  EXPECT_TRUE(holds("1 + 2 * 3 == 7", {0, 0, 0, 0}));
  EXPECT_TRUE(holds("(1 + 2) * 3 == 9", {0, 0, 0, 0}));
  EXPECT_TRUE(holds("10 - 4 - 3 == 3", {0, 0, 0, 0}));   // left-associative
  EXPECT_TRUE(holds("100 / 10 / 5 == 2", {0, 0, 0, 0}));
  EXPECT_TRUE(holds("-7 / 2 == -3 && -7 % 2 == -1", {0, 0, 0, 0}));  // C semantics
  EXPECT_TRUE(holds("- -MC == MC", {5, 0, 0, 0}));
  EXPECT_TRUE(holds("MC < NR && NR <= 8 && KC > 1 && KC >= 2 && MC != KC", {1, 8, 2, 0}));
  EXPECT_TRUE(holds("1 < 2 == 1", {0, 0, 0, 0}));  // relational binds tighter than equality
}

TEST(ConstraintTest, LogicalOperators) {
  EXPECT_TRUE(holds("!(MC == 1)", {2, 0, 0, 0}));
  EXPECT_FALSE(holds("!MC", {2, 0, 0, 0}));
  EXPECT_TRUE(holds("MC == 1 || NR == 2 && KC == 3", {1, 0, 0, 0}));  // && binds tighter
  EXPECT_FALSE(holds("(MC == 1 || NR == 2) && KC == 3", {1, 0, 0, 0}));
  EXPECT_TRUE(holds("MC", {3, 0, 0, 0}));   // a bare integer is true when nonzero
  EXPECT_FALSE(holds("MC", {0, 0, 0, 0}));
}

TEST(ConstraintTest, DivisionByZeroIsFalse) {
  EXPECT_FALSE(holds("MC / NR == 0", {4, 0, 0, 0}));
  EXPECT_FALSE(holds("MC % NR == 0", {4, 0, 0, 0}));
  EXPECT_FALSE(holds("!(MC % NR == 0)", {4, 0, 0, 0}));  // undefined, not merely false
  // Short-circuit guards keep the undefined part unevaluated.
  EXPECT_TRUE(holds("NR == 0 || MC % NR == 0", {4, 0, 0, 0}));
  EXPECT_FALSE(holds("NR != 0 && MC % NR == 0", {4, 0, 0, 0}));
  EXPECT_TRUE(holds("NR != 0 && MC % NR == 0", {4, 2, 0, 0}));
}

TEST(ConstraintTest, OverflowIsFalse) {
  EXPECT_FALSE(holds("MC * MC > 0", {int64_t(1) << 40, 0, 0, 0}));
  EXPECT_FALSE(holds("MC + 1 > 0", {INT64_MAX, 0, 0, 0}));
  EXPECT_TRUE(holds("9223372036854775807 > 0", {0, 0, 0, 0}));
}

TEST(ConstraintTest, KeepsText) {
  auto c = compile_ok("MC % NR == 0");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->text(), "MC % NR == 0");
}

TEST(ConstraintTest, UnknownParameter) {
  EXPECT_EQ(compile_error("MC % MX == 0"), "column 6: unknown parameter 'MX'");
}

TEST(ConstraintTest, StringParameter) {
  EXPECT_EQ(compile_error("ORDER == 1"),
            "column 1: parameter ORDER has string values and cannot appear in a constraint");
}

TEST(ConstraintTest, MissingParenthesis) {
  EXPECT_EQ(compile_error("(MC + 1 == 2"), "column 13: expected ')'");
  EXPECT_EQ(compile_error("((MC) NR"), "column 7: expected ')'");
}

TEST(ConstraintTest, TrailingGarbage) {
  EXPECT_EQ(compile_error("MC == 1 NR"), "column 9: unexpected 'NR' after the end of the expression");
  EXPECT_EQ(compile_error("MC == 1)"), "column 8: unexpected ')' after the end of the expression");
}

TEST(ConstraintTest, EmptyExpression) {
  EXPECT_EQ(compile_error(""), "empty expression");
  EXPECT_EQ(compile_error("   "), "empty expression");
}

TEST(ConstraintTest, MissingOperand) {
  EXPECT_EQ(compile_error("MC +"), "column 5: expected a number, a parameter or '(' but the expression ended");
  EXPECT_EQ(compile_error("MC * * 2"), "column 6: expected a number, a parameter or '(' but found '*'");
  EXPECT_EQ(compile_error("()"), "column 2: expected a number, a parameter or '(' but found ')'");
}

TEST(ConstraintTest, BadTokens) {
  EXPECT_EQ(compile_error("MC = 1"), "column 4: '=' is not an operator; did you mean '=='?");
  EXPECT_EQ(compile_error("MC & 1"), "column 4: '&' is not an operator; did you mean '&&'?");
  EXPECT_EQ(compile_error("MC | 1"), "column 4: '|' is not an operator; did you mean '||'?");
  EXPECT_EQ(compile_error("MC # 1"), "column 4: unexpected character '#'");
  EXPECT_EQ(compile_error("12abc > 1"), "column 1: invalid number '12abc'");
  EXPECT_EQ(compile_error("MC > 99999999999999999999"), "column 6: integer 99999999999999999999 is too large");
}

TEST(ConstraintTest, DeepNestingIsAnErrorNotACrash) {
  std::string deep(100000, '(');
  EXPECT_NE(compile_error(deep + "1").find("nested too deeply"), std::string::npos);
  std::string ok = std::string(50, '(') + "1" + std::string(50, ')');
  EXPECT_TRUE(holds(ok, {0, 0, 0, 0}));
}

}  // namespace
}  // namespace longhaul
