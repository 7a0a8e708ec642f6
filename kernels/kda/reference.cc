// kda/reference.cc: the recurrent float64 KDA forward (see reference.h for the order of operations).
#include "kda/reference.h"

#include <stdexcept>

namespace longhaul::kda {

Result RecurrentForward(const Problem& p) {
  if (std::string err = Validate(p); !err.empty()) throw std::invalid_argument(err);
  const int H = p.H, K = p.K, V = p.V, N = p.num_seqs();
  const double scale = p.effective_scale();
  Result res;
  res.o.assign(size_t(p.B) * p.T * H * V, 0.0);
  res.final_state.assign(size_t(N) * H * K * V, 0.0);

  std::vector<double> S(size_t(K) * V), q(K), k(K), decay(K), r(V);
  for (int n = 0; n < N; ++n) {
    for (int h = 0; h < H; ++h) {
      const size_t state_off = (size_t(n) * H + h) * K * V;
      for (size_t i = 0; i < S.size(); ++i)
        S[i] = p.initial_state ? double(p.initial_state[state_off + i]) : 0.0;

      for (int64_t t = p.seq_begin(n); t < p.seq_end(n); ++t) {
        const size_t row = size_t(t) * H + h;  // flattened (b*T + t, h)
        LoadRow(p.q + row * K, K, p.l2norm_qk, q.data());
        LoadRow(p.k + row * K, K, p.l2norm_qk, k.data());
        for (int d = 0; d < K; ++d) q[d] *= scale;
        for (int d = 0; d < K; ++d) decay[d] = std::exp(GateLogDecay(p, h, d, p.g[row * K + d]));
        const double b = BetaActivation(p, p.beta[row]);
        const float* vt = p.v + row * V;

        // 1. S <- Diag(exp(g_t)) S
        for (int d = 0; d < K; ++d)
          for (int e = 0; e < V; ++e) S[size_t(d) * V + e] *= decay[d];
        // 2. r = v_t - S^T k_t
        for (int e = 0; e < V; ++e) r[e] = vt[e];
        for (int d = 0; d < K; ++d)
          for (int e = 0; e < V; ++e) r[e] -= k[d] * S[size_t(d) * V + e];
        // 3. S <- S + (b k_t) r^T
        for (int d = 0; d < K; ++d) {
          const double bk = b * k[d];
          for (int e = 0; e < V; ++e) S[size_t(d) * V + e] += bk * r[e];
        }
        // 4. o_t = S^T q_t   (q already scaled)
        double* o = res.o.data() + row * V;
        for (int d = 0; d < K; ++d)
          for (int e = 0; e < V; ++e) o[e] += q[d] * S[size_t(d) * V + e];
      }
      std::copy(S.begin(), S.end(), res.final_state.begin() + state_off);
    }
  }
  return res;
}

}  // namespace longhaul::kda
