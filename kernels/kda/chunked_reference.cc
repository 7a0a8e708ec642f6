// kda/chunked_reference.cc: the chunked float64 KDA forward (math and recentring: see the header).
#include "kda/chunked_reference.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace longhaul::kda {
namespace {

constexpr double kLog2e = 1.4426950408889634;  // 1 / ln 2: natural-log decay -> log2 units

// C[m,p] += A[m,k] B[k,p], all row-major.
void MatMulAdd(int m, int kk, int pp, const double* A, const double* B, double* C) {
  for (int i = 0; i < m; ++i)
    for (int l = 0; l < kk; ++l) {
      const double a = A[size_t(i) * kk + l];
      if (a == 0) continue;
      for (int j = 0; j < pp; ++j) C[size_t(i) * pp + j] += a * B[size_t(l) * pp + j];
    }
}

template <typename F>
F Factor(F exponent, FactorStats* st) {
  const F f = std::exp2(exponent);
  if (st) {
    st->max_exponent = std::max(st->max_exponent, double(exponent));
    st->min_exponent = std::min(st->min_exponent, double(exponent));
    if (!std::isfinite(f)) ++st->nonfinite_factors;
    if (f == F(0)) ++st->zero_factors;
  }
  return f;
}

}  // namespace

std::string Validate(const ChunkedOptions& o) {
  if (o.chunk_size < 1 || o.sub_chunk < 1) return "chunk_size and sub_chunk must be >= 1";
  if (o.chunk_size % o.sub_chunk != 0) return "sub_chunk must divide chunk_size";
  return "";
}

// ---- Stage 1a: load and activate one chunk's tokens -----------------------------------------------
ChunkTokens LoadChunk(const Problem& p, int64_t t0, int n, int h) {
  const int H = p.H, K = p.K, V = p.V;
  ChunkTokens c;
  c.n = n;
  c.q.resize(size_t(n) * K);
  c.k.resize(size_t(n) * K);
  c.v.resize(size_t(n) * V);
  c.beta.resize(n);
  c.gcum.resize(size_t(n) * K);
  for (int i = 0; i < n; ++i) {
    const size_t row = size_t(t0 + i) * H + h;
    LoadRow(p.q + row * K, K, p.l2norm_qk, &c.q[size_t(i) * K]);
    LoadRow(p.k + row * K, K, p.l2norm_qk, &c.k[size_t(i) * K]);
    for (int e = 0; e < V; ++e) c.v[size_t(i) * V + e] = p.v[row * V + e];
    c.beta[i] = BetaActivation(p, p.beta[row]);
    // G_i = G_{i-1} + log2(e) * g_i, G_{-1} = 0: the chunk-local inclusive cumsum in log2 units.
    for (int d = 0; d < K; ++d) {
      const double b = kLog2e * GateLogDecay(p, h, d, p.g[row * K + d]);
      c.gcum[size_t(i) * K + d] = (i ? c.gcum[size_t(i - 1) * K + d] : 0.0) + b;
    }
  }
  return c;
}

// ---- Stage 1b: Aqk and L by the recentred factorisation --------------------------------------------
template <typename F>
void IntraChunkMatrices(int n, int K, int BC, const F* q, const F* k, const F* beta, const F* gcum,
                        F scale, F* Aqk, F* L, FactorStats* st) {
  std::fill(Aqk, Aqk + size_t(n) * n, F(0));
  std::fill(L, L + size_t(n) * n, F(0));
  const int nsub = (n + BC - 1) / BC;
  // Factored operands of one tile: qf = q . 2^{G - a} and kf_row = k . 2^{G - a} for the tile's
  // rows, kf_col = k . 2^{a - G} for its columns; each [BC,K].
  std::vector<F> qf(size_t(BC) * K), kr(size_t(BC) * K), kc(size_t(BC) * K);
  for (int r = 0; r < nsub; ++r) {
    const int r0 = r * BC, br = std::min(BC, n - r0);
    for (int c = 0; c <= r; ++c) {
      const int c0 = c * BC, bc = std::min(BC, n - c0);
      // The anchor row: the diagonal tile's midpoint (clamped into a short tail sub-chunk), or the
      // first row of the row sub-chunk for an off-diagonal tile (then every factor is <= 1).
      const int a = (c == r) ? r0 + std::min(BC / 2, br - 1) : r0;
      const F* ga = gcum + size_t(a) * K;
      for (int i = 0; i < br; ++i)
        for (int d = 0; d < K; ++d) {
          const size_t x = size_t(r0 + i) * K + d;
          const F f = Factor<F>(gcum[x] - ga[d], st);  // 2^{G_i - a}
          qf[size_t(i) * K + d] = q[x] * f;
          kr[size_t(i) * K + d] = k[x] * f;
        }
      for (int j = 0; j < bc; ++j)
        for (int d = 0; d < K; ++d) {
          const size_t x = size_t(c0 + j) * K + d;
          kc[size_t(j) * K + d] = k[x] * Factor<F>(ga[d] - gcum[x], st);  // 2^{a - G_j}
        }
      // The tile's two products (an MMA each on the GPU). On a diagonal tile only j <= i (Aqk) and
      // j < i (L) are kept, chosen by the loop bounds: a select, so the huge masked half never
      // enters an operand.
      for (int i = 0; i < br; ++i) {
        const int jend = (c == r) ? i + 1 : bc;
        for (int j = 0; j < jend; ++j) {
          F sq = 0, sk = 0;
          for (int d = 0; d < K; ++d) {
            sq += qf[size_t(i) * K + d] * kc[size_t(j) * K + d];
            sk += kr[size_t(i) * K + d] * kc[size_t(j) * K + d];
          }
          const size_t ij = size_t(r0 + i) * n + (c0 + j);
          Aqk[ij] = scale * sq;                                           // scale q_i.k_j 2^{G_i-G_j}
          if (c != r || j < i) L[ij] = beta[r0 + i] * sk;                 // beta_i k_i.k_j 2^{G_i-G_j}
        }
      }
    }
  }
}

template void IntraChunkMatrices<float>(int, int, int, const float*, const float*, const float*,
                                        const float*, float, float*, float*, FactorStats*);
template void IntraChunkMatrices<double>(int, int, int, const double*, const double*, const double*,
                                         const double*, double, double*, double*, FactorStats*);

// ---- Stage 1c: (I + L)^{-1} ------------------------------------------------------------------------
void InvertUnitLower(int n, int BC, const double* L, double* Akk) {
  std::fill(Akk, Akk + size_t(n) * n, 0.0);
  const int nsub = (n + BC - 1) / BC;
  auto at = [n](double* M, int i, int j) -> double& { return M[size_t(i) * n + j]; };
  auto lt = [n, L](int i, int j) { return L[size_t(i) * n + j]; };
  // Diagonal blocks: X = (I + L_rr)^{-1} row by row, X[i,:] = e_i - sum_{j<i} L[i,j] X[j,:].
  for (int r = 0; r < nsub; ++r) {
    const int r0 = r * BC, br = std::min(BC, n - r0);
    for (int i = r0; i < r0 + br; ++i) {
      at(Akk, i, i) = 1.0;
      for (int j = r0; j < i; ++j) {
        const double l = lt(i, j);
        for (int c = r0; c <= j; ++c) at(Akk, i, c) -= l * at(Akk, j, c);
      }
    }
  }
  // Off-diagonal blocks, row block by row block: Ai_rc = -Ai_rr sum_{c <= s < r} L_rs Ai_sc.
  std::vector<double> acc;
  for (int r = 1; r < nsub; ++r) {
    const int r0 = r * BC, br = std::min(BC, n - r0);
    for (int c = 0; c < r; ++c) {
      const int c0 = c * BC;  // column blocks before r are full
      acc.assign(size_t(br) * BC, 0.0);
      for (int i = 0; i < br; ++i)
        for (int s = c0; s < r0; ++s) {
          const double l = lt(r0 + i, s);
          if (l == 0) continue;
          for (int j = 0; j < BC; ++j) acc[size_t(i) * BC + j] += l * at(Akk, s, c0 + j);
        }
      for (int i = 0; i < br; ++i)
        for (int j = 0; j < BC; ++j) {
          double x = 0;
          for (int m = 0; m <= i; ++m) x += at(Akk, r0 + i, r0 + m) * acc[size_t(m) * BC + j];
          at(Akk, r0 + i, c0 + j) = -x;
        }
    }
  }
}

// ---- Kernel 1: prepare --------------------------------------------------------------------------
ChunkPrep PrepareChunk(const Problem& p, const ChunkedOptions& opt, int64_t t0, int n, int h) {
  const int K = p.K, V = p.V;
  const ChunkTokens t = LoadChunk(p, t0, n, h);
  const double scale = p.effective_scale();
  ChunkPrep c;
  c.n = n;
  c.Aqk.resize(size_t(n) * n);
  c.Akk.resize(size_t(n) * n);
  std::vector<double> L(size_t(n) * n);
  IntraChunkMatrices<double>(n, K, opt.sub_chunk, t.q.data(), t.k.data(), t.beta.data(),
                             t.gcum.data(), scale, c.Aqk.data(), L.data(), &c.stats);
  InvertUnitLower(n, opt.sub_chunk, L.data(), c.Akk.data());

  // Right-hand sides, all with factors <= 1: beta . K . Gamma and beta . V.
  std::vector<double> bkg(size_t(n) * K), bv(size_t(n) * V);
  c.qg.resize(size_t(n) * K);
  c.kg.resize(size_t(n) * K);
  c.gamma.resize(K);
  const double* glast = t.gcum.data() + size_t(n - 1) * K;
  for (int i = 0; i < n; ++i) {
    for (int d = 0; d < K; ++d) {
      const size_t x = size_t(i) * K + d;
      const double Gamma = std::exp2(t.gcum[x]);                 // 2^{G_i}            <= 1
      bkg[x] = t.beta[i] * t.k[x] * Gamma;                       // beta_i k_i Gamma_i
      c.qg[x] = scale * t.q[x] * Gamma;                          // scale q_i Gamma_i
      c.kg[x] = t.k[x] * std::exp2(glast[d] - t.gcum[x]);        // k_i 2^{G_{n-1}-G_i} <= 1
    }
    for (int e = 0; e < V; ++e) bv[size_t(i) * V + e] = t.beta[i] * t.v[size_t(i) * V + e];
  }
  for (int d = 0; d < K; ++d) c.gamma[d] = std::exp2(glast[d]);  // 2^{G_{n-1}}
  // W = Akk (beta . K . Gamma), U = Akk (beta . V)
  c.W.assign(size_t(n) * K, 0.0);
  c.U.assign(size_t(n) * V, 0.0);
  MatMulAdd(n, n, K, c.Akk.data(), bkg.data(), c.W.data());
  MatMulAdd(n, n, V, c.Akk.data(), bv.data(), c.U.data());
  return c;
}

// ---- Kernel 2: scan, one chunk ------------------------------------------------------------------
void ScanChunk(const ChunkPrep& c, int K, int V, double* S, double* o, size_t o_row_stride) {
  const int n = c.n;
  // V_new = U - W S0                                             [n,V]
  std::vector<double> vnew(c.U);
  std::vector<double> WS(size_t(n) * V, 0.0);
  MatMulAdd(n, K, V, c.W.data(), S, WS.data());
  for (size_t x = 0; x < vnew.size(); ++x) vnew[x] -= WS[x];
  // O = (scale Q . Gamma) S0 + Aqk V_new                         [n,V]
  std::vector<double> O(size_t(n) * V, 0.0);
  MatMulAdd(n, K, V, c.qg.data(), S, O.data());
  MatMulAdd(n, n, V, c.Aqk.data(), vnew.data(), O.data());
  for (int i = 0; i < n; ++i)
    std::copy(O.begin() + size_t(i) * V, O.begin() + size_t(i + 1) * V, o + size_t(i) * o_row_stride);
  // S <- Diag(gamma) S0 + kg^T V_new                             [K,V]
  for (int d = 0; d < K; ++d)
    for (int e = 0; e < V; ++e) S[size_t(d) * V + e] *= c.gamma[d];
  for (int i = 0; i < n; ++i)
    for (int d = 0; d < K; ++d) {
      const double kd = c.kg[size_t(i) * K + d];
      for (int e = 0; e < V; ++e) S[size_t(d) * V + e] += kd * vnew[size_t(i) * V + e];
    }
}

// ---- The whole forward ---------------------------------------------------------------------------
Result ChunkedForward(const Problem& p, const ChunkedOptions& opt) {
  if (std::string err = Validate(p); !err.empty()) throw std::invalid_argument(err);
  if (std::string err = Validate(opt); !err.empty()) throw std::invalid_argument(err);
  const int H = p.H, K = p.K, V = p.V, N = p.num_seqs(), C = opt.chunk_size;
  Result res;
  res.o.assign(size_t(p.B) * p.T * H * V, 0.0);
  res.final_state.assign(size_t(N) * H * K * V, 0.0);
  std::vector<double> S(size_t(K) * V);
  for (int n = 0; n < N; ++n)
    for (int h = 0; h < H; ++h) {
      const size_t state_off = (size_t(n) * H + h) * K * V;
      for (size_t i = 0; i < S.size(); ++i)
        S[i] = p.initial_state ? double(p.initial_state[state_off + i]) : 0.0;
      // Chunks never cross a sequence boundary; the last one may be short.
      for (int64_t t0 = p.seq_begin(n); t0 < p.seq_end(n); t0 += C) {
        const int len = int(std::min<int64_t>(C, p.seq_end(n) - t0));
        const ChunkPrep c = PrepareChunk(p, opt, t0, len, h);
        ScanChunk(c, K, V, S.data(), res.o.data() + (size_t(t0) * H + h) * V, size_t(H) * V);
      }
      std::copy(S.begin(), S.end(), res.final_state.begin() + state_off);
    }
  return res;
}

}  // namespace longhaul::kda
