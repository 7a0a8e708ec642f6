#include "util/duration.h"

#include <gtest/gtest.h>

namespace longhaul {

TEST(Duration, Parses) {
  EXPECT_DOUBLE_EQ(*parse_duration("30s"), 30);
  EXPECT_DOUBLE_EQ(*parse_duration("500ms"), 0.5);
  EXPECT_DOUBLE_EQ(*parse_duration("1h30m"), 5400);
  EXPECT_DOUBLE_EQ(*parse_duration("4m"), 240);
  EXPECT_DOUBLE_EQ(*parse_duration("12"), 12);
  EXPECT_DOUBLE_EQ(*parse_duration("1.5s"), 1.5);
}

TEST(Duration, RejectsMalformed) {
  for (const char* bad : {"", "s", "10x", "1h30", "abc", "5 m", "-3s", "1..2s"})
    EXPECT_FALSE(parse_duration(bad).has_value()) << bad;
}

TEST(Duration, Formats) {
  EXPECT_EQ(format_duration(12.34), "12.3s");
  EXPECT_EQ(format_duration(185), "3m05s");
  EXPECT_EQ(format_duration(3725), "1h02m");
}

}  // namespace longhaul
