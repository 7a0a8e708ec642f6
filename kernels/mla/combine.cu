// mla/combine.cu: stage 2 of the MLA forward: merges the split partials of every entry with two or
// more splits into bf16 o and the natural-log LSE, and writes the entries with no keys at all
// (S_b = 0: o = 0, LSE = -inf). Entries with one split were written by decode.cu and are skipped.
//
// One warp per output row (b, R = s*H + h), 8 rows per 256-thread CTA; a lane owns 16 of the 512
// columns (4 float4 at columns 4 lane + 128 k, so a warp reads 512 contiguous bytes per k).
//
// Math (split_reference.h's Combine), partials j = the entry's splits in part order, slot b + p:
//   M = max_j m_j;  L = sum_j l_j 2^(m_j - M);  o = sum_j O_j 2^(m_j - M) / L
//   lse = (M + log2 L) ln 2;   M = -inf (no split saw a key for this row): o = 0, lse = -inf.
#include "mla/mla_gpu.cuh"

namespace longhaul::mla::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int kRowsPerCta = kThreads / 32;

__global__ void __launch_bounds__(kThreads) CombineKernel(const Params p) {
  const int lane = threadIdx.x & 31;
  const int64_t row = int64_t(blockIdx.x) * kRowsPerCta + (threadIdx.x >> 5);
  if (row >= int64_t(p.B) * p.M) return;
  const int b = int(row / p.M), R = int(row % p.M), sq = R / p.H, h = R % p.H;
  const int64_t W = p.cum[p.B], c0 = p.cum[b], c1 = p.cum[b + 1];
  const int Pe = W > 0 ? EffectiveParts(W, p.parts) : 1;
  const int n = W > 0 ? SplitsOf(c0, c1, W, Pe) : 0;
  if (n == 1) return;
  __nv_bfloat16* dst = p.o + b * p.o_st[0] + sq * p.o_st[1] + h * p.o_st[2];
  float* lse = p.lse ? p.lse + b * p.lse_st[0] + sq * p.lse_st[1] + h * p.lse_st[2] : nullptr;

  float M = -INFINITY;
  const int slot0 = n > 0 ? SlotOf(b, PartOf(c0, W, Pe)) : 0;
  for (int j = 0; j < n; ++j) M = fmaxf(M, p.ml[((int64_t(slot0) + j) * p.M + R) * 2]);
  float acc[16] = {};
  float L = 0.f;
  if (M != -INFINITY) {
    for (int j = 0; j < n; ++j) {
      const int64_t r = (int64_t(slot0) + j) * p.M + R;
      const float2 ml = *reinterpret_cast<const float2*>(p.ml + r * 2);
      const float w = exp2f(ml.x - M);  // m_j = -inf: w = 0 (and O_j = 0)
      L += ml.y * w;
      const float4* src = reinterpret_cast<const float4*>(p.oacc + r * kDimV);
#pragma unroll
      for (int k = 0; k < 4; ++k) {
        const float4 v = src[lane + 32 * k];
        acc[4 * k] += w * v.x, acc[4 * k + 1] += w * v.y, acc[4 * k + 2] += w * v.z, acc[4 * k + 3] += w * v.w;
      }
    }
  }
  const float inv = L > 0.f ? 1.f / L : 0.f;
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    uint32_t* d = reinterpret_cast<uint32_t*>(dst + 4 * lane + 128 * k);
    d[0] = PackBf16(acc[4 * k] * inv, acc[4 * k + 1] * inv);
    d[1] = PackBf16(acc[4 * k + 2] * inv, acc[4 * k + 3] * inv);
  }
  if (lane == 0 && lse) *lse = L > 0.f ? (M + log2f(L)) * kLn2 : -INFINITY;
}

}  // namespace

cudaError_t LaunchCombine(const Params& p, cudaStream_t stream) {
  const int64_t rows = int64_t(p.B) * p.M;
  const int64_t blocks = (rows + kRowsPerCta - 1) / kRowsPerCta;
  CombineKernel<<<unsigned(blocks), kThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace longhaul::mla::gpu
