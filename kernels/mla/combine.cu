// mla/combine.cu: stage 2 of the MLA forward: merges the split partials of every entry with two or
// more splits into bf16 o and the natural-log LSE, and writes the entries with no keys at all
// (S_b = 0: o = 0, LSE = -inf). Entries with one split were written by decode.cu and are skipped.
//
// One CTA of 4 warps per (output row (b, R = s*H + h), quarter of its 512 columns); a lane owns 4
// columns (one float4), so a warp reads 512 contiguous bytes per split. Warp w takes the batches of
// 32 splits j0 = 32 w, 32 w + 128, ...: lane j loads split j0 + j's (m, l) and turns it into its
// weight, then the warp issues the batch's 32 float4 loads back to back (unrolled, the weight
// shuffled in from lane j). The 4 warps' sums meet in shared memory. Why so much parallelism: at
// B1 H64 there are only 256 (row, quarter) pairs, each over 132 splits (17 MB of partials); a warp
// per row walking the splits one at a time took ~90 us, a warp per pair (32 CTAs) 28 us.
//
// Math (split_reference.h's Combine), partials j = the entry's splits in part order, slot b + p:
//   M = max_j m_j;  L = sum_j l_j 2^(m_j - M);  o = sum_j O_j 2^(m_j - M) / L
//   lse = (M + log2 L) ln 2;   M = -inf (no split saw a key for this row): o = 0, lse = -inf.
#include "mla/mla_gpu.cuh"

namespace longhaul::mla::gpu {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kQuarters = 4;  // a CTA's share of a row: 128 columns

__global__ void __launch_bounds__(kThreads) CombineKernel(const Params p) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int64_t row = blockIdx.x / kQuarters;
  const int quarter = int(blockIdx.x % kQuarters);
  const int b = int(row / p.M), R = int(row % p.M), sq = R / p.H, h = R % p.H;
  const int64_t W = p.cum[p.B], c0 = p.cum[b], c1 = p.cum[b + 1];
  const int Pe = W > 0 ? EffectiveParts(W, p.parts) : 1;
  const int n = W > 0 ? SplitsOf(c0, c1, W, Pe) : 0;
  if (n == 1) return;
  const int slot0 = n > 0 ? SlotOf(b, PartOf(c0, W, Pe)) : 0;
  const float* ml = p.ml + (int64_t(slot0) * p.M + R) * 2;   // split j at ml + j * 2M
  const float* oacc = p.oacc + (int64_t(slot0) * p.M + R) * kDimV + quarter * 128 + lane * 4;

  float M = -INFINITY;
  for (int j = lane; j < n; j += 32) M = fmaxf(M, ml[int64_t(j) * 2 * p.M]);
#pragma unroll
  for (int o = 16; o; o >>= 1) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, o));
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  float L = 0.f;  // this lane's share; summed over the CTA below
  if (M != -INFINITY) {
    for (int j0 = 32 * warp; j0 < n; j0 += 32 * kWarps) {
      float w = 0.f;  // lane j's weight for split j0 + j (0 past n, and for m_j = -inf)
      if (j0 + lane < n) {
        const float2 v = *reinterpret_cast<const float2*>(ml + int64_t(j0 + lane) * 2 * p.M);
        w = exp2f(v.x - M);
        L += v.y * w;
      }
      const int batch = n - j0 < 32 ? n - j0 : 32;
      if (batch == 32) {
#pragma unroll
        for (int j = 0; j < 32; ++j) {
          const float wj = __shfl_sync(0xffffffffu, w, j);
          const float4 v = *reinterpret_cast<const float4*>(oacc + int64_t(j0 + j) * p.M * kDimV);
          acc.x += wj * v.x, acc.y += wj * v.y, acc.z += wj * v.z, acc.w += wj * v.w;
        }
      } else {
        for (int j = 0; j < batch; ++j) {
          const float wj = __shfl_sync(0xffffffffu, w, j);
          const float4 v = *reinterpret_cast<const float4*>(oacc + int64_t(j0 + j) * p.M * kDimV);
          acc.x += wj * v.x, acc.y += wj * v.y, acc.z += wj * v.z, acc.w += wj * v.w;
        }
      }
    }
  }
#pragma unroll
  for (int o = 16; o; o >>= 1) L += __shfl_xor_sync(0xffffffffu, L, o);
  __shared__ float4 sAcc[kWarps - 1][32];
  __shared__ float sL[kWarps - 1];
  if (warp > 0) {
    sAcc[warp - 1][lane] = acc;
    if (lane == 0) sL[warp - 1] = L;
  }
  __syncthreads();
  if (warp > 0) return;
#pragma unroll
  for (int i = 0; i < kWarps - 1; ++i) {
    const float4 v = sAcc[i][lane];
    acc.x += v.x, acc.y += v.y, acc.z += v.z, acc.w += v.w;
    L += sL[i];
  }
  const float inv = L > 0.f ? 1.f / L : 0.f;
  __nv_bfloat16* dst = p.o + b * p.o_st[0] + sq * p.o_st[1] + h * p.o_st[2] + quarter * 128 + lane * 4;
  uint32_t* d = reinterpret_cast<uint32_t*>(dst);
  d[0] = PackBf16(acc.x * inv, acc.y * inv);
  d[1] = PackBf16(acc.z * inv, acc.w * inv);
  if (lane == 0 && quarter == 0 && p.lse)
    p.lse[b * p.lse_st[0] + sq * p.lse_st[1] + h * p.lse_st[2]] = L > 0.f ? (M + log2f(L)) * kLn2 : -INFINITY;
}

}  // namespace

cudaError_t LaunchCombine(const Params& p, cudaStream_t stream) {
  const int64_t blocks = int64_t(p.B) * p.M * kQuarters;  // B128 H128 s_q2: 131,072 (< 2^31)
  CombineKernel<<<unsigned(blocks), kThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace longhaul::mla::gpu
