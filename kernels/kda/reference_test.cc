// Hand-computed KDA cases, run through the recurrent reference, the chunked reference and the C API's
// CPU backend; and the pointwise activations against hand values.
#include <gtest/gtest.h>

#include <cmath>

#include "kda/chunked_reference.h"
#include "kda/kda.h"
#include "kda/reference.h"

namespace longhaul::kda {
namespace {

// T = 2, K = V = 1, h0 = 2, scale = 1:
//   t=0: S = 2 * 0.5 = 1;    r = 3 - 1*1 = 2;      S = 1 + 0.5*1*2 = 2;   o0 = 1 * 2 = 2
//   t=1: S = 2 * 0.25 = 0.5; r = 1 - 1*0.5 = 0.5;  S = 0.5 + 1*1*0.5 = 1; o1 = 3 * 1 = 3
struct Tiny1 {
  float q[2] = {1, 3}, k[2] = {1, 1}, v[2] = {3, 1};
  float g[2] = {float(std::log(0.5)), float(std::log(0.25))}, beta[2] = {0.5f, 1.0f}, h0[1] = {2};
  Problem p;
  Tiny1() {
    p.B = 1, p.T = 2, p.H = 1, p.K = 1, p.V = 1, p.scale = 1;
    p.q = q, p.k = k, p.v = v, p.g = g, p.beta = beta, p.initial_state = h0;
  }
};

TEST(KdaReference, HandComputedScalarTwoTokens) {
  Tiny1 c;
  for (const Result& r : {RecurrentForward(c.p), ChunkedForward(c.p, {1, 1}),
                          ChunkedForward(c.p, {2, 2}), ChunkedForward(c.p, {16, 16}),
                          ChunkedForward(c.p, {64, 16})}) {
    ASSERT_EQ(r.o.size(), 2u);
    EXPECT_NEAR(r.o[0], 2.0, 1e-6);  // the inputs are floats: log(0.5) etc. round at 1e-8
    EXPECT_NEAR(r.o[1], 3.0, 1e-6);
    EXPECT_NEAR(r.final_state[0], 1.0, 1e-6);
  }
}

// T = 1, K = V = 2: tests the [K,V] layout. h0 = I, decay rows by (0.5, 1), k = (0.6, 0.8),
// v = (1, 2), beta = 0.5, q = (1, 0), scale = 1:
//   S = [[0.5, 0], [0, 1]];  k^T S = (0.3, 0.8);  r = (0.7, 1.2)
//   S += 0.5 k r^T = [[0.21, 0.36], [0.28, 0.48]]  ->  S = [[0.71, 0.36], [0.28, 1.48]]
//   o = S^T q = row 0 of S = (0.71, 0.36)
TEST(KdaReference, HandComputedTwoByTwoStateLayout) {
  float q[2] = {1, 0}, k[2] = {0.6f, 0.8f}, v[2] = {1, 2}, g[2] = {float(std::log(0.5)), 0};
  float beta[1] = {0.5f}, h0[4] = {1, 0, 0, 1};
  Problem p;
  p.B = 1, p.T = 1, p.H = 1, p.K = 2, p.V = 2, p.scale = 1;
  p.q = q, p.k = k, p.v = v, p.g = g, p.beta = beta, p.initial_state = h0;
  const double S[4] = {0.71, 0.36, 0.28, 1.48};
  for (const Result& r : {RecurrentForward(p), ChunkedForward(p, {16, 16})}) {
    EXPECT_NEAR(r.o[0], 0.71, 1e-6);
    EXPECT_NEAR(r.o[1], 0.36, 1e-6);
    for (int i = 0; i < 4; ++i) EXPECT_NEAR(r.final_state[i], S[i], 1e-6) << i;
  }

  // The same through the C API, fp32 in and out, and with the state stored V-first.
  kda_fwd_params a;
  kda_fwd_params_init(&a);
  a.B = 1, a.T = 1, a.H = 1, a.K = 2, a.V = 2, a.scale = 1;
  a.in_dtype = a.g_dtype = a.beta_dtype = a.out_dtype = KDA_DTYPE_F32;
  kda_fwd_params_set_contiguous(&a);
  float o[2], hT[4];
  a.q = q, a.k = k, a.v = v, a.g = g, a.beta = beta, a.o = o, a.initial_state = h0, a.final_state = hT;
  ASSERT_EQ(kda_fwd_cpu(&a, nullptr), KDA_OK) << kda_last_error();
  EXPECT_NEAR(o[0], 0.71, 1e-6);
  EXPECT_NEAR(o[1], 0.36, 1e-6);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(hT[i], S[i], 1e-6) << i;
  a.flags = KDA_FLAG_STATE_V_FIRST;  // h0 = I is its own transpose
  ASSERT_EQ(kda_fwd_cpu(&a, nullptr), KDA_OK) << kda_last_error();
  const double St[4] = {0.71, 0.28, 0.36, 1.48};
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(hT[i], St[i], 1e-6) << i;
}

TEST(KdaReference, Activations) {
  Problem p;
  p.K = 1;
  const float A_log[1] = {float(std::log(2.0))}, dt[1] = {0.5f};
  p.A_log = A_log, p.dt_bias = dt;
  // lower_bound * sigmoid(exp(A_log) (g + dt_bias)) = -5 sigmoid(2 * 1)
  p.gate = Gate::kLowerBoundSigmoid, p.lower_bound = -5;
  EXPECT_NEAR(GateLogDecay(p, 0, 0, 0.5), -5 * 0.8807970779778823, 1e-7);
  p.A_log = nullptr;  // lower_bound * sigmoid(g + dt_bias) = -5 sigmoid(1)
  EXPECT_NEAR(GateLogDecay(p, 0, 0, 0.5), -5 * 0.7310585786300049, 1e-12);
  // -exp(A_log) softplus(g + dt_bias) = -2 log(1 + e^0) = -2 ln 2
  p.gate = Gate::kSoftplus, p.A_log = A_log;
  EXPECT_NEAR(GateLogDecay(p, 0, 0, -0.5), -2 * std::log(2.0), 1e-7);
  EXPECT_NEAR(Softplus(-800), 0, 1e-300);
  EXPECT_DOUBLE_EQ(Softplus(800), 800);
  EXPECT_DOUBLE_EQ(Sigmoid(-800), 0);
  p.beta_sigmoid = true;
  EXPECT_DOUBLE_EQ(BetaActivation(p, 0), 0.5);
  p.allow_neg_eigval = true;
  EXPECT_DOUBLE_EQ(BetaActivation(p, 0), 1.0);
  const float x[2] = {3, 4};
  double y[2];
  LoadRow(x, 2, true, y);
  EXPECT_NEAR(y[0], 3 / std::sqrt(25 + 1e-6), 1e-15);
  EXPECT_NEAR(y[1], 4 / std::sqrt(25 + 1e-6), 1e-15);
}

TEST(KdaReference, RejectsMalformedProblems) {
  Tiny1 c;
  c.p.cu_seqlens = {0, 1};  // ends before T = 2
  EXPECT_THROW(RecurrentForward(c.p), std::invalid_argument);
  EXPECT_THROW(ChunkedForward(c.p), std::invalid_argument);
  c.p.cu_seqlens = {0, 2};
  EXPECT_NO_THROW(RecurrentForward(c.p));
  EXPECT_THROW(ChunkedForward(c.p, {24, 16}), std::invalid_argument);  // 16 does not divide 24
}

}  // namespace
}  // namespace longhaul::kda
