// The C API's CPU backend (kda_fwd_cpu): dtypes, strides, varlen, state layouts, errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "kda/kda.h"
#include "kda/kda_api.h"
#include "kda/kda_testing.h"
#include "kda/reference.h"

namespace longhaul::kda {
namespace {

using testing::Case;
using testing::MakeRandom;
using testing::RelRms;

std::vector<float> RoundBf16(const std::vector<float>& x) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = Bf16ToFloat(FloatToBf16(x[i]));
  return y;
}

TEST(KdaCpuApi, Bf16Conversion) {
  EXPECT_EQ(FloatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(Bf16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(FloatToBf16(1.0f + 1.0f / 256), 0x3f80);  // a tie rounds to even
  EXPECT_EQ(FloatToBf16(1.0f + 3.0f / 256), 0x3f82);  // a tie rounds to even (up)
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(std::nanf("")))));
}

// bf16 q, k, v packed in one [B,T,3,H,D] buffer (strided views), gate in the kernel, varlen,
// V-first states, bf16 out; against the recurrent reference on the bf16-rounded inputs.
TEST(KdaCpuApi, StridedBf16VarlenInKernelGateMatchesReference) {
  Case c;
  c.K = c.V = 64, c.H = 2, c.cu_seqlens = {0, 5, 38, 111}, c.T = 111;
  c.gate = Gate::kLowerBoundSigmoid, c.l2norm = true, c.beta_sigmoid = true;
  auto in = MakeRandom(c, 9000);
  const int T = c.T, H = c.H, D = c.K, N = 3;
  in.q = RoundBf16(in.q), in.k = RoundBf16(in.k), in.v = RoundBf16(in.v);
  in.p.q = in.q.data(), in.p.k = in.k.data(), in.p.v = in.v.data();
  const Result ref = RecurrentForward(in.p);

  std::vector<uint16_t> qkv(size_t(T) * 3 * H * D);
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < H; ++h)
      for (int d = 0; d < D; ++d) {
        const size_t src = (size_t(t) * H + h) * D + d;
        qkv[((size_t(t) * 3 + 0) * H + h) * D + d] = FloatToBf16(in.q[src]);
        qkv[((size_t(t) * 3 + 1) * H + h) * D + d] = FloatToBf16(in.k[src]);
        qkv[((size_t(t) * 3 + 2) * H + h) * D + d] = FloatToBf16(in.v[src]);
      }
  // h0 given V-first: transpose the reference's [K,V] blocks.
  std::vector<float> h0t(in.h0.size());
  for (int m = 0; m < N * H; ++m)
    for (int a = 0; a < D; ++a)
      for (int b = 0; b < D; ++b) h0t[(size_t(m) * D + b) * D + a] = in.h0[(size_t(m) * D + a) * D + b];

  kda_fwd_params p;
  kda_fwd_params_init(&p);
  p.B = 1, p.T = T, p.H = H, p.K = D, p.V = D;
  kda_fwd_params_set_contiguous(&p);
  const int64_t st[3] = {int64_t(T) * 3 * H * D, 3 * H * D, D};
  std::memcpy(p.q_stride, st, sizeof st), std::memcpy(p.k_stride, st, sizeof st);
  std::memcpy(p.v_stride, st, sizeof st);
  p.q = qkv.data(), p.k = qkv.data() + H * D, p.v = qkv.data() + 2 * H * D;
  p.in_dtype = KDA_DTYPE_BF16, p.g_dtype = KDA_DTYPE_F32, p.beta_dtype = KDA_DTYPE_F32;
  p.g = in.g.data(), p.beta = in.beta.data();
  p.num_seqs = N, p.cu_seqlens = c.cu_seqlens.data();
  p.gate = KDA_GATE_LOWER_BOUND_SIGMOID, p.lower_bound = -5;
  p.A_log = in.A_log.data(), p.dt_bias = in.dt_bias.data();
  p.flags = KDA_FLAG_L2NORM_QK | KDA_FLAG_BETA_SIGMOID | KDA_FLAG_STATE_V_FIRST;
  p.initial_state = h0t.data();
  std::vector<float> hT(in.h0.size());
  p.final_state = hT.data();

  for (kda_dtype out : {KDA_DTYPE_F32, KDA_DTYPE_BF16}) {
    p.out_dtype = out;
    std::vector<float> of(size_t(T) * H * D, std::nanf(""));
    std::vector<uint16_t> ob(size_t(T) * H * D, 0x7fc0);  // NaN poison
    p.o = out == KDA_DTYPE_F32 ? static_cast<void*>(of.data()) : static_cast<void*>(ob.data());
    ASSERT_EQ(kda_fwd_cpu(&p, nullptr), KDA_OK) << kda_last_error();
    if (out == KDA_DTYPE_BF16)
      for (size_t i = 0; i < ob.size(); ++i) of[i] = Bf16ToFloat(ob[i]);
    std::vector<float> hT_kv(hT.size());
    for (int m = 0; m < N * H; ++m)
      for (int a = 0; a < D; ++a)
        for (int b = 0; b < D; ++b) hT_kv[(size_t(m) * D + a) * D + b] = hT[(size_t(m) * D + b) * D + a];
    const double eo = RelRms(ref.o, of), es = RelRms(ref.final_state, hT_kv);
    std::printf("[ KdaCpuApi ] out %s: rel RMS output %.3g, final state %.3g\n",
                out == KDA_DTYPE_F32 ? "f32" : "bf16", eo, es);
    EXPECT_LT(eo, out == KDA_DTYPE_F32 ? 1e-7 : 4e-3);
    EXPECT_LT(es, 1e-7);
  }
}

TEST(KdaCpuApi, ReportsErrors) {
  float x[64] = {};
  int64_t cu[3] = {0, 3, 2};
  kda_fwd_params p;
  kda_fwd_params_init(&p);
  p.B = 1, p.T = 2, p.H = 1, p.K = 2, p.V = 2;
  kda_fwd_params_set_contiguous(&p);
  p.in_dtype = p.out_dtype = KDA_DTYPE_F32;
  p.q = p.k = p.v = p.g = p.beta = x;
  p.o = x + 32;
  EXPECT_EQ(kda_fwd_cpu(&p, nullptr), KDA_OK) << kda_last_error();
  EXPECT_STREQ(kda_last_error(), "");

  p.num_seqs = 2, p.cu_seqlens = cu;
  EXPECT_EQ(kda_fwd_cpu(&p, nullptr), KDA_ERR_INVALID);
  EXPECT_NE(std::string(kda_last_error()).find("cu_seqlens"), std::string::npos) << kda_last_error();
  p.num_seqs = 0;

  p.chunk_size = 24;
  EXPECT_EQ(kda_fwd_cpu(&p, nullptr), KDA_ERR_UNSUPPORTED);
  p.chunk_size = 0;

  p.flags = KDA_FLAG_ALLOW_NEG_EIGVAL;
  EXPECT_EQ(kda_fwd_cpu(&p, nullptr), KDA_ERR_INVALID);
  p.flags = 1u << 20;
  EXPECT_EQ(kda_fwd_cpu(&p, nullptr), KDA_ERR_INVALID);
  p.flags = 0;

  p.gate = KDA_GATE_LOWER_BOUND_SIGMOID, p.lower_bound = 0;
  EXPECT_EQ(kda_fwd_cpu(&p, nullptr), KDA_ERR_INVALID);
  p.gate = KDA_GATE_LOG_DECAY, p.o = nullptr;
  EXPECT_EQ(kda_fwd_cpu(&p, nullptr), KDA_ERR_INVALID);
  EXPECT_EQ(kda_fwd_cpu(nullptr, nullptr), KDA_ERR_INVALID);
  EXPECT_STREQ(kda_status_string(KDA_ERR_UNSUPPORTED), "not supported by this backend");
}

// No tokens at all (T = 0, or varlen sequences that are all empty): o is empty and the final state
// is the initial one, in either state layout.
TEST(KdaCpuApi, NoTokensPassesTheStateThrough) {
  float x[1] = {}, h0[2 * 2 * 2 * 2], hT[2 * 2 * 2 * 2];
  for (int i = 0; i < 16; ++i) h0[i] = 0.25f * float(i) - 1.f;
  int64_t cu[3] = {0, 0, 0};
  for (bool varlen : {false, true}) {
    kda_fwd_params p;
    kda_fwd_params_init(&p);
    p.B = varlen ? 1 : 2, p.T = 0, p.H = 2, p.K = 2, p.V = 2;
    kda_fwd_params_set_contiguous(&p);
    p.in_dtype = p.out_dtype = KDA_DTYPE_F32;
    p.q = p.k = p.v = p.g = p.beta = p.o = x;
    if (varlen) p.num_seqs = 2, p.cu_seqlens = cu;
    p.initial_state = h0, p.final_state = hT;
    std::fill(std::begin(hT), std::end(hT), std::nanf(""));
    ASSERT_EQ(kda_fwd_cpu(&p, nullptr), KDA_OK) << kda_last_error();
    for (int i = 0; i < 16; ++i) EXPECT_EQ(hT[i], h0[i]) << "varlen " << varlen << " element " << i;
  }
}

}  // namespace
}  // namespace longhaul::kda
