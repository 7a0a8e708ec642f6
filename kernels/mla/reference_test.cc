// The float64 MLA reference: the LSE's base on a hand case, the default scale, causal alignment for
// s_q in {1, 2, 4} and prefill, empty rows, paged == contiguous (shuffled pages, NaN elsewhere),
// S not a multiple of 64, mixed lengths, validation.
#include <gtest/gtest.h>

#include <cmath>

#include "mla/mla.h"
#include "mla/mla_testing.h"
#include "mla/reference.h"

namespace longhaul::mla {
namespace {

using testing::Case;
using testing::MakeRandom;
using testing::MaxRelErr;

// Two keys, scale 1: s = (q.k0, q.k1) = (1, 0) with q = e0, k0 = e0, k1 = 2 e1.
//   lse = ln(e + 1) = 1.31326168751822 (base 2 would read log2(e + 1) = 1.89464...)
//   o[0] = e/(e+1) * 1 = 0.731058578630005,  o[1] = 1/(e+1) * 2 = 0.537882842739990
TEST(MlaReference, HandCaseNaturalLogLse) {
  std::vector<float> q(kDimQK, 0.f), kv(2 * kDimQK, 0.f);
  q[0] = 1, kv[0] = 1, kv[kDimQK + 1] = 2;
  Problem p;
  p.q = q.data();
  p.kv.data = kv.data(), p.kv.stride_outer = 2 * kDimQK, p.kv.capacity = 2;
  p.seqlens = {2};
  p.scale = 1;
  const Result r = Attention(p);
  const double e = std::exp(1.0);
  EXPECT_NEAR(r.lse[0], std::log(e + 1), 1e-14);
  EXPECT_GT(std::fabs(r.lse[0] - std::log2(e + 1)), 0.5);
  EXPECT_NEAR(r.o[0], e / (e + 1), 1e-14);
  EXPECT_NEAR(r.o[1], 2 / (e + 1), 1e-14);
  for (int d = 2; d < kDimV; ++d) EXPECT_EQ(r.o[d], 0.0);

  // The same through the C API's CPU backend, fp32 in and out.
  mla_fwd_params a;
  mla_fwd_params_init(&a);
  a.B = 1, a.s_q = 1, a.H = 1, a.S_max = 2, a.scale = 1;
  a.in_dtype = a.out_dtype = MLA_DTYPE_F32;
  mla_fwd_params_set_contiguous(&a);
  const int32_t seqlens[1] = {2};
  std::vector<float> o(kDimV, -1.f);
  float lse = 0;
  a.q = q.data(), a.kv = kv.data(), a.o = o.data(), a.lse = &lse, a.seqlens = seqlens;
  ASSERT_EQ(mla_fwd_cpu(&a, nullptr), MLA_OK) << mla_last_error();
  EXPECT_NEAR(lse, std::log(e + 1), 1e-6);
  EXPECT_NEAR(o[0], e / (e + 1), 1e-6);
  EXPECT_NEAR(o[1], 2 / (e + 1), 1e-6);
}

TEST(MlaReference, DefaultScaleIsOneOverSqrt192) {
  EXPECT_DOUBLE_EQ(DefaultScale(), 1.0 / std::sqrt(192.0));
  // One key: lse = scale * q.k exactly; q.k = 3 (q = 3 e575 (rope), k = e575): the rope columns count.
  std::vector<float> q(kDimQK, 0.f), kv(kDimQK, 0.f);
  q[575] = 3, kv[575] = 1, kv[7] = 5;
  Problem p;
  p.q = q.data();
  p.kv.data = kv.data(), p.kv.stride_outer = kDimQK, p.kv.capacity = 1;
  p.seqlens = {1};
  const Result r = Attention(p);
  EXPECT_NEAR(r.lse[0], 3.0 / std::sqrt(192.0), 1e-15);
  EXPECT_EQ(r.o[7], 5.0);  // one key: o = V_0
}

// Row i of a causal s_q-query problem equals a one-query problem over the first S - s_q + i + 1
// keys (the queries are the last s_q positions).
TEST(MlaReference, CausalAlignmentQueriesAtTheEnd) {
  for (int s_q : {1, 2, 4}) {
    Case c;
    c.B = 2, c.s_q = s_q, c.H = 3, c.seqlens = {130, 77};
    auto in = MakeRandom(c, 100 + s_q);
    const Result full = Attention(in.paged);
    for (int b = 0; b < c.B; ++b)
      for (int i = 0; i < s_q; ++i) {
        Problem one = in.contig;
        one.B = 1, one.s_q = 1;
        one.q = in.q.data() + in.contig.QIndex(b, i, 0);
        one.kv.data = in.kv_contig.data() + size_t(b) * in.S_max * kDimQK;
        one.seqlens = {c.seqlens[b] - s_q + i + 1};
        const Result r = Attention(one);
        for (int h = 0; h < c.H; ++h) {
          const size_t row = (size_t(b) * s_q + i) * c.H + h;
          EXPECT_NEAR(full.lse[row], r.lse[h], 1e-12) << s_q << " " << b << " " << i;
          for (int e = 0; e < kDimV; e += 37)
            EXPECT_NEAR(full.o[row * kDimV + e], r.o[h * kDimV + e], 1e-12);
        }
      }
    if (s_q > 1) {  // and causal off: every row sees all S_b keys, so row 0 differs
      Problem nc = in.paged;
      nc.causal = false;
      const Result r = Attention(nc);
      EXPECT_GT(std::fabs(r.lse[0] - full.lse[0]), 1e-6);
      const size_t last = size_t(s_q - 1) * c.H;  // the last query sees everything either way
      EXPECT_NEAR(r.lse[last], full.lse[last], 1e-12);
    }
  }
}

// Prefill through the same function: s_q = S, query i sees keys 0..i. Row 0 is V_0 exactly.
TEST(MlaReference, CausalPrefill) {
  Case c;
  c.B = 1, c.s_q = 100, c.H = 2, c.seqlens = {100};
  auto in = MakeRandom(c, 7);
  const Result r = Attention(in.contig);
  const double scale = DefaultScale();
  for (int h = 0; h < c.H; ++h) {
    double dot = 0;
    for (int d = 0; d < kDimQK; ++d) dot += double(in.q[in.contig.QIndex(0, 0, h) + d]) * in.kv_contig[d];
    EXPECT_NEAR(r.lse[h], scale * dot, 1e-12);
    for (int e = 0; e < kDimV; ++e) EXPECT_EQ(r.o[h * kDimV + e], double(in.kv_contig[e]));
  }
  for (int i : {1, 63, 64, 99}) {
    Problem one = in.contig;
    one.s_q = 1;
    one.q = in.q.data() + in.contig.QIndex(0, i, 0);
    one.seqlens = {i + 1};
    const Result ri = Attention(one);
    for (int h = 0; h < c.H; ++h) EXPECT_NEAR(r.lse[size_t(i) * c.H + h], ri.lse[h], 1e-12) << i;
  }
}

// S_b = 2 with s_q = 4: rows 0 and 1 see no key (o = 0, lse = -inf); an entry with S_b = 0 too.
TEST(MlaReference, EmptyRows) {
  Case c;
  c.B = 2, c.s_q = 4, c.H = 2, c.seqlens = {2, 0};
  auto in = MakeRandom(c, 3);
  const Result r = Attention(in.paged);
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 4; ++i)
      for (int h = 0; h < 2; ++h) {
        const size_t row = (size_t(b) * 4 + i) * 2 + h;
        const bool empty = b == 1 || i < 2;
        EXPECT_EQ(std::isinf(r.lse[row]) && r.lse[row] < 0, empty) << b << " " << i;
        for (int e = 0; e < kDimV; ++e) {
          ASSERT_TRUE(std::isfinite(r.o[row * kDimV + e]));
          if (empty) {
            ASSERT_EQ(r.o[row * kDimV + e], 0.0);
          }
        }
      }
}

// Mixed lengths (none a multiple of 64 but one), both q variances: the paged cache (shuffled pages,
// NaN in unused pages, rows and block-table entries) gives bit-identical results, all finite.
TEST(MlaReference, PagedEqualsContiguousShuffledNaN) {
  for (double sd : {0.1, 1.0}) {
    Case c;
    c.B = 6, c.s_q = 2, c.H = 3, c.seqlens = {1, 63, 64, 65, 200, 0}, c.q_sd = sd, c.extra_pages = 5;
    auto in = MakeRandom(c, 11);
    const Result a = Attention(in.contig), b = Attention(in.paged);
    ASSERT_EQ(a.o, b.o);
    ASSERT_EQ(a.lse, b.lse);
    for (double x : a.o) ASSERT_TRUE(std::isfinite(x));
  }
}

TEST(MlaReference, ValidateRejectsBadInputs) {
  Case c;
  c.B = 2, c.seqlens = {70, 5};
  auto in = MakeRandom(c, 1);
  EXPECT_EQ(Validate(in.paged), "");
  Problem p = in.paged;
  p.seqlens = {129, 5};  // 3 pages > max_pages 2
  EXPECT_NE(Validate(p), "");
  in.block_table[1] = in.num_pages;  // entry 0's second page out of range
  EXPECT_NE(Validate(in.paged), "");
  EXPECT_THROW(Attention(in.paged), std::invalid_argument);
  p = in.contig;
  p.seqlens = {71, 5};  // over the capacity 70
  EXPECT_NE(Validate(p), "");
}

}  // namespace
}  // namespace longhaul::mla
