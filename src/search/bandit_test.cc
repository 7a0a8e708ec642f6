#include "search/bandit.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "search/rng.h"
#include "search/search_testing.h"

namespace longhaul {
namespace {

using namespace search_testing;

TEST(BanditTest, TriesEveryTechniqueFirst) {
  AucBandit b(4);
  for (size_t arm = 0; arm < 4; ++arm) {
    EXPECT_EQ(b.choose(), arm);
    b.start(arm);  // in flight counts as tried
  }
  EXPECT_EQ(b.uses(2), 1u);
}

TEST(BanditTest, CreditWeighsRecentUsesMore) {
  AucBandit b(2);
  b.record(0, true);
  b.record(0, false);
  b.record(0, false);
  b.record(1, false);
  b.record(1, false);
  b.record(1, true);
  EXPECT_DOUBLE_EQ(b.credit(0), 1.0 / 6.0);
  EXPECT_DOUBLE_EQ(b.credit(1), 3.0 / 6.0);
  EXPECT_EQ(b.choose(), 1u);
}

TEST(BanditTest, WindowForgetsOldUses) {
  AucBandit b(2, /*window=*/4);
  b.record(0, true);
  for (int i = 0; i < 4; ++i) b.record(1, false);
  EXPECT_EQ(b.uses(0), 0u);        // slid out of the window
  EXPECT_EQ(b.total_uses(0), 1u);
  EXPECT_EQ(b.choose(), 0u);        // so it counts as untried again
}

TEST(BanditTest, GivesMoreUsesToATechniqueThatKeepsFindingGains) {
  // Technique 2 finds a gain 30% of the time, the others 2%.
  AucBandit b(4);
  Rng rng(11);
  for (int i = 0; i < 2000; ++i) {
    size_t arm = b.choose();
    b.start(arm);
    b.finish(arm, rng.uniform01() < (arm == 2 ? 0.30 : 0.02));
  }
  for (size_t arm : {0u, 1u, 3u}) EXPECT_GT(b.total_uses(2), 4 * b.total_uses(arm)) << arm;
  // And every technique is still tried now and then.
  for (size_t arm : {0u, 1u, 3u}) EXPECT_GE(b.total_uses(arm), 20u) << arm;
}

TEST(BanditTest, ClimbsABowlWithItsArmsAlone) {
  // On a smooth bowl the model and the climb keep finding gains: the peak (L1 distance 51 from the
  // baseline) is reached well within 150 evaluations, both arms take part, and neither runs out of
  // proposals (which would show as the proposer's fallback, "random").
  Space space = make_space({20, 20, 20, 20});
  Point peak{17, 3, 12, 19};
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    std::map<std::string, int> uses;
    auto bandit = make_proposer(space, seed, "bandit");
    bool reached = false;
    for (auto& p : drive(*bandit, space, bowl(peak), 150)) {
      ++uses[p.strategy];
      reached = reached || p.point == peak;
    }
    EXPECT_TRUE(reached) << "seed " << seed;
    EXPECT_GT(uses["hill"], 20) << "seed " << seed;
    EXPECT_GT(uses["tpe"], 20) << "seed " << seed;
    std::set<std::string> labels;
    for (const auto& [label, n] : uses) labels.insert(label);
    EXPECT_EQ(labels, (std::set<std::string>{"hill", "tpe"})) << "seed " << seed;
  }
}

// Evaluations (baseline not counted) until a proposal scores at least `good`, or `cap`.
int evals_to(SearchProposer& proposer, const Space& space, const Objective& f, double good, int cap) {
  proposer.observe(space.default_point(), f(space.default_point()));
  for (int i = 1; i <= cap; ++i) {
    auto p = proposer.next();
    if (!p) return cap;
    auto s = f(p->point);
    if (s && *s >= good) return i;
    proposer.observe(p->point, s);
  }
  return cap;
}

TEST(BanditTest, BeatsRandomSearchOnAStructuredObjective) {
  // 5 parameters of 12 values (248832 points) with a constraint, some failing candidates, and a
  // separable bowl plus a ripple that makes local optima. "Near the optimum" is within 2 of its
  // score: a few dozen points, so random search needs thousands of evaluations.
  Space space = make_space({12, 12, 12, 12, 12}, {"P0 + P1 <= 18"});
  Point peak{7, 9, 2, 10, 5};
  ASSERT_TRUE(space.valid(peak));
  auto f = [peak](const Point& p) -> std::optional<double> {
    if ((p[2] * 5 + p[4]) % 11 == 4 && p != peak) return std::nullopt;
    double s = 0;
    for (size_t d = 0; d < p.size(); ++d) {
      double x = double(p[d] - peak[d]);
      s -= x * x + 1.5 * (1 - std::cos(x * 2.1));  // ripple: 0 at the peak
    }
    return s;
  };
  const int cap = 3000;
  std::vector<int> bandit, random;
  for (uint64_t seed = 1; seed <= 7; ++seed) {
    auto b = make_proposer(space, seed, "bandit");
    auto r = make_proposer(space, seed, "random");
    bandit.push_back(evals_to(*b, space, f, -2.0, cap));
    random.push_back(evals_to(*r, space, f, -2.0, cap));
  }
  std::sort(bandit.begin(), bandit.end());
  std::sort(random.begin(), random.end());
  int mb = bandit[3], mr = random[3];
  RecordProperty("bandit_median", mb);
  RecordProperty("random_median", mr);
  std::cout << "evaluations to near-optimum, median of 7: bandit " << mb << ", random " << mr << "\n";
  EXPECT_LT(mb * 3, mr) << "bandit " << ::testing::PrintToString(bandit) << " random "
                        << ::testing::PrintToString(random);
}

TEST(BanditTest, OneArmStuckDoesNotEndTheRun) {
  // 6 parameters of 32 values (a space too large to count) under a tight constraint: 3,003 valid
  // points. tpe's draws rarely satisfy it, so it often proposes nothing; hill still can, and the run
  // goes on instead of ending as exhausted.
  Space space = make_space({32, 32, 32, 32, 32, 32}, {"P0 + P1 + P2 + P3 + P4 + P5 <= 8"});
  auto bandit = make_proposer(space, 1, "bandit");
  auto proposals = drive(*bandit, space, bowl({2, 1, 0, 3, 1, 1}), 60);
  EXPECT_EQ(proposals.size(), 60u);
}

}  // namespace
}  // namespace longhaul
