// kda/kda_testing.h: random KDA problems with owned inputs, and FLA's error metric, for the tests.
//
// Uses: reference_test.cc, chunked_reference_test.cc, kda_cpu_test.cc; scan_step_probe.cu (RelRms).
#pragma once

#include <cmath>
#include <random>
#include <vector>

#include "kda/problem.h"

namespace longhaul::kda::testing {

struct Case {
  int B = 1, T = 64, H = 1, K = 64, V = 64;
  std::vector<int64_t> cu_seqlens;
  Gate gate = Gate::kLogDecay;
  bool l2norm = false, beta_sigmoid = false, initial_state = true;
  bool A_log = true, dt_bias = true;  // in-kernel gates only
  bool allow_neg_eigval = false;
  double lower_bound = -5;
};

// A Problem whose arrays it owns. Inputs follow FLA's tests: q, k ~ randn (unit-normalised here when
// the kernel does not normalise them), v ~ randn, log-decay g = logsigmoid(randn) clamped to
// [-5, 0], raw g and dt_bias ~ randn, A_log ~ 0.5 randn, beta = sigmoid(randn) (raw randn when
// the kernel applies the sigmoid), h0 ~ randn.
struct Owned {
  std::vector<float> q, k, v, g, beta, A_log, dt_bias, h0;
  Problem p;
};

inline Owned MakeRandom(const Case& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd;
  auto randn = [&](size_t n) {
    std::vector<float> x(n);
    for (auto& e : x) e = float(nd(rng));
    return x;
  };
  auto unit_rows = [](std::vector<float>& x, int D) {
    for (size_t r = 0; r < x.size() / D; ++r) {
      double ss = 0;
      for (int d = 0; d < D; ++d) ss += double(x[r * D + d]) * x[r * D + d];
      for (int d = 0; d < D; ++d) x[r * D + d] = float(x[r * D + d] / std::sqrt(ss));
    }
  };
  Owned o;
  const size_t BT = size_t(c.B) * c.T;
  o.q = randn(BT * c.H * c.K);
  o.k = randn(BT * c.H * c.K);
  if (!c.l2norm) unit_rows(o.q, c.K), unit_rows(o.k, c.K);
  o.v = randn(BT * c.H * c.V);
  o.g = randn(BT * c.H * c.K);
  if (c.gate == Gate::kLogDecay)
    for (auto& e : o.g) e = float(std::max(-5.0, -Softplus(-double(e))));  // logsigmoid, clamped
  o.beta = randn(BT * c.H);
  if (!c.beta_sigmoid)
    for (auto& e : o.beta) e = float(Sigmoid(e));
  const int N = c.cu_seqlens.empty() ? c.B : int(c.cu_seqlens.size()) - 1;
  if (c.initial_state) o.h0 = randn(size_t(N) * c.H * c.K * c.V);
  const bool in_kernel_gate = c.gate != Gate::kLogDecay;
  if (in_kernel_gate && c.A_log) {
    o.A_log = randn(c.H);
    for (auto& e : o.A_log) e *= 0.5f;
  }
  if (in_kernel_gate && c.dt_bias) o.dt_bias = randn(size_t(c.H) * c.K);

  Problem& p = o.p;
  p.B = c.B, p.T = c.T, p.H = c.H, p.K = c.K, p.V = c.V;
  p.cu_seqlens = c.cu_seqlens;
  p.q = o.q.data(), p.k = o.k.data(), p.v = o.v.data(), p.g = o.g.data(), p.beta = o.beta.data();
  p.A_log = o.A_log.empty() ? nullptr : o.A_log.data();
  p.dt_bias = o.dt_bias.empty() ? nullptr : o.dt_bias.data();
  p.initial_state = o.h0.empty() ? nullptr : o.h0.data();
  p.gate = c.gate;
  p.lower_bound = c.lower_bound;
  p.l2norm_qk = c.l2norm;
  p.beta_sigmoid = c.beta_sigmoid;
  p.allow_neg_eigval = c.allow_neg_eigval;
  return o;
}

// FLA's metric: RMS(ref - x) / RMS(ref).
template <typename A, typename B>
double RelRms(const std::vector<A>& ref, const std::vector<B>& x) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = double(ref[i]) - double(x[i]);
    num += d * d;
    den += double(ref[i]) * double(ref[i]);
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace longhaul::kda::testing
