// kda/reference.h: the float64 CPU ground truth of the KDA forward, in its recurrent (token by
// token) form, exact to FLA `chunk_kda` semantics (FLA's naive_recurrent_kda, in float64).
//
// Uses: the oracle that the chunked reference (chunked_reference.h), the C API's CPU backend and
// the future CUDA kernels are all tested against. It is O(T*K*V) per head and makes no attempt
// to be fast.
//
// Order of operations, per sequence n and head h, S = h0[n,h] (or 0), S is [K,V] (S[k][v]):
//   pre:  q_t, k_t <- l2norm(q_t), l2norm(k_t)       if l2norm_qk   (x / sqrt(sum x^2 + 1e-6))
//         g_t      <- gate activation of g_t          (problem.h: GateLogDecay), natural log
//         b_t      <- sigmoid(beta_t) (x2 if allow_neg_eigval)      if beta_sigmoid
//         q_t      <- scale * q_t
//   for t in the sequence, in order:
//     1. S[k][:] *= exp(g_t[k])                       decay the rows (key channels)
//     2. r[v]     = v_t[v] - sum_k k_t[k] S[k][v]     residual against the decayed state
//     3. S[k][v] += b_t k_t[k] r[v]                    delta-rule update
//     4. o_t[v]   = sum_k q_t[k] S[k][v]               the output includes token t itself
//   hT[n,h] = S.
#pragma once

#include "kda/problem.h"

namespace longhaul::kda {

// Requires Validate(p) == "" (checked: throws std::invalid_argument otherwise).
Result RecurrentForward(const Problem& p);

}  // namespace longhaul::kda
