// TPE: what the model adds over random draws. Determinism, no repeats, constraints and exhaustion are
// checked for every strategy in proposer_test.cc.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>

#include "search/search_testing.h"

namespace longhaul {
namespace {

using namespace search_testing;

// The best score a strategy has seen after `evals` proposals (the baseline included).
double best_after(const std::string& strategy, uint64_t seed, const Space& space, const Objective& f, int evals) {
  auto proposer = make_proposer(space, seed, strategy);
  double best = *f(space.default_point());
  for (const auto& p : drive(*proposer, space, f, evals)) best = std::max(best, f(p.point).value_or(best));
  return best;
}

TEST(SearchTpeTest, LearnsWhichValuesScoreWellFromFewEvaluations) {
  // 8 parameters of 8 values (16.7 million points), each contributing on its own: after 150
  // evaluations the model is within a few steps of the peak, where random draws stay far off.
  Space space = make_space({8, 8, 8, 8, 8, 8, 8, 8});
  auto f = bowl({6, 1, 5, 2, 7, 3, 0, 4});
  std::vector<double> tpe, random;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    tpe.push_back(best_after("tpe", seed, space, f, 150));
    random.push_back(best_after("random", seed, space, f, 150));
  }
  std::sort(tpe.begin(), tpe.end());
  std::sort(random.begin(), random.end());
  EXPECT_GE(tpe[2], -6.0);       // median: at most 6 unit steps (squared) from the peak
  EXPECT_GT(tpe[2], random[2] + 10.0);
}

TEST(SearchTpeTest, CandidatesFailingAreAvoided) {
  // Half the space fails (P0 of 5 or more, say a block too large for memory); the model learns it
  // from the failures and stops proposing there.
  Space space = make_space({10, 10, 10});
  auto f = [](const Point& p) -> std::optional<double> {
    if (p[0] >= 5) return std::nullopt;
    return -double(p[1] + p[2]);
  };
  auto proposer = make_proposer(space, 3, "tpe");
  auto proposals = drive(*proposer, space, f, 120);
  int late_failures = 0;
  for (size_t i = 60; i < proposals.size(); ++i) late_failures += proposals[i].point[0] >= 5;
  EXPECT_LT(late_failures, 20);  // random would fail about 30 of these 60
}

TEST(SearchTpeTest, ProposesWhereTheGoodPointsAreAndTheBadOnesAreNot) {
  // The 6 best points sit half at P0 = 5 and half at P0 = 15; the 34 bad ones all at P0 = 5. Drawn
  // from the good points alone, P0 would be near 5 about half the time; weighed against the bad
  // ones (the ratio l/g), the proposal goes near 15.
  Space space = make_space({20, 20, 20});
  int near15 = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    auto proposer = make_proposer(space, seed, "tpe");
    const std::vector<Point> good = {{5, 1, 5}, {5, 7, 9}, {5, 13, 14}, {15, 2, 3}, {15, 8, 11}, {15, 18, 17}};
    for (size_t i = 0; i < good.size(); ++i) proposer->observe(good[i], 100.0 - double(i));
    int bad = 0;
    for (int p2 = 0; p2 < 2; ++p2)
      for (int p1 = 0; p1 < 20 && bad < 34; ++p1, ++bad) proposer->observe({5, p1, p2}, -double(bad));
    auto next = proposer->next();
    ASSERT_TRUE(next);
    near15 += std::abs(next->point[0] - 15) <= 2;
  }
  EXPECT_GE(near15, 18);
}

}  // namespace
}  // namespace longhaul
