// The chunked float64 KDA forward against the recurrent float64 ground truth, across the shapes and
// modes the GPU kernels must cover; and the recentring's range guarantee in float32.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>

#include "kda/chunked_reference.h"
#include "kda/kda_testing.h"
#include "kda/reference.h"

namespace longhaul::kda {
namespace {

using testing::Case;
using testing::MakeRandom;
using testing::RelRms;

constexpr double kTol = 1e-10;  // relative RMS, chunked vs recurrent, both float64
constexpr double kLog2e = 1.4426950408889634;

struct Worst {
  const char* name;
  double o = 0, s = 0;
  ~Worst() { std::printf("[ %s ] worst rel RMS: output %.3g, final state %.3g\n", name, o, s); }
};

// Runs one case both ways and checks agreement; records the worst figures.
void Agree(const Case& c, const ChunkedOptions& opt, uint64_t seed, Worst& w) {
  const auto in = MakeRandom(c, seed);
  const Result ref = RecurrentForward(in.p);
  const Result chk = ChunkedForward(in.p, opt);
  const double eo = RelRms(ref.o, chk.o), es = RelRms(ref.final_state, chk.final_state);
  w.o = std::max(w.o, eo), w.s = std::max(w.s, es);
  EXPECT_LT(eo, kTol) << "output, seed " << seed << " C " << opt.chunk_size;
  EXPECT_LT(es, kTol) << "state, seed " << seed << " C " << opt.chunk_size;
}

TEST(KdaChunked, TNotAMultipleOfTheChunk) {
  Worst w{"KdaChunked.TNotAMultipleOfTheChunk"};
  Case c;
  c.B = 2, c.T = 100, c.H = 2;
  for (int C : {16, 32, 64})
    for (int T : {1, 15, 63, 100}) {
      c.T = T;
      Agree(c, {C, 16}, 1000 + C + T, w);
    }
}

TEST(KdaChunked, VarlenShortSequences) {
  Worst w{"KdaChunked.VarlenShortSequences"};
  Case c;
  c.H = 2;
  const std::vector<std::vector<int64_t>> batches = {
      {0, 1, 4, 21, 85, 185},  // lengths 1, 3, 17, 64, 100
      {0, 100, 164, 181, 184, 185},
      {0, 0, 7, 7, 40},  // empty sequences pass h0 through
  };
  for (const auto& cu : batches)
    for (int C : {16, 32, 64})
      for (bool h0 : {false, true}) {
        c.cu_seqlens = cu, c.T = int(cu.back()), c.initial_state = h0;
        Agree(c, {C, 16}, 2000 + C + cu.size() + h0, w);
      }
}

TEST(KdaChunked, EveryGateModeAndFlag) {
  Worst w{"KdaChunked.EveryGateModeAndFlag"};
  int seed = 3000;
  for (Gate gate : {Gate::kLogDecay, Gate::kLowerBoundSigmoid, Gate::kSoftplus})
    for (bool l2 : {false, true})
      for (bool bs : {false, true})
        for (bool h0 : {false, true}) {
          Case c;
          c.T = 77, c.H = 2, c.gate = gate, c.l2norm = l2, c.beta_sigmoid = bs, c.initial_state = h0;
          Agree(c, {64, 16}, ++seed, w);
        }
  // The gate's optional parts, and beta in (0, 2).
  for (bool A_log : {false, true})
    for (bool dt : {false, true})
      for (Gate gate : {Gate::kLowerBoundSigmoid, Gate::kSoftplus}) {
        Case c;
        c.T = 50, c.gate = gate, c.A_log = A_log, c.dt_bias = dt, c.l2norm = true;
        Agree(c, {32, 16}, ++seed, w);
      }
  Case c;
  c.T = 70, c.beta_sigmoid = true, c.allow_neg_eigval = true, c.l2norm = true;
  Agree(c, {64, 16}, ++seed, w);
  c.gate = Gate::kLowerBoundSigmoid, c.lower_bound = -1;
  Agree(c, {64, 16}, ++seed, w);
}

TEST(KdaChunked, HeadDim128) {
  Worst w{"KdaChunked.HeadDim128"};
  Case c;
  c.K = c.V = 128, c.H = 2, c.l2norm = true, c.beta_sigmoid = true;
  c.gate = Gate::kLowerBoundSigmoid;
  c.cu_seqlens = {0, 3, 20, 120};
  c.T = 120;
  for (int C : {16, 32, 64}) Agree(c, {C, 16}, 4000 + C, w);
  c.cu_seqlens.clear(), c.T = 90, c.gate = Gate::kSoftplus;
  Agree(c, {64, 16}, 4100, w);
  c.K = 128, c.V = 64, c.gate = Gate::kLogDecay;  // K != V
  Agree(c, {64, 16}, 4200, w);
}

TEST(KdaChunked, SubChunkChoiceIsExactInFloat64) {
  Worst w{"KdaChunked.SubChunkChoiceIsExactInFloat64"};
  Case c;
  c.T = 130, c.H = 2, c.l2norm = true;
  for (int BC : {16, 32, 64}) Agree(c, {64, BC}, 5000 + BC, w);
  Agree(c, {16, 16}, 5100, w);  // C = 16: the anchor is the chunk midpoint itself
  Agree(c, {32, 32}, 5101, w);
}

// The stage intermediates, against direct (unfactored) formulas: what the GPU prepare kernel's
// outputs will be checked against.
TEST(KdaChunked, PrepareIntermediatesMatchDirectFormulas) {
  Case c;
  c.T = 64, c.l2norm = true, c.beta_sigmoid = true, c.gate = Gate::kLowerBoundSigmoid;
  const auto in = MakeRandom(c, 6000);
  const int n = 64, K = c.K;
  const ChunkPrep pr = PrepareChunk(in.p, {64, 16}, 0, n, 0);
  const ChunkTokens t = LoadChunk(in.p, 0, n, 0);
  const double scale = in.p.effective_scale();
  std::vector<double> Aqk(n * n, 0.0), IL(n * n, 0.0);  // direct Aqk and I + L
  for (int i = 0; i < n; ++i)
    for (int j = 0; j <= i; ++j) {
      double sq = 0, sk = 0;
      for (int d = 0; d < K; ++d) {
        const double dec = std::exp2(t.gcum[i * K + d] - t.gcum[j * K + d]);
        sq += t.q[i * K + d] * t.k[j * K + d] * dec;
        sk += t.k[i * K + d] * t.k[j * K + d] * dec;
      }
      Aqk[i * n + j] = scale * sq;
      IL[i * n + j] = j == i ? 1.0 : t.beta[i] * sk;
    }
  EXPECT_LT(RelRms(Aqk, pr.Aqk), 1e-13);
  // Akk (I + L) = I
  double worst = 0;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      double x = 0;
      for (int m = 0; m < n; ++m) x += pr.Akk[i * n + m] * IL[m * n + j];
      worst = std::max(worst, std::fabs(x - (i == j ? 1.0 : 0.0)));
    }
  EXPECT_LT(worst, 1e-12);
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) ASSERT_EQ(pr.Akk[i * n + j], 0.0);
}

// ---- Range of the factored exponentials at the strongest decay the gate allows -------------------

// One chunk of 64 at g = lower_bound = -5 on every channel (the lower-bound gate's limit), in
// float32 as the kernel computes it: G in log2 units, cumsum in float.
struct StrongDecayChunk {
  static constexpr int n = 64, K = 64;
  std::vector<float> q, k, beta, gcum;
  std::vector<double> Aqk_exact;  // float64, unfactored
  StrongDecayChunk() {
    Case c;
    c.T = n, c.K = K, c.V = K;
    auto in = MakeRandom(c, 7000);
    q.assign(in.q.begin(), in.q.end()), k.assign(in.k.begin(), in.k.end());
    beta.assign(in.beta.begin(), in.beta.end());
    gcum.resize(n * K);
    const float b = float(-5.0 * kLog2e);
    for (int i = 0; i < n; ++i)
      for (int d = 0; d < K; ++d) gcum[i * K + d] = (i ? gcum[(i - 1) * K + d] : 0.0f) + b;
    Aqk_exact.assign(n * n, 0.0);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j <= i; ++j) {
        double s = 0;
        for (int d = 0; d < K; ++d)
          s += double(q[i * K + d]) * k[j * K + d] * std::exp2(double(gcum[i * K + d]) - gcum[j * K + d]);
        Aqk_exact[i * n + j] = s;
      }
  }
  // Runs the factored stage in float32 with sub-chunk BC.
  FactorStats Run(int BC, std::vector<float>& Aqk) const {
    Aqk.assign(n * n, 0.0f);
    std::vector<float> L(n * n);
    FactorStats st;
    IntraChunkMatrices<float>(n, K, BC, q.data(), k.data(), beta.data(), gcum.data(), 1.0f,
                              Aqk.data(), L.data(), &st);
    return st;
  }
};

bool AllFinite(const std::vector<float>& x) {
  for (float e : x)
    if (!std::isfinite(e)) return false;
  return true;
}

TEST(KdaChunked, MidpointRecentringStaysFiniteInFloat32AtLowerBoundMinus5) {
  const StrongDecayChunk ch;
  const double fmax_log2 = std::log2(double(std::numeric_limits<float>::max()));  // 128

  // Naive factorisation, anchored at the chunk start: 2^{G_i} . 2^{-G_j}; the column factor of the
  // last row is 2^{64 * 5 * log2 e} = 2^{462}.
  float naive_max = 0;
  long naive_inf = 0;
  for (int j = 0; j < ch.n; ++j)
    for (int d = 0; d < ch.K; ++d) {
      const float f = std::exp2(-ch.gcum[j * ch.K + d]);
      naive_inf += !std::isfinite(f);
      naive_max = std::max(naive_max, -ch.gcum[j * ch.K + d]);
    }
  std::printf("[ range ] start anchor: max exponent %.1f (fp32 max 2^%.0f), %ld infinite factors\n",
              naive_max, fmax_log2, naive_inf);
  EXPECT_GT(naive_max, fmax_log2);
  EXPECT_GT(naive_inf, 0);

  // One anchor at the midpoint of the whole 64-row chunk (BC = C = 64): 2^{32 * 7.21} = 2^{231}.
  std::vector<float> Aqk;
  FactorStats whole = ch.Run(64, Aqk);
  std::printf("[ range ] chunk-midpoint anchor, BC = 64: max exponent %.1f, %ld infinite factors, "
              "Aqk finite: %s\n", whole.max_exponent, whole.nonfinite_factors,
              AllFinite(Aqk) ? "yes" : "no");
  EXPECT_GT(whole.max_exponent, fmax_log2);
  EXPECT_GT(whole.nonfinite_factors, 0);
  EXPECT_FALSE(AllFinite(Aqk));

  // Sub-chunk midpoints (BC = 16, FLA's and our default; BC = 32 also fits): every factor finite and
  // the float32 Aqk accurate to float32 rounding.
  for (int BC : {16, 32}) {
    FactorStats st = ch.Run(BC, Aqk);
    const double bound = (BC / 2) * 5 * kLog2e;
    const double err = RelRms(ch.Aqk_exact, Aqk);
    std::printf("[ range ] sub-chunk midpoint, BC = %d: max exponent %.2f (bound %.2f), %ld infinite "
                "factors; min exponent %.1f, %ld factors underflow to 0 (off-diagonal tiles, "
                "harmless); float32 Aqk rel RMS vs float64 exact %.2g\n",
                BC, st.max_exponent, bound, st.nonfinite_factors, st.min_exponent, st.zero_factors, err);
    EXPECT_EQ(st.nonfinite_factors, 0);
    EXPECT_LE(st.max_exponent, bound + 1e-3);
    EXPECT_LT(st.max_exponent, fmax_log2);
    EXPECT_TRUE(AllFinite(Aqk));
    EXPECT_LT(err, 1e-5);
  }
}

// The same bound through the real pipeline: the lower-bound gate saturated (raw g = 50, so
// g = -5 sigmoid(50) ~ -5), C = 64, the default BC = 16.
TEST(KdaChunked, LowerBoundGateSaturatedKeepsTheExponentBound) {
  Case c;
  c.T = 64, c.gate = Gate::kLowerBoundSigmoid, c.A_log = false, c.dt_bias = false;
  auto in = MakeRandom(c, 8000);
  for (auto& e : in.g) e = 50.0f;
  const ChunkPrep pr = PrepareChunk(in.p, {64, 16}, 0, 64, 0);
  EXPECT_LE(pr.stats.max_exponent, 8 * 5 * kLog2e + 1e-9);
  EXPECT_GT(pr.stats.max_exponent, 8 * 5 * kLog2e - 1e-6);
  const Result ref = RecurrentForward(in.p), chk = ChunkedForward(in.p, {64, 16});
  EXPECT_LT(RelRms(ref.o, chk.o), kTol);
  EXPECT_LT(RelRms(ref.final_state, chk.final_state), kTol);
}

}  // namespace
}  // namespace longhaul::kda
