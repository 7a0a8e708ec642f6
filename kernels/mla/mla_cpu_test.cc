// The C API's CPU backend (mla_fwd_cpu): bf16 rounding, strided bf16 q, paged and contiguous caches,
// LSE strides, errors.
#include <gtest/gtest.h>

#include "mla/mla.h"
#include "mla/mla_api.h"
#include "mla/mla_testing.h"
#include "mla/reference.h"

namespace longhaul::mla {
namespace {

using testing::Case;
using testing::MakeRandom;

TEST(MlaCpuApi, Bf16Conversion) {
  EXPECT_EQ(FloatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(FloatToBf16(1.0f + 1.0f / 256), 0x3f80);  // a tie rounds to even (down)
  EXPECT_EQ(FloatToBf16(1.0f + 3.0f / 256), 0x3f82);  // a tie rounds to even (up)
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(std::nanf("")))));
}

std::vector<uint16_t> ToBf16(const std::vector<float>& x) {
  std::vector<uint16_t> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = FloatToBf16(x[i]);
  return y;
}

// bf16 q inside a wider [B, s_q, H, 640] buffer, bf16 KV (paged, then contiguous), bf16 o with a
// padded row stride, lse as [B, H, s_q] (FlashMLA's layout) through the strides: o equals the
// reference rounded to bf16 exactly; lse to fp32.
TEST(MlaCpuApi, StridedBf16PagedAndContiguousMatchReference) {
  Case c;
  c.B = 3, c.s_q = 2, c.H = 4, c.seqlens = {65, 1, 130};
  auto in = MakeRandom(c, 21);
  const Result ref = Attention(in.paged);
  const int B = c.B, s_q = c.s_q, H = c.H, QW = 640, OW = 520;
  std::vector<uint16_t> q(size_t(B) * s_q * H * QW, 0x7fc0);  // NaN padding
  for (int r = 0; r < B * s_q * H; ++r)
    for (int d = 0; d < kDimQK; ++d) q[size_t(r) * QW + d] = FloatToBf16(in.q[size_t(r) * kDimQK + d]);
  const std::vector<uint16_t> kvp = ToBf16(in.kv_paged), kvc = ToBf16(in.kv_contig);
  for (bool paged : {true, false}) {
    mla_fwd_params p;
    mla_fwd_params_init(&p);
    p.B = B, p.s_q = s_q, p.H = H;
    if (paged) {
      p.block_table = in.block_table.data(), p.block_table_stride = in.max_pages;
      p.max_pages = in.max_pages, p.num_pages = in.num_pages;
    } else {
      p.S_max = in.S_max;
    }
    mla_fwd_params_set_contiguous(&p);
    p.q_stride[0] = int64_t(s_q) * H * QW, p.q_stride[1] = int64_t(H) * QW, p.q_stride[2] = QW;
    p.o_stride[0] = int64_t(s_q) * H * OW, p.o_stride[1] = int64_t(H) * OW, p.o_stride[2] = OW;
    p.lse_stride[0] = int64_t(H) * s_q, p.lse_stride[1] = 1, p.lse_stride[2] = s_q;
    std::vector<uint16_t> o(size_t(B) * s_q * H * OW, 0x7fc0);
    std::vector<float> lse(size_t(B) * s_q * H, -1);
    const std::vector<int32_t> seqlens(c.seqlens.begin(), c.seqlens.end());
    p.q = q.data(), p.kv = paged ? kvp.data() : kvc.data(), p.o = o.data(), p.lse = lse.data();
    p.seqlens = seqlens.data();
    ASSERT_EQ(mla_fwd_cpu(&p, nullptr), MLA_OK) << mla_last_error();
    for (int b = 0; b < B; ++b)
      for (int i = 0; i < s_q; ++i)
        for (int h = 0; h < H; ++h) {
          const size_t row = (size_t(b) * s_q + i) * H + h;
          EXPECT_EQ(lse[size_t(b) * H * s_q + h * s_q + i], float(ref.lse[row]));
          for (int e = 0; e < kDimV; ++e)
            ASSERT_EQ(o[row * OW + e], FloatToBf16(float(ref.o[row * kDimV + e]))) << row << " " << e;
          ASSERT_EQ(o[row * OW + kDimV], 0x7fc0);  // the padding is left alone
        }
  }
}

TEST(MlaCpuApi, Errors) {
  EXPECT_EQ(mla_fwd_cpu(nullptr, nullptr), MLA_ERR_INVALID);
  Case c;
  c.B = 1, c.seqlens = {10};
  auto in = MakeRandom(c, 2);
  mla_fwd_params p;
  mla_fwd_params_init(&p);
  p.B = 1, p.s_q = 1, p.H = c.H, p.S_max = in.S_max;
  p.in_dtype = p.out_dtype = MLA_DTYPE_F32;
  mla_fwd_params_set_contiguous(&p);
  std::vector<float> o(size_t(c.H) * kDimV);
  int32_t seqlens[1] = {11};  // over S_max = 10
  p.q = in.q.data(), p.kv = in.kv_contig.data(), p.o = o.data(), p.seqlens = seqlens;
  EXPECT_EQ(mla_fwd_cpu(&p, nullptr), MLA_ERR_INVALID);
  EXPECT_NE(std::string(mla_last_error()), "");
  seqlens[0] = 10;
  EXPECT_EQ(mla_fwd_cpu(&p, nullptr), MLA_OK) << mla_last_error();
  EXPECT_EQ(std::string(mla_last_error()), "");
  p.flags = 1u << 5;
  EXPECT_EQ(mla_fwd_cpu(&p, nullptr), MLA_ERR_INVALID);
  p.flags = MLA_FLAG_CAUSAL;
  // Paged with an out-of-range page.
  std::vector<int32_t> bt = {in.num_pages};
  p.block_table = bt.data(), p.block_table_stride = 1, p.max_pages = 1, p.num_pages = in.num_pages;
  mla_fwd_params_set_contiguous(&p);
  p.kv = in.kv_paged.data();
  EXPECT_EQ(mla_fwd_cpu(&p, nullptr), MLA_ERR_INVALID);
}

}  // namespace
}  // namespace longhaul::mla
