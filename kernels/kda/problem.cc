// kda/problem.cc: validation of a KDA forward problem.
#include "kda/problem.h"

namespace longhaul::kda {

std::string Validate(const Problem& p) {
  if (p.B < 1 || p.T < 0 || p.H < 1 || p.K < 1 || p.V < 1)
    return "shape must have B, H, K, V >= 1 and T >= 0";
  // (No tokens: nothing is read, and a backend's gathered copies of them are empty.)
  if (int64_t(p.B) * p.T > 0 && (!p.q || !p.k || !p.v || !p.g || !p.beta)) return "q, k, v, g and beta are required";
  if (!p.cu_seqlens.empty()) {
    if (p.B != 1) return "varlen (cu_seqlens) needs B == 1";
    if (p.cu_seqlens.size() < 2) return "cu_seqlens needs at least 2 entries";
    if (p.cu_seqlens.front() != 0) return "cu_seqlens[0] must be 0";
    if (p.cu_seqlens.back() != p.T) return "cu_seqlens[N] must equal T";
    for (size_t i = 1; i < p.cu_seqlens.size(); ++i)
      if (p.cu_seqlens[i] < p.cu_seqlens[i - 1]) return "cu_seqlens must be non-decreasing";
  }
  if (p.gate == Gate::kLowerBoundSigmoid && !(p.lower_bound < 0))
    return "lower_bound must be < 0";
  if (p.gate == Gate::kLogDecay && (p.A_log || p.dt_bias))
    return "A_log and dt_bias apply only to in-kernel gates";
  if (p.allow_neg_eigval && !p.beta_sigmoid) return "allow_neg_eigval needs beta_sigmoid";
  return "";
}

}  // namespace longhaul::kda
