#include "eval/metrics.h"

#include <gtest/gtest.h>

namespace longhaul {

TEST(Metrics, ParsesLinesAndIgnoresProse) {
  auto m = parse_metrics("warming up\n{\"metric\": \"time_ms\", \"value\": 1.5, \"spread\": 0.1, \"samples\": 9}\n"
                         "  {\"metric\":\"gflops\",\"value\":12}\n");
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_DOUBLE_EQ(m->at("time_ms").value, 1.5);
  EXPECT_DOUBLE_EQ(m->at("time_ms").spread, 0.1);
  EXPECT_EQ(m->at("time_ms").samples, 9);
  EXPECT_DOUBLE_EQ(m->at("gflops").value, 12);
}

TEST(Metrics, RejectsBadLines) {
  for (const char* bad : {"{not json", "{\"value\": 1}", "{\"metric\": \"t\"}",
                          "{\"metric\": \"t\", \"value\": \"fast\"}",
                          "{\"metric\": \"t\", \"value\": 1, \"spread\": -1}",
                          "{\"metric\": \"t\", \"value\": 1, \"samples\": 0}", "{\"metric\": 3, \"value\": 1}"}) {
    auto m = parse_metrics(std::string("ok line\n") + bad + "\n");
    EXPECT_FALSE(m.ok()) << bad;
    if (!m.ok()) {
      EXPECT_NE(m.error().find("stdout line 2"), std::string::npos) << m.error();
    }
  }
}

TEST(Metrics, EmptyOutputHasNoMetrics) {
  auto m = parse_metrics("");
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->empty());
}

}  // namespace longhaul
