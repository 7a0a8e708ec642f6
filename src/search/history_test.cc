#include <gtest/gtest.h>

#include <cmath>

#include "search/search_testing.h"
#include "search/strategy.h"

namespace longhaul {
namespace {

using namespace search_testing;

TEST(SearchHistoryTest, BestIsTheHighestScoreEarliestOnTies) {
  Space space = make_space({4, 4});
  History h(space);
  EXPECT_TRUE(h.record({0, 0}, 1.0));
  EXPECT_FALSE(h.record({1, 0}, std::nullopt));  // failures are never best
  EXPECT_TRUE(h.record({2, 0}, 3.0));
  EXPECT_FALSE(h.record({3, 0}, 3.0));           // a tie is not a gain
  EXPECT_EQ(h.best(), (Point{2, 0}));
  EXPECT_EQ(h.top(10), (std::vector<Point>{{2, 0}, {3, 0}, {0, 0}}));
  EXPECT_EQ(h.top(1), (std::vector<Point>{{2, 0}}));
}

TEST(SearchHistoryTest, MeasuringTheBestAgainLowerHandsTheCrownOn) {
  Space space = make_space({4, 4});
  History h(space);
  h.record({0, 0}, 1.0);
  h.record({1, 1}, 5.0);
  h.record({2, 2}, 4.0);
  h.record({1, 1}, 2.0);
  EXPECT_EQ(h.best(), (Point{2, 2}));
  EXPECT_EQ(h.best_score(), 4.0);
  EXPECT_EQ(h.observations().size(), 4u);
}

TEST(SearchHistoryTest, NanIsAFailure) {
  Space space = make_space({4});
  History h(space);
  EXPECT_FALSE(h.record({0}, std::nan("")));
  EXPECT_FALSE(h.best());
  EXPECT_TRUE(h.record({1}, -1.0));
}

TEST(SearchHistoryTest, TakenCountsValidPointsOnce) {
  Space space = make_space({4}, {"P0 != 2"});
  History h(space);
  h.add_pending({1});
  EXPECT_TRUE(h.taken({1}));
  EXPECT_FALSE(h.observed({1}));
  h.record({1}, 1.0);   // pending -> observed: still one
  h.record({1}, 2.0);   // measured again: still one
  h.record({2}, 1.0);   // invalid: not counted
  h.record({3}, 1.0);
  EXPECT_EQ(h.valid_taken(), 2u);
}

}  // namespace
}  // namespace longhaul
