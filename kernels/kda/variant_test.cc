// kda_fwd's choice of GPU kernels (variant.h) at the shapes it was measured on, on both GPUs.
#include <gtest/gtest.h>

#include "kda/variant.h"

namespace longhaul::kda {
namespace {

constexpr DeviceInfo kH200{132, 4.8e12}, kH100{132, 3.35e12};

TEST(KdaAutoVariant, HeadsThatLeaveSmsIdlePrepareOnEverySm) {
  for (const DeviceInfo& d : {kH200, kH100}) {
    EXPECT_EQ(AutoVariant(1, 64, d), Variant::kPrepScan2);  // 2 x 64 heads <= 132
    EXPECT_EQ(AutoVariant(1, 66, d), Variant::kPrepScan2);
    EXPECT_EQ(AutoVariant(1, 67, d), Variant::kPrepScan1);
    EXPECT_EQ(AutoVariant(1, 96, d), Variant::kPrepScan1);  // 96 <= 0.8 x 132
  }
}

TEST(KdaAutoVariant, AWaveOfHeadsOrMoreFollowsTheDram) {
  EXPECT_EQ(AutoVariant(8, 16, kH200), Variant::kPrepScan1);  // B8 H16: 128 heads
  EXPECT_EQ(AutoVariant(6, 96, kH200), Variant::kPrepScan1);  // the varlen batch: 576
  EXPECT_EQ(AutoVariant(8, 16, kH100), Variant::kFused1);
  EXPECT_EQ(AutoVariant(6, 96, kH100), Variant::kFused1);
  EXPECT_EQ(AutoVariant(8, 16, DeviceInfo{132, 0}), Variant::kFused1);  // DRAM unknown: counted slow
}

}  // namespace
}  // namespace longhaul::kda
