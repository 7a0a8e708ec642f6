// kda/prepare.cu: stage 1 of the KDA forward, chunk-parallel: everything about a chunk that does not
// need the state. One block per (chunk of 64 tokens, head); writes the workspace (kda_gpu.cuh).
//
// Tiles and why:
//   - chunk C = 64 (FLA's default; the scan's sequential step count is T/64), sub-chunk BC = 16: the
//     recentring tile (a 16-row span keeps every factor <= 2^{8 lambda log2 e} = 2^57.7 at
//     lambda = 5) and the M of mma.m16n8k16.
//   - 256 threads (8 warps), ~106 KB of shared memory with dead regions reused, two blocks per SM
//     (1.25x faster than the first version's 512 threads and one block per SM, RESULTS.md step 3);
//     bf16 inputs arrive by cp.async (fp32 ones through registers), all four tensors in flight
//     before the first use.
//   - Aqk and L: 10 lower 16x16 tiles over the 8 warps, bf16 MMAs on split operands (x = hi + lo, three
//     products hi.hi + hi.lo + lo.hi: ~16 mantissa bits, FLA uses tf32 here); the exponent factors
//     are computed while the fragments are built, so the factored q, k never touch memory.
//   - (I + L)^{-1}: fp32 on CUDA cores, 16x16 diagonal blocks by forward substitution, then the
//     off-diagonal blocks level by level (Ai_rc = -Ai_rr sum_{c<=s<r} L_rs Ai_sc).
//   - W, U: bf16 MMAs, A = Akk diag(beta) split hi + lo, B = k Gamma (bf16) or v (exact bf16).
//
// The math (log2 units; G_i[d] = sum_{s<=i} log2(e) g_s[d], reset per chunk):
//   Aqk[i,j] = scale sum_d q_i k_j 2^{G_i-G_j}  (j <= i);   L[i,j] = beta_i sum_d k_i k_j 2^{G_i-G_j} (j < i)
//   factored per 16x16 tile with anchor a:  2^{G_i-G_j} = 2^{G_i-a} 2^{a-G_j}
//     diagonal tile: a = G at the sub-chunk midpoint (|exponent| <= 8 steps);
//     off-diagonal tile (r > c): a = G at the row sub-chunk's first row (both factors <= 1).
//   A diagonal tile whose span max_d (G_{r0} - G_{r0+15}) exceeds 110 (an unbounded gate, e.g.
//   softplus with a large A_log) is computed unfactored, one exact exp2 per term, on CUDA cores.
//   Akk = (I+L)^{-1};  W = Akk (beta K Gamma);  U = Akk (beta V);  Qg = scale Q Gamma;
//   KgT = (K 2^{G_last-G})^T;  gamma = 2^{G_last}.
#include "kda/kda.h"
#include "kda/kda_gpu.cuh"

namespace longhaul::kda::gpu {
namespace {

constexpr int kLdB = kK + 8;   // bf16 row stride of the [64][128] tiles (+16 B: ldmatrix conflict-free)
constexpr int kLdG = kK + 4;   // fp32 row stride of G
constexpr int kLdL = kC + 1;   // fp32 row stride of L and Ai
constexpr int kLdAb = kC + 8;  // bf16 row stride of Akk diag(beta)
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kExactSpan = 110.f;  // log2 units: above it, a diagonal tile is computed unfactored

__device__ __forceinline__ void Load8(const void* base, bool bf16, int64_t off, float* x) {
  if (bf16) {
    const uint4 u = __ldg(reinterpret_cast<const uint4*>(static_cast<const __nv_bfloat16*>(base) + off));
    const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&u);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float2 f = __bfloat1622float2(h[i]);
      x[2 * i] = f.x, x[2 * i + 1] = f.y;
    }
  } else {
    const float4* f = reinterpret_cast<const float4*>(static_cast<const float*>(base) + off);
    const float4 a = __ldg(f), b = __ldg(f + 1);
    x[0] = a.x, x[1] = a.y, x[2] = a.z, x[3] = a.w, x[4] = b.x, x[5] = b.y, x[6] = b.z, x[7] = b.w;
  }
}
__device__ __forceinline__ float Load1(const void* base, bool bf16, int64_t off) {
  return bf16 ? __bfloat162float(static_cast<const __nv_bfloat16*>(base)[off])
              : static_cast<const float*>(base)[off];
}
__device__ __forceinline__ void Store8(__nv_bfloat16* dst, const float* x) {
  uint4 u;
  u.x = PackBf16(x[0], x[1]), u.y = PackBf16(x[2], x[3]);
  u.z = PackBf16(x[4], x[5]), u.w = PackBf16(x[6], x[7]);
  *reinterpret_cast<uint4*>(dst) = u;
}
__device__ __forceinline__ float Sigmoid(float x) { return 1.f / (1.f + __expf(-x)); }
__device__ __forceinline__ float Softplus(float x) {
  return x > 20.f ? x : log1pf(__expf(x));
}

// ---- the kernel: 256 threads, ~106 KB of shared memory, two blocks per SM -----------------------
// The footprint is what makes two (chunk, head) blocks share an SM, so that one's loads and barriers
// overlap the other's work:
//   - regions are reused once dead: q -> Ai, k -> kg (in place), G -> ab_hi/ab_lo, raw g -> L;
//   - bf16 inputs arrive by cp.async straight into shared memory (all four tensors in flight at
//     once, no registers held), then are normalised / activated in place;
//   - KgT is built with consecutive d across lanes (the transposed read is conflict-free).
namespace v2 {
constexpr int kNT = 256, kNW = kNT / 32;
constexpr int kSzB = kC * kLdB * 2;          // a bf16 [64][136] tile: 17,408 B
constexpr int kOffQ = 0;                      // q; then Ai fp32 [64][65]
constexpr int kOffK = kOffQ + kSzB;           // k; then kg = k 2^G in place
constexpr int kOffV = kOffK + kSzB;           // v
constexpr int kOffG = kOffV + kSzB;           // G fp32 [64][132]; then ab_hi, ab_lo bf16 [64][72]
constexpr int kSzG = kC * kLdG * 4;
constexpr int kOffL = kOffG + kSzG;           // raw bf16 g [64][128] (phase 1); then L fp32 [64][65]
constexpr int kSzL = kC * kLdL * 4;
constexpr int kOffBeta = kOffL + kSzL;
constexpr int kOffSeg = kOffBeta + kC * 4;    // [2][128] fp32
constexpr int kOffTmp = kOffSeg + 2 * kK * 4; // [3][16][17] fp32
constexpr int kSmem = kOffTmp + 3 * kBC * (kBC + 1) * 4;
static_assert(kC * kLdL * 4 <= kSzB, "Ai fits in q's region");
static_assert(2 * kC * kLdAb * 2 <= kSzG, "ab_hi, ab_lo fit in G's region");
static_assert(kC * kK * 2 <= kSzL, "raw g fits in L's region");
static_assert(2 * kSmem + 2048 <= 228 * 1024, "two blocks per SM");
}  // namespace v2

__global__ void __launch_bounds__(v2::kNT, 2) PrepareKernel2(const Params p) {
  using namespace v2;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  auto sq_ = reinterpret_cast<__nv_bfloat16(*)[kLdB]>(smem_raw + kOffQ);
  auto sk_ = reinterpret_cast<__nv_bfloat16(*)[kLdB]>(smem_raw + kOffK);
  auto sv_ = reinterpret_cast<__nv_bfloat16(*)[kLdB]>(smem_raw + kOffV);
  auto G = reinterpret_cast<float(*)[kLdG]>(smem_raw + kOffG);
  auto graw = reinterpret_cast<__nv_bfloat16(*)[kK]>(smem_raw + kOffL);
  auto L = reinterpret_cast<float(*)[kLdL]>(smem_raw + kOffL);
  auto Ai = reinterpret_cast<float(*)[kLdL]>(smem_raw + kOffQ);
  auto ab_hi = reinterpret_cast<__nv_bfloat16(*)[kLdAb]>(smem_raw + kOffG);
  auto ab_lo = reinterpret_cast<__nv_bfloat16(*)[kLdAb]>(smem_raw + kOffG + kC * kLdAb * 2);
  float* sbeta = reinterpret_cast<float*>(smem_raw + kOffBeta);
  auto seg = reinterpret_cast<float(*)[kK]>(smem_raw + kOffSeg);
  auto tmp = reinterpret_cast<float(*)[kBC][kBC + 1]>(smem_raw + kOffTmp);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int h = blockIdx.y, gc = blockIdx.x, H = p.H;

  int n = 0, c = 0;
  if (!p.cu) {
    const int ntc = (p.T + kC - 1) / kC;
    n = gc / ntc, c = gc % ntc;
    if (n >= p.N) return;
  } else {
    int acc = 0;
    for (n = 0; n < p.N; ++n) {
      const int nc = int((p.cu[n + 1] - p.cu[n] + kC - 1) / kC);
      if (gc < acc + nc) break;
      acc += nc;
    }
    if (n >= p.N) return;
    c = gc - acc;
  }
  const SeqInfo sq = GetSeq(p, n);
  const int64_t t0 = sq.bos + int64_t(c) * kC;
  const int rows = int(sq.len - int64_t(c) * kC < kC ? sq.len - int64_t(c) * kC : kC);
  const size_t ch = size_t(gc) * H + h;
  auto tok = [&](const int64_t* st, int i) { return sq.b * st[0] + (t0 + i) * st[1] + h * st[2]; };

  // ---- phase 1: load and activate -------------------------------------------------------------
  const bool fast = p.in_bf16 && p.g_bf16;
  if (fast) {  // cp.async q, k, v, raw g into shared memory; zero rows past the tail
#pragma unroll
    for (int x = 0; x < kC * 16 / kNT; ++x) {
      const int it = tid + x * kNT, r = it >> 4, c8 = (it & 15) * 8;
      if (r < rows) {
        CpAsync16(&sq_[r][c8], static_cast<const __nv_bfloat16*>(p.q) + tok(p.q_st, r) + c8);
        CpAsync16(&sk_[r][c8], static_cast<const __nv_bfloat16*>(p.k) + tok(p.k_st, r) + c8);
        CpAsync16(&sv_[r][c8], static_cast<const __nv_bfloat16*>(p.v) + tok(p.v_st, r) + c8);
        CpAsync16(&graw[r][c8], static_cast<const __nv_bfloat16*>(p.g) + tok(p.g_st, r) + c8);
      } else {
        const uint4 z = make_uint4(0, 0, 0, 0);
        *reinterpret_cast<uint4*>(&sq_[r][c8]) = z;
        *reinterpret_cast<uint4*>(&sk_[r][c8]) = z;
        *reinterpret_cast<uint4*>(&sv_[r][c8]) = z;
        *reinterpret_cast<uint4*>(&graw[r][c8]) = z;
      }
    }
    CpAsyncCommit();
  }
  if (tid < kC) {
    float b = 0.f;
    if (tid < rows) {
      b = Load1(p.beta, p.beta_bf16, tok(p.beta_st, tid));
      if (p.beta_sigmoid) b = (p.neg_eigval ? 2.f : 1.f) * Sigmoid(b);
    }
    sbeta[tid] = b;
  }
  float a_log = 1.f;
  if (p.gate != KDA_GATE_LOG_DECAY && p.A_log) a_log = __expf(p.A_log[h]);
  if (fast) {
    CpAsyncWait<0>();
    __syncthreads();
  }
  {
    const int col = (tid & 15) * 8;
    float dtb[8];
#pragma unroll
    for (int e = 0; e < 8; ++e)
      dtb[e] = p.gate != KDA_GATE_LOG_DECAY && p.dt_bias ? p.dt_bias[h * kK + col + e] : 0.f;
#pragma unroll 1
    for (int ps = 0; ps < kC / (kNT / 16); ++ps) {
      const int r = (tid >> 4) + (kNT / 16) * ps;
      float xq[8], xk[8], xg[8];
      if (fast) {
#pragma unroll
        for (int e = 0; e < 8; ++e) {
          xq[e] = __bfloat162float(sq_[r][col + e]);
          xk[e] = __bfloat162float(sk_[r][col + e]);
          xg[e] = __bfloat162float(graw[r][col + e]);
        }
      } else if (r < rows) {
        float xv[8];
        Load8(p.q, p.in_bf16, tok(p.q_st, r) + col, xq);
        Load8(p.k, p.in_bf16, tok(p.k_st, r) + col, xk);
        Load8(p.v, p.in_bf16, tok(p.v_st, r) + col, xv);
        Load8(p.g, p.g_bf16, tok(p.g_st, r) + col, xg);
        Store8(&sv_[r][col], xv);
      } else {
#pragma unroll
        for (int e = 0; e < 8; ++e) xq[e] = xk[e] = xg[e] = 0.f;
        Store8(&sv_[r][col], xq);
      }
      if (p.l2norm) {
        float sq2 = 0, sk2 = 0;
#pragma unroll
        for (int e = 0; e < 8; ++e) sq2 += xq[e] * xq[e], sk2 += xk[e] * xk[e];
#pragma unroll
        for (int o = 8; o >= 1; o >>= 1) {
          sq2 += __shfl_xor_sync(0xffffffffu, sq2, o);
          sk2 += __shfl_xor_sync(0xffffffffu, sk2, o);
        }
        const float rq = rsqrtf(sq2 + 1e-6f), rk = rsqrtf(sk2 + 1e-6f);
#pragma unroll
        for (int e = 0; e < 8; ++e) xq[e] *= rq, xk[e] *= rk;
      }
      float gl[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) {
        float x = xg[e];
        if (p.gate != KDA_GATE_LOG_DECAY) {
          x += dtb[e];
          x = p.gate == KDA_GATE_LOWER_BOUND_SIGMOID ? p.lower_bound * Sigmoid(a_log * x)
                                                     : -a_log * Softplus(x);
        }
        gl[e] = r < rows ? x * kLog2e : 0.f;
      }
      if (fast) __syncwarp();  // raw g of this row read by all 16 lanes before G is written
      if (p.l2norm || !fast) {
        Store8(&sq_[r][col], xq);
        Store8(&sk_[r][col], xk);
      }
      *reinterpret_cast<float4*>(&G[r][col]) = make_float4(gl[0], gl[1], gl[2], gl[3]);
      *reinterpret_cast<float4*>(&G[r][col + 4]) = make_float4(gl[4], gl[5], gl[6], gl[7]);
    }
  }
  __syncthreads();
  {  // chunk-local inclusive cumsum: 2 segments of 32 rows per channel, then the offset
    const int d = tid & 127, sg = tid >> 7;
    float run = 0.f;
#pragma unroll 8
    for (int i = 0; i < 32; ++i) run += G[sg * 32 + i][d], G[sg * 32 + i][d] = run;
    seg[sg][d] = run;
    __syncthreads();
    if (sg > 0) {
      const float off = seg[0][d];
#pragma unroll 8
      for (int i = 0; i < 32; ++i) G[32 + i][d] += off;
    }
  }
  __syncthreads();

  // ---- phase 1b: Qg, KgT, gamma to the workspace ------------------------------------------------
  {
    const float scale = p.scale;
    __nv_bfloat16* Qg = p.ws.Qg + ch * kC * kK;
    __nv_bfloat16* KgT = p.ws.KgT + ch * kK * kC;
#pragma unroll 2
    for (int ps = 0; ps < kC / (kNT / 16); ++ps) {
      const int r = (tid >> 4) + (kNT / 16) * ps, col = (tid & 15) * 8;
      float xq[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) xq[e] = scale * __bfloat162float(sq_[r][col + e]) * Exp2(G[r][col + e]);
      Store8(Qg + r * kK + col, xq);
    }
#pragma unroll
    for (int ps = 0; ps < kK * 4 / kNT; ++ps) {  // KgT[d][t16..t16+16], d consecutive across lanes
      const int item = tid + ps * kNT, d = item & 127, t16 = (item >> 7) * 16;
      const float gl = G[kC - 1][d];
      float xt[16];
#pragma unroll
      for (int e = 0; e < 16; ++e) xt[e] = __bfloat162float(sk_[t16 + e][d]) * Exp2(gl - G[t16 + e][d]);
      Store8(KgT + d * kC + t16, xt);
      Store8(KgT + d * kC + t16 + 8, xt + 8);
    }
    if (tid < kK) p.ws.gamma[ch * kK + tid] = Exp2(G[kC - 1][tid]);
  }

  // ---- phase 2: the 10 lower 16x16 tiles of Aqk and L ------------------------------------------
  for (int tile = warp; tile < 10; tile += kNW) {
    const int r = tile < 1 ? 0 : tile < 3 ? 1 : tile < 6 ? 2 : 3;
    const int cc = tile - (r * (r + 1)) / 2;
    const int r0 = r * kBC, c0 = cc * kBC, g = lane >> 2, t = lane & 3;
    const bool diag = r == cc;
    const int nr = max(0, min(kBC, rows - r0));
    const int am = diag ? r0 + min(kBC / 2, max(nr - 1, 0)) : r0;
    __nv_bfloat16* Aqk = p.ws.Aqk + ch * kC * kC;
    bool exact = false;
    if (diag) {
      float span = 0.f;
#pragma unroll
      for (int e = 0; e < 4; ++e) span = fmaxf(span, G[r0][lane * 4 + e] - G[r0 + kBC - 1][lane * 4 + e]);
#pragma unroll
      for (int o = 16; o >= 1; o >>= 1) span = fmaxf(span, __shfl_xor_sync(0xffffffffu, span, o));
      exact = span > kExactSpan;
    }
    if (!exact) {
      float aq[2][4] = {}, ak[2][4] = {};
#pragma unroll 2
      for (int ks = 0; ks < kK / 16; ++ks) {
        const int d0 = ks * 16;
        uint32_t qh[4], ql[4], kh[4], kl[4];
#pragma unroll
        for (int x = 0; x < 4; ++x) {
          const int i = r0 + g + (x & 1) * 8, d = d0 + 2 * t + (x >> 1) * 8;
          const float f0 = Exp2(G[i][d] - G[am][d]), f1 = Exp2(G[i][d + 1] - G[am][d + 1]);
          const float2 qv = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&sq_[i][d]));
          const float2 kv = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&sk_[i][d]));
          SplitBf16(qv.x * f0, qv.y * f1, qh[x], ql[x]);
          SplitBf16(kv.x * f0, kv.y * f1, kh[x], kl[x]);
        }
#pragma unroll
        for (int nt = 0; nt < 2; ++nt) {
          const int j = c0 + nt * 8 + g;
          uint32_t bh[2], bl[2];
#pragma unroll
          for (int x = 0; x < 2; ++x) {
            const int d = d0 + 2 * t + x * 8;
            const float f0 = Exp2(G[am][d] - G[j][d]), f1 = Exp2(G[am][d + 1] - G[j][d + 1]);
            const float2 kv = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&sk_[j][d]));
            SplitBf16(kv.x * f0, kv.y * f1, bh[x], bl[x]);
          }
          Mma(aq[nt], qh, bh[0], bh[1]);
          Mma(aq[nt], qh, bl[0], bl[1]);
          Mma(aq[nt], ql, bh[0], bh[1]);
          Mma(ak[nt], kh, bh[0], bh[1]);
          Mma(ak[nt], kh, bl[0], bl[1]);
          Mma(ak[nt], kl, bh[0], bh[1]);
        }
      }
#pragma unroll
      for (int nt = 0; nt < 2; ++nt)
#pragma unroll
        for (int hf = 0; hf < 2; ++hf) {
          const int i = g + hf * 8, j = nt * 8 + 2 * t;
          float a0 = p.scale * aq[nt][2 * hf], a1 = p.scale * aq[nt][2 * hf + 1];
          float l0 = sbeta[r0 + i] * ak[nt][2 * hf], l1 = sbeta[r0 + i] * ak[nt][2 * hf + 1];
          if (diag) {
            a0 = j <= i ? a0 : 0.f, a1 = j + 1 <= i ? a1 : 0.f;
            l0 = j < i ? l0 : 0.f, l1 = j + 1 < i ? l1 : 0.f;
          }
          *reinterpret_cast<uint32_t*>(Aqk + (r0 + i) * kC + c0 + j) = PackBf16(a0, a1);
          L[r0 + i][c0 + j] = l0, L[r0 + i][c0 + j + 1] = l1;
        }
    } else {
      for (int pi = lane; pi < kBC * kBC; pi += 32) {
        const int i = pi >> 4, j = pi & 15;
        float sqk = 0.f, skk = 0.f;
        if (j <= i) {
          for (int d = 0; d < kK; ++d) {
            const float e = Exp2(G[r0 + i][d] - G[r0 + j][d]);
            const float kj = __bfloat162float(sk_[r0 + j][d]) * e;
            sqk += __bfloat162float(sq_[r0 + i][d]) * kj;
            skk += __bfloat162float(sk_[r0 + i][d]) * kj;
          }
        }
        Aqk[(r0 + i) * kC + r0 + j] = __float2bfloat16_rn(p.scale * sqk);
        L[r0 + i][r0 + j] = j < i ? sbeta[r0 + i] * skk : 0.f;
      }
    }
  }
  // L is written by phase 2 in tiles; raw g shared its region but was consumed before the cumsum.
  __syncthreads();

  // ---- phase 3: Ai = (I + L)^{-1} (into q's region); meanwhile kg = k 2^G in place ---------------
  if (tid < 64) {
    const int r0 = (tid >> 4) * kBC, col = tid & 15;
    float x[kBC];
#pragma unroll
    for (int i = 0; i < kBC; ++i) {
      float acc = i == col ? 1.f : 0.f;
#pragma unroll
      for (int j = 0; j < i; ++j) acc -= L[r0 + i][r0 + j] * x[j];
      x[i] = acc;
    }
#pragma unroll
    for (int i = 0; i < kBC; ++i) Ai[r0 + i][r0 + col] = x[i];
  } else {
    for (int it = tid - 64; it < kC * 16; it += kNT - 64) {
      const int r = it >> 4, c8 = (it & 15) * 8;
      float x[8];
#pragma unroll
      for (int e = 0; e < 8; ++e) x[e] = __bfloat162float(sk_[r][c8 + e]) * Exp2(G[r][c8 + e]);
      Store8(&sk_[r][c8], x);
    }
  }
  __syncthreads();
  for (int lv = 1; lv < 4; ++lv) {
    const int count = 4 - lv;
    for (int it = tid; it < count * 256; it += kNT) {
      const int ti = it >> 8, i = (it >> 4) & 15, j = it & 15;
      const int r = lv + ti, c2 = r - lv;
      float acc = 0.f;
      for (int u = c2 * kBC; u < r * kBC; ++u) acc += L[r * kBC + i][u] * Ai[u][c2 * kBC + j];
      tmp[ti][i][j] = acc;
    }
    __syncthreads();
    for (int it = tid; it < count * 256; it += kNT) {
      const int ti = it >> 8, i = (it >> 4) & 15, j = it & 15;
      const int r = lv + ti, c2 = r - lv;
      float acc = 0.f;
      for (int u = 0; u <= i; ++u) acc += Ai[r * kBC + i][r * kBC + u] * tmp[ti][u][j];
      Ai[r * kBC + i][c2 * kBC + j] = -acc;
    }
    __syncthreads();
  }
  for (int it = tid; it < kC * kC / 2; it += kNT) {  // G is dead: ab_hi / ab_lo take its region
    const int i = it >> 5, j = (it & 31) * 2;
    const float x0 = j <= i ? Ai[i][j] * sbeta[j] : 0.f;
    const float x1 = j + 1 <= i ? Ai[i][j + 1] * sbeta[j + 1] : 0.f;
    uint32_t hi, lo;
    SplitBf16(x0, x1, hi, lo);
    *reinterpret_cast<uint32_t*>(&ab_hi[i][j]) = hi;
    *reinterpret_cast<uint32_t*>(&ab_lo[i][j]) = lo;
  }
  __syncthreads();

  // ---- phase 4: W = Akk diag(beta) (K Gamma), U = Akk diag(beta) V -------------------------------
  {
    const int mt = warp & 3, cg = warp >> 2, g = lane >> 2, t = lane & 3;  // cg: 64 columns
    float aw[8][4] = {}, au[8][4] = {};
    for (int ks = 0; ks <= mt; ++ks) {
      uint32_t ah[4], al[4];
      LoadA(ah, &ab_hi[0][0], kLdAb, mt * 16, ks * 16, lane);
      LoadA(al, &ab_lo[0][0], kLdAb, mt * 16, ks * 16, lane);
#pragma unroll
      for (int np = 0; np < 4; ++np) {
        const int n0 = cg * 64 + np * 16;
        uint32_t bw[4], bu[4];
        LoadBKN(bw, &sk_[0][0], kLdB, ks * 16, n0, lane);
        LoadBKN(bu, &sv_[0][0], kLdB, ks * 16, n0, lane);
        Mma(aw[2 * np], ah, bw[0], bw[1]);
        Mma(aw[2 * np], al, bw[0], bw[1]);
        Mma(aw[2 * np + 1], ah, bw[2], bw[3]);
        Mma(aw[2 * np + 1], al, bw[2], bw[3]);
        Mma(au[2 * np], ah, bu[0], bu[1]);
        Mma(au[2 * np], al, bu[0], bu[1]);
        Mma(au[2 * np + 1], ah, bu[2], bu[3]);
        Mma(au[2 * np + 1], al, bu[2], bu[3]);
      }
    }
    __nv_bfloat16* W = p.ws.W + ch * kC * kK;
    __nv_bfloat16* U = p.ws.U + ch * kC * kV;
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const int i = mt * 16 + g + hf * 8, j = cg * 64 + nt * 8 + 2 * t;
        *reinterpret_cast<uint32_t*>(W + i * kK + j) = PackBf16(aw[nt][2 * hf], aw[nt][2 * hf + 1]);
        *reinterpret_cast<uint32_t*>(U + i * kV + j) = PackBf16(au[nt][2 * hf], au[nt][2 * hf + 1]);
      }
  }
}

}  // namespace

cudaError_t LaunchPrepare(const Params& p, cudaStream_t stream) {
  static bool configured = false;
  if (!configured) {
    const cudaError_t e =
        cudaFuncSetAttribute(PrepareKernel2, cudaFuncAttributeMaxDynamicSharedMemorySize, v2::kSmem);
    if (e != cudaSuccess) return e;
    configured = true;
  }
  if (p.max_chunks == 0) return cudaSuccess;
  PrepareKernel2<<<dim3(p.max_chunks, p.H), v2::kNT, v2::kSmem, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace longhaul::kda::gpu
