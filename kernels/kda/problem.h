// kda/problem.h: one KDA forward problem (shapes, inputs, options) and the pointwise activations
// that FLA's chunk_kda applies in the kernel (gate, L2 norm of q and k, sigmoid of beta).
//
// Uses: the recurrent float64 reference (reference.h), the chunked float64 reference
// (chunked_reference.h), the C API's CPU backend (kda_cpu.cc) and the tests.
//
// Semantics follow FLA `chunk_kda` (see ../../shared/research/kda.md §1):
//   q, k, g  [B, T, H, K]     time-major, contiguous, float (bf16 rounding is the caller's business)
//   v        [B, T, H, V]
//   beta     [B, T, H]
//   o        [B, T, H, V]
//   h0, hT   [N, H, K, V]     the state is stored [K, V] row-major per head: S[k][v]; N = B, or the
//                              number of sequences when cu_seqlens is given (then B must be 1)
// No GVA: q, k, v, g and beta all have the same H.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace longhaul::kda {

// How g becomes the per-channel natural-log decay (<= 0) that multiplies the state's rows.
enum class Gate {
  kLogDecay,           // g is already the log decay
  kLowerBoundSigmoid,  // lower_bound * sigmoid(x), x = g + dt_bias, times exp(A_log) if A_log given
  kSoftplus,           // -exp(A_log) * softplus(g + dt_bias)   (A_log absent: exp(0) = 1)
};

struct Problem {
  int B = 1, T = 0, H = 1, K = 64, V = 64;
  // Varlen: empty, or N+1 offsets 0 = cu[0] <= ... <= cu[N] = T with B == 1. Sequences may be empty.
  std::vector<int64_t> cu_seqlens;

  const float* q = nullptr;
  const float* k = nullptr;
  const float* v = nullptr;
  const float* g = nullptr;
  const float* beta = nullptr;
  const float* A_log = nullptr;          // [H], optional (in-kernel gates only)
  const float* dt_bias = nullptr;        // [H*K], optional (in-kernel gates only); absent = 0
  const float* initial_state = nullptr;  // [N,H,K,V], optional; absent = 0

  double scale = 0;  // <= 0: 1/sqrt(K)
  Gate gate = Gate::kLogDecay;
  double lower_bound = -5;        // kLowerBoundSigmoid only; must be < 0
  bool l2norm_qk = false;         // q, k <- x / sqrt(sum x^2 + 1e-6) over K
  bool beta_sigmoid = false;      // beta <- sigmoid(beta)
  bool allow_neg_eigval = false;  // with beta_sigmoid: beta <- 2 sigmoid(beta)

  int num_seqs() const { return cu_seqlens.empty() ? B : static_cast<int>(cu_seqlens.size()) - 1; }
  // Token range [begin, end) of sequence n in the flattened B*T token axis.
  int64_t seq_begin(int n) const { return cu_seqlens.empty() ? int64_t(n) * T : cu_seqlens[n]; }
  int64_t seq_end(int n) const { return cu_seqlens.empty() ? int64_t(n + 1) * T : cu_seqlens[n + 1]; }
  double effective_scale() const { return scale > 0 ? scale : 1.0 / std::sqrt(double(K)); }
};

// What both references return: float64 output and final state, in the layouts above.
struct Result {
  std::vector<double> o;            // [B,T,H,V]
  std::vector<double> final_state;  // [N,H,K,V], S[k][v]
};

// "" when p is well-formed, else a sentence naming what is wrong.
std::string Validate(const Problem& p);

// ---- pointwise activations (float64), exactly as kda.md §1 and §4 state them -------------------

inline double Sigmoid(double x) {
  // Stable on both sides: never exp of a large positive number.
  return x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x));
}

inline double Softplus(double x) {
  // log(1 + e^x), stable. (torch's softplus returns x itself above 20: a 2e-9 relative difference.)
  return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

// The natural-log decay of key channel d of head h for the raw gate value graw.
inline double GateLogDecay(const Problem& p, int h, int d, double graw) {
  if (p.gate == Gate::kLogDecay) return graw;
  const double x = graw + (p.dt_bias ? double(p.dt_bias[int64_t(h) * p.K + d]) : 0.0);
  const double a = p.A_log ? std::exp(double(p.A_log[h])) : 1.0;
  if (p.gate == Gate::kLowerBoundSigmoid) return p.lower_bound * Sigmoid(a * x);
  return -a * Softplus(x);  // Gate::kSoftplus
}

inline double BetaActivation(const Problem& p, double b) {
  if (!p.beta_sigmoid) return b;
  return (p.allow_neg_eigval ? 2.0 : 1.0) * Sigmoid(b);
}

// Copies n floats into out as doubles, L2-normalised (x / sqrt(sum x^2 + 1e-6)) if asked.
inline void LoadRow(const float* x, int n, bool l2norm, double* out) {
  double ss = 0;
  for (int i = 0; i < n; ++i) {
    out[i] = x[i];
    ss += out[i] * out[i];
  }
  if (!l2norm) return;
  const double r = 1.0 / std::sqrt(ss + 1e-6);
  for (int i = 0; i < n; ++i) out[i] *= r;
}

}  // namespace longhaul::kda
