// kda/chunked_reference.h: the float64 CPU implementation of the chunked KDA forward that our CUDA
// kernels implement, stage for stage, with the same function boundaries as the two-kernel split:
//
//   kernel 1, "prepare" (chunk-parallel, needs no state):  PrepareChunk = LoadChunk (gate, chunk-local
//             cumsum in log2 units, L2 norm, beta) -> IntraChunkMatrices (Aqk, L; factored with the
//             recentred decay) -> InvertUnitLower ((I+L)^-1) -> W, U, qg, kg, gamma
//   kernel 2, "scan"    (sequential over chunks, carries the state S):  ScanChunk
//
// Uses: tested against the recurrent ground truth (reference.h) to ~1e-10; the CPU backend of the C
// API (kda_cpu.cc); the oracle for the GPU kernels' intermediates (Aqk, Akk, W, U, per-chunk state).
//
// ---- The math (per sequence, head, and chunk of n <= C rows starting at token t0) --------------
// Log2 units. b_i[d] = log2(e) * g_i[d] <= 0 is token i's log2 decay of key channel d (after the
// gate activation), and
//     G_i[d] = sum_{s <= i} b_s[d]          (inclusive, reset at every chunk and sequence start)
// so 0 >= G_0 >= G_1 >= ... >= G_{n-1}, Gamma_i = 2^{G_i} <= 1, and the decay from after token j
// through token i is 2^{G_i - G_j}. With S0 the state ([K,V]) at the chunk start:
//     Aqk[i,j] = scale * sum_d q_i[d] k_j[d] 2^{G_i[d] - G_j[d]}        j <= i   (0 above)
//     L[i,j]   = beta_i * sum_d k_i[d] k_j[d] 2^{G_i[d] - G_j[d]}       j <  i   (0 on and above)
//     Akk      = (I + L)^{-1}                                           unit lower triangular
//     W        = Akk (beta . K . Gamma)     [n,K]      U = Akk (beta . V)     [n,V]
//   scan:
//     V_new    = U - W S0                   [n,V]      beta_i times row i's delta residual
//     O        = (scale Q . Gamma) S0 + Aqk V_new
//     S_n      = Diag(Gamma_{n-1}) S0 + (K . 2^{G_{n-1} - G})^T V_new
// Why (derivation): unrolling the recurrence (reference.h) inside the chunk, row j's update is
// u_j = beta_j (v_j - k_j^T Diag(2^{b_j}) S_{j-1}) and Diag(2^{b_j}) S_{j-1} = Diag(Gamma_j) S0 +
// sum_{l<j} Diag(2^{G_j - G_l}) k_l u_l^T, hence (I + L) u = beta V - beta (K . Gamma) S0, i.e.
// u = U - W S0; then o_i = scale q_i^T S_i expands into the two terms of O, and S_n likewise.
//
// ---- Recentring: which exponent goes where, and why it stays bounded ---------------------------
// A tensor-core kernel computes Aqk and L as matrix products, so 2^{G_i - G_j} (inside the sum over
// d) must be split into a row factor and a column factor with one anchor a[d] per tile:
//     2^{G_i - G_j} = 2^{G_i - a} * 2^{a - G_j}   ->   (q_i . 2^{G_i - a}) . (k_j . 2^{a - G_j})
// The chunk is cut into sub-chunks of BC rows (sub_chunk; BC = C is allowed), giving BC x BC tiles:
//   - diagonal tile of sub-chunk s (rows and columns in [s0, s0+bc)): a = G_m at its MIDPOINT row
//     m = s0 + min(BC/2, bc-1). With the gate bounded, |g| <= lambda nats a token (lower-bound gate:
//     lambda = -lower_bound), every factor's exponent is bounded: |G_i - G_m| <= (BC/2) lambda
//     log2(e). BC = 16, lambda = 5: 57.7 < 127, so both factors are finite in fp32/tf32/bf16 (8-bit
//     exponents); valid entries (j <= i) multiply to 2^{G_i - G_j} <= 1. The masked upper
//     triangle (j > i) can reach 2^{BC lambda log2 e}: mask it by select, never by a multiply.
//   - off-diagonal tile (row sub-chunk r > column sub-chunk c): a = G_{r0}, the FIRST row of the row
//     sub-chunk. Then 2^{G_i - G_{r0}} <= 1 (i >= r0) and 2^{G_{r0} - G_j} <= 1 (j < r0): nothing
//     can overflow; a factor that underflows to 0 stands for a true product smaller still.
//   - W and qg use Gamma_i = 2^{G_i} <= 1 (start anchor); kg and the state decay use
//     2^{G_{n-1} - G_i} <= 1 (end anchor): none needs recentring.
// A single anchor per chunk is not enough at C = 64: the chunk midpoint leaves 32 lambda log2(e) =
// 230.8 (lambda = 5) and the chunk start up to 64 lambda log2(e) = 461.7, both past fp32's 2^128. The
// midpoint of a span of BC rows is safe in fp32 while BC <= 2 * 127 / (lambda log2 e) = 35 at
// lambda = 5: with C <= 32 the chunk midpoint itself will do (BC = C); with C = 64, BC = 16 or 32.
// Unbounded gates (softplus, an unclamped log decay) have no lambda: exact in float64 here, but an
// fp32 kernel must bound g (or compute the diagonal tiles unfactored) there.
//
// ---- Layouts ------------------------------------------------------------------------------------
// All matrices row-major. S is [K,V] (S[k][v]). Tail chunks simply have n < C rows.
#pragma once

#include <string>
#include <vector>

#include "kda/problem.h"

namespace longhaul::kda {

struct ChunkedOptions {
  int chunk_size = 64;  // C
  int sub_chunk = 16;   // BC: the tile of the factorisation; must divide C
};

// "" when well-formed.
std::string Validate(const ChunkedOptions& o);

// Stage 1a: one chunk's tokens for one head, activated: what the prepare kernel loads.
struct ChunkTokens {
  int n = 0;                  // rows (<= C)
  std::vector<double> q, k;   // [n,K], L2-normalised if asked, q NOT scaled
  std::vector<double> v;      // [n,V]
  std::vector<double> beta;   // [n], activated
  std::vector<double> gcum;   // [n,K], G in log2 units (see above)
};
ChunkTokens LoadChunk(const Problem& p, int64_t t0, int n, int h);

// Diagnostics of the factorisation: the largest and smallest exponents handed to exp2 (the largest
// is the overflow risk; negative ones can only underflow) and counts of factors that came out
// infinite or zero in the arithmetic type F.
struct FactorStats {
  double max_exponent = 0;
  double min_exponent = 0;
  long nonfinite_factors = 0;
  long zero_factors = 0;
};

// Stage 1b: Aqk (scale folded, zero above the diagonal) and L (beta_i folded, strictly lower), both
// [n,n], by the recentred factorisation above. Templated on the arithmetic type so that a test can
// run the very same code in float32, as the kernel will. Instantiated for float and double.
template <typename F>
void IntraChunkMatrices(int n, int K, int sub_chunk, const F* q, const F* k, const F* beta,
                        const F* gcum, F scale, F* Aqk, F* L, FactorStats* stats);

// Stage 1c: Akk = (I + L)^{-1} for strictly lower L [n,n]: each BC x BC diagonal block by forward
// substitution, then the off-diagonal blocks by block forward substitution (as a kernel would).
void InvertUnitLower(int n, int sub_chunk, const double* L, double* Akk);

// Everything the prepare kernel writes for one (chunk, head) and the scan kernel reads.
struct ChunkPrep {
  int n = 0;
  std::vector<double> Aqk;    // [n,n]  scale folded, inclusive lower triangle
  std::vector<double> Akk;    // [n,n]  (I+L)^{-1} (kept for inspection; the scan does not read it)
  std::vector<double> W;      // [n,K]  Akk (beta . K . Gamma)
  std::vector<double> U;      // [n,V]  Akk (beta . V)
  std::vector<double> qg;     // [n,K]  scale q . Gamma
  std::vector<double> kg;     // [n,K]  k . 2^{G_{n-1} - G}
  std::vector<double> gamma;  // [K]    2^{G_{n-1}}: the whole chunk's decay of the state's rows
  FactorStats stats;
};

// Kernel 1: needs no state.
ChunkPrep PrepareChunk(const Problem& p, const ChunkedOptions& opt, int64_t t0, int n, int h);

// Kernel 2, one step: reads S (the state at the chunk start, [K,V]), writes the chunk's n output
// rows (o + i * o_row_stride) and leaves the state at the chunk end in S.
void ScanChunk(const ChunkPrep& c, int K, int V, double* S, double* o, size_t o_row_stride);

// The whole forward: for every sequence and head, PrepareChunk then ScanChunk chunk after chunk.
// Throws std::invalid_argument on a malformed problem or options.
Result ChunkedForward(const Problem& p, const ChunkedOptions& opt = {});

}  // namespace longhaul::kda
