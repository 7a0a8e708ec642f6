#include "search/space.h"

#include <gtest/gtest.h>

namespace longhaul {
namespace {

Param param(std::string name, std::vector<nlohmann::json> values, size_t default_index = 0) {
  return Param{std::move(name), std::move(values), default_index};
}

ParamSpace gemm_space() {
  ParamSpace ps;
  ps.params = {param("MC", {32, 64, 128}, 1), param("MR", {4, 6, 8}), param("ORDER", {"ijk", "ikj"}, 1)};
  ps.constraints = {"MC % MR == 0"};
  return ps;
}

TEST(SpaceTest, Validity) {
  auto s = Space::compile(gemm_space());
  ASSERT_TRUE(s.ok()) << s.error();
  EXPECT_EQ(s->dims(), 3u);
  EXPECT_EQ(s->size(1), 3);
  EXPECT_TRUE(s->valid({0, 0, 0}));    // 32 % 4
  EXPECT_FALSE(s->valid({0, 1, 0}));   // 32 % 6
  EXPECT_TRUE(s->valid({2, 2, 1}));    // 128 % 8
  EXPECT_FALSE(s->valid({0, 0}));      // wrong arity
  EXPECT_FALSE(s->valid({0, 3, 0}));   // out of range
  EXPECT_FALSE(s->valid({-1, 0, 0}));
}

TEST(SpaceTest, DefaultPointAndCardinality) {
  auto s = Space::compile(gemm_space());
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->default_point(), (Point{1, 0, 1}));
  EXPECT_EQ(s->cardinality(), 18u);

  ParamSpace huge;
  for (int i = 0; i < 20; ++i) {
    std::vector<nlohmann::json> values;
    for (int v = 0; v < 1000; ++v) values.push_back(v);
    huge.params.push_back(param("P" + std::to_string(i), values));
  }
  auto h = Space::compile(huge);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->cardinality(), UINT64_MAX);

  auto empty = Space::compile(ParamSpace{});
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(empty->cardinality(), 1u);
  EXPECT_TRUE(empty->valid({}));
}

TEST(SpaceTest, JsonRoundTrip) {
  auto s = Space::compile(gemm_space());
  ASSERT_TRUE(s.ok());
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 3; ++b)
      for (int c = 0; c < 2; ++c) {
        Point p{a, b, c};
        auto j = s->to_json(p);
        auto back = s->from_json(j);
        ASSERT_TRUE(back) << j.dump();
        EXPECT_EQ(*back, p);
      }
  EXPECT_EQ(s->to_json({2, 1, 0}), (nlohmann::json{{"MC", 128}, {"MR", 6}, {"ORDER", "ijk"}}));
  // Round trip through text, as the event log stores it.
  auto parsed = nlohmann::json::parse(s->to_json({1, 2, 1}).dump());
  EXPECT_EQ(s->from_json(parsed), (Point{1, 2, 1}));
}

TEST(SpaceTest, FromJsonRejectsForeignValues) {
  auto s = Space::compile(gemm_space());
  ASSERT_TRUE(s.ok());
  EXPECT_FALSE(s->from_json(nlohmann::json{{"MC", 48}, {"MR", 4}, {"ORDER", "ijk"}}));      // not a value
  EXPECT_FALSE(s->from_json(nlohmann::json{{"MC", "64"}, {"MR", 4}, {"ORDER", "ijk"}}));    // wrong type
  EXPECT_FALSE(s->from_json(nlohmann::json{{"MC", 64}, {"MR", 4}}));                        // missing
  EXPECT_FALSE(s->from_json(nlohmann::json{{"MC", 64}, {"MR", 4}, {"ORDER", "ijk"}, {"X", 1}}));
  EXPECT_FALSE(s->from_json(nlohmann::json::array({1, 2, 3})));
}

TEST(SpaceTest, CompileErrorsNameTheConstraint) {
  auto ps = gemm_space();
  ps.constraints = {"MC % MX == 0"};
  auto s = Space::compile(ps);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error(), "constraint 'MC % MX == 0': column 6: unknown parameter 'MX'");

  ps.constraints = {"ORDER == 0"};
  s = Space::compile(ps);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().find("parameter ORDER has string values and cannot appear in a constraint"),
            std::string::npos);
}

TEST(SpaceTest, CompileChecksParameters) {
  ParamSpace ps;
  ps.params = {param("A", {})};
  EXPECT_FALSE(Space::compile(ps).ok());
  ps.params = {param("A", {1, 2}, 2)};
  EXPECT_FALSE(Space::compile(ps).ok());
  ps.params = {param("A", {1, 1})};
  EXPECT_FALSE(Space::compile(ps).ok());
  ps.params = {param("A", {1}), param("A", {2})};
  EXPECT_FALSE(Space::compile(ps).ok());
  ps.params = {param("A", {1.5})};
  EXPECT_FALSE(Space::compile(ps).ok());
}

}  // namespace
}  // namespace longhaul
