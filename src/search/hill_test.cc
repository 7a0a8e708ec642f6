#include <gtest/gtest.h>

#include <set>

#include "search/search_testing.h"

namespace longhaul {
namespace {

using namespace search_testing;

// Evaluations until the proposer first proposes `target` (the baseline not counted), or `cap`.
int evals_to_reach(SearchProposer& proposer, const Space& space, const Objective& f, const Point& target,
                   int cap) {
  proposer.observe(space.default_point(), f(space.default_point()));
  for (int i = 1; i <= cap; ++i) {
    auto p = proposer.next();
    if (!p) return cap;
    if (p->point == target) return i;
    proposer.observe(p->point, f(p->point));
  }
  return cap;
}

TEST(SearchHillTest, ClimbsAConvexObjectiveQuickly) {
  // 4 parameters of 20 values: 160000 points; the baseline is 52 steps (L1) from the peak.
  Space space = make_space({20, 20, 20, 20});
  Point peak{17, 3, 12, 19};
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    auto hill = make_proposer(space, seed, "hill");
    int n = evals_to_reach(*hill, space, bowl(peak), peak, 2000);
    // Each improving step costs at most the 8 neighbours of the current best.
    EXPECT_LE(n, 52 * 8) << "seed " << seed;
  }
}

TEST(SearchHillTest, ClimbsAroundConstraints) {
  // Only P0 values divisible by 3 are valid with P1 odd: the climb steps over the invalid ones.
  Space space = make_space({30, 30}, {"P1 % 2 == 0 || P0 % 3 == 0"});
  Point peak{27, 25};
  ASSERT_TRUE(space.valid(peak));
  auto hill = make_proposer(space, 7, "hill");
  EXPECT_LE(evals_to_reach(*hill, space, bowl(peak), peak, 5000), 400);
}

TEST(SearchHillTest, RestartsAfterALocalOptimum) {
  // Two peaks: a low one next to the baseline and a higher one far away. After exhausting the low
  // peak's neighbourhood hill restarts, and keeps proposing distinct points.
  Space space = make_space({10, 10});
  auto f = [](const Point& p) -> std::optional<double> {
    double a = -double((p[0] - 1) * (p[0] - 1) + (p[1] - 1) * (p[1] - 1));
    double b = 10.0 - double((p[0] - 8) * (p[0] - 8) + (p[1] - 8) * (p[1] - 8));
    return std::max(a, b);
  };
  auto hill = make_proposer(space, 3, "hill");
  auto proposals = drive(*hill, space, f, 99);
  std::set<Point> seen = {space.default_point()};
  bool reached = false;
  for (auto& p : proposals) {
    EXPECT_TRUE(seen.insert(p.point).second);
    reached = reached || p.point == Point{8, 8};
  }
  EXPECT_EQ(proposals.size(), 99u);
  EXPECT_TRUE(reached);
}

TEST(SearchHillTest, ContinuesTheMoveThatGained) {
  // A bowl whose peak lies along P0 from the baseline: once a step up P0 gains, the next step up P0
  // comes first, so the climb costs one evaluation a rung (plus one wrong guess at most at the start).
  Space space = make_space({20, 20, 20});
  Point peak{15, 0, 0};
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    auto hill = make_proposer(space, seed, "hill");
    EXPECT_LE(evals_to_reach(*hill, space, bowl(peak), peak, 1000), 15 + 2) << "seed " << seed;
  }
}

TEST(SearchHillTest, TriesFartherValuesOfOneParameterBeforeRestarting) {
  // Every one-step neighbour of the baseline is worse; the peak is five values along P0. Hill widens
  // to every value of each parameter (nearest first) instead of jumping to a random point of 10^4,
  // once the one-step neighbours of the runners-up are spent too.
  Space space = make_space({10, 10, 10, 10});
  Point peak{5, 0, 0, 0};
  auto f = [peak](const Point& p) -> std::optional<double> {
    if (p == peak) return 10.0;
    return -double(p[0] + p[1] + p[2] + p[3]);
  };
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    auto hill = make_proposer(space, seed, "hill");
    // Ring 1 of the best: 4 points; of the 3 runners-up (scored -1): 3 new each; ring 2 of the best
    // at distances 2, 3, 4: 4 points each; then distance 5.
    EXPECT_LE(evals_to_reach(*hill, space, f, peak, 1000), 4 + 3 * 3 + 3 * 4 + 4) << "seed " << seed;
  }
}

TEST(SearchHillTest, StepsAlongAConstraintByMovingTheParameterItTies) {
  // P0 may not exceed P1, and the score climbs along the diagonal only: raising P1 alone loses,
  // raising P0 alone is invalid. The step up P0 is repaired by raising P1 with it, and once that
  // gains, the same repaired step comes first at every rung.
  Space space = make_space({10, 10}, {"P0 <= P1"});
  auto f = [](const Point& p) -> std::optional<double> { return 10.0 * p[0] - 5.0 * (p[1] - p[0]); };
  Point peak{9, 9};
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    auto hill = make_proposer(space, seed, "hill");
    EXPECT_LE(evals_to_reach(*hill, space, f, peak, 1000), 9 + 3) << "seed " << seed;
  }
}

}  // namespace
}  // namespace longhaul
