// SearchProposer: properties every strategy (and the bandit over them) must have, run for each by name.
#include <gtest/gtest.h>

#include <chrono>
#include <set>

#include "search/search_testing.h"

namespace longhaul {
namespace {

using namespace search_testing;

class SearchStrategyTest : public ::testing::TestWithParam<std::string> {};

// 6 x 8 x 10 x 5 = 2400 points, about two thirds valid.
Space medium_space() { return make_space({6, 8, 10, 5}, {"(P0 + P1) % 3 != 1", "P2 * P3 <= 30"}); }

TEST_P(SearchStrategyTest, SameSeedSameProposals) {
  Space space = medium_space();
  auto f = flaky_bowl({4, 5, 6, 2});
  auto a = make_proposer(space, 1234, GetParam());
  auto b = make_proposer(space, 1234, GetParam());
  auto pa = drive(*a, space, f, 200);
  auto pb = drive(*b, space, f, 200);
  ASSERT_EQ(pa.size(), 200u);
  ASSERT_EQ(pb.size(), 200u);
  for (size_t i = 0; i < pa.size(); ++i) {
    ASSERT_EQ(pa[i].point, pb[i].point) << "step " << i;
    ASSERT_EQ(pa[i].strategy, pb[i].strategy) << "step " << i;
  }
}

TEST_P(SearchStrategyTest, DifferentSeedsDiffer) {
  Space space = medium_space();
  auto f = flaky_bowl({4, 5, 6, 2});
  auto a = make_proposer(space, 1, GetParam());
  auto b = make_proposer(space, 2, GetParam());
  auto pa = drive(*a, space, f, 200);
  auto pb = drive(*b, space, f, 200);
  std::vector<Point> xa, xb;
  for (auto& p : pa) xa.push_back(p.point);
  for (auto& p : pb) xb.push_back(p.point);
  EXPECT_NE(xa, xb);
}

TEST_P(SearchStrategyTest, NeverRepeatsAndRespectsConstraints) {
  Space space = medium_space();
  auto f = flaky_bowl({4, 5, 6, 2});
  auto proposer = make_proposer(space, 99, GetParam());
  std::set<Point> seen = {space.default_point()};
  for (auto& p : drive(*proposer, space, f, 800)) {
    EXPECT_TRUE(space.valid(p.point)) << ::testing::PrintToString(p.point);
    EXPECT_TRUE(seen.insert(p.point).second) << "repeated " << ::testing::PrintToString(p.point);
    EXPECT_FALSE(p.strategy.empty());
  }
}

TEST_P(SearchStrategyTest, ExhaustsSmallConstrainedSpaceExactly) {
  Space space = make_space({4, 5, 3}, {"P0 + P1 != 4", "P1 % 2 == 0 || P2 != 1"});
  uint64_t valid = count_valid(space);
  ASSERT_TRUE(space.valid(space.default_point()));
  for (uint64_t seed : {1, 2, 3}) {
    auto proposer = make_proposer(space, seed, GetParam());
    auto proposals = drive(*proposer, space, flaky_bowl({2, 2, 1}), 1000);
    std::set<Point> seen = {space.default_point()};
    for (auto& p : proposals) {
      EXPECT_TRUE(space.valid(p.point));
      EXPECT_TRUE(seen.insert(p.point).second);
    }
    EXPECT_EQ(proposals.size() + 1, valid) << "seed " << seed;
    EXPECT_FALSE(proposer->next());
    EXPECT_FALSE(proposer->next());
  }
}

TEST_P(SearchStrategyTest, InFlightProposalsAreNeverRepeated) {
  Space space = make_space({3, 4, 2}, {"P0 != P1"});
  uint64_t valid = count_valid(space);
  auto proposer = make_proposer(space, 5, GetParam());
  auto f = bowl({1, 2, 1});
  proposer->observe(space.default_point(), std::nullopt);  // the baseline failed
  std::vector<Point> batch;
  std::set<Point> seen;
  // Propose everything before observing anything, as parallel slots would.
  while (auto p = proposer->next()) {
    EXPECT_TRUE(seen.insert(p->point).second);
    EXPECT_NE(p->point, space.default_point());
    batch.push_back(p->point);
  }
  EXPECT_EQ(batch.size(), valid);  // the default (0,0,0) is invalid: it takes nothing from the count
  for (size_t i = batch.size(); i-- > 0;) proposer->observe(batch[i], f(batch[i]));
  EXPECT_FALSE(proposer->next());
}

TEST_P(SearchStrategyTest, PointsObservedWithoutProposalAreNotProposed) {
  Space space = make_space({4, 4}, {});
  auto proposer = make_proposer(space, 8, GetParam());
  auto f = bowl({3, 3});
  std::set<Point> seen;
  for (Point p : {Point{0, 0}, Point{3, 3}, Point{2, 2}, Point{1, 3}}) {
    proposer->observe(p, f(p));
    seen.insert(p);
  }
  int count = 0;
  while (auto p = proposer->next()) {
    EXPECT_TRUE(seen.insert(p->point).second) << ::testing::PrintToString(p->point);
    proposer->observe(p->point, f(p->point));
    ++count;
  }
  EXPECT_EQ(count, 12);
}

TEST_P(SearchStrategyTest, HugeSpaceProposesAndGivesUpWhenInfeasible) {
  std::vector<int> sizes(20, 1000);
  Space space = make_space(sizes, {"P0 + P1 + P2 < 500"});
  auto proposer = make_proposer(space, 3, GetParam());
  auto f = bowl(Point(20, 100));
  auto proposals = drive(*proposer, space, f, 50);
  EXPECT_EQ(proposals.size(), 50u);
  for (auto& p : proposals) EXPECT_TRUE(space.valid(p.point));

  Space impossible = make_space(sizes, {"P0 == 999 && P1 == 999 && P2 == 999 && P3 == 999"});
  auto none = make_proposer(impossible, 3, GetParam());
  none->observe(impossible.default_point(), std::nullopt);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(none->next());
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10));
}

TEST_P(SearchStrategyTest, EmptySpaceIsExhaustedByTheBaseline) {
  Space space = make_space({});
  auto proposer = make_proposer(space, 1, GetParam());
  proposer->observe(space.default_point(), 1.0);
  EXPECT_FALSE(proposer->next());
}

INSTANTIATE_TEST_SUITE_P(All, SearchStrategyTest,
                         ::testing::Values("bandit", "random", "grid", "hill", "evolution", "tpe"),
                         [](const auto& info) { return info.param; });

TEST(SearchProposerTest, UnknownStrategyListsTheValidOnes) {
  Space space = make_space({2});
  auto p = SearchProposer::create(space, 1, "anneal");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error(), "unknown search strategy 'anneal' (valid: bandit, random, grid, hill, evolution, tpe)");
  EXPECT_EQ(search_strategies(), (std::vector<std::string>{"bandit", "random", "grid", "hill", "evolution", "tpe"}));
}

TEST(SearchProposerTest, StrategyNamesTheTechnique) {
  Space space = make_space({6, 8, 10, 5});
  for (const std::string name : {"random", "grid", "hill", "evolution", "tpe"}) {
    auto proposer = make_proposer(space, 4, name);
    for (auto& p : drive(*proposer, space, bowl({3, 3, 3, 3}), 30))
      EXPECT_TRUE(p.strategy == name || p.strategy == "random") << name << " labelled " << p.strategy;
  }
  auto bandit = make_proposer(space, 4, "bandit");
  std::set<std::string> labels;
  for (auto& p : drive(*bandit, space, bowl({3, 3, 3, 3}), 60)) labels.insert(p.strategy);
  EXPECT_EQ(labels, (std::set<std::string>{"hill", "tpe"}));
}

}  // namespace
}  // namespace longhaul
