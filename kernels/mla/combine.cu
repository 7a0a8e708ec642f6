// mla/combine.cu: stage 2 of the MLA forward: merges the split partials of every entry with two or
// more splits into bf16 o and the natural-log LSE, and writes the entries with no keys at all
// (S_b = 0: o = 0, LSE = -inf). Entries with one split were written by decode.cu and are skipped.
//
// Two kernels, by how many splits an entry has (about P / B + 1):
// - Few (serving batches, prefill; P < 32 B): CombineRowsKernel, one warp a row, a lane owning 16
//   columns (32 bytes of fp16), the row's (m, l) one split a lane, up to four splits' loads in
//   flight. At these shapes the many-split kernel below left 3 of its 4 warps idle (2-3 splits an
//   entry) and spent its time on the entry's metadata (64-bit divisions, repeated by 4 CTAs a row).
//   ncu: B128 H128 s_q1 114.8 -> 16.2 us (decode: 531 us), B128 H16 26.8 -> 7.2 us (decode: 285.5).
// - Many (B = 1 and small batches; P >= 32 B): CombineKernel, one CTA of 4 warps per (output row
//   (b, R = s*H + h), quarter of its 512 columns); a lane owns 4 columns (8 bytes of fp16), so a
//   warp reads 256 contiguous bytes per split. The splits go in chunks of 256: every warp loads the
//   chunk's (m, l) at once (lane j: splits j, j + 32, ...), so every warp knows every weight; warp w
//   then takes the batches of 32 splits i = w, w + 4, ... of the chunk. A full batch issues its 32
//   loads back to back into registers, then weighs them by w_j shuffled in from lane j; a short
//   batch (the tail) loads one split at a time. The 4 warps' sums meet in shared memory. Why: the
//   kernel is a chain of memory latencies, not bandwidth (8.7 MB at B1 H64 would take ~2 us). At B1
//   H64 (ncu, the kernel alone): a warp per row walking the splits one at a time took ~90 us (fp32
//   partials), one (m, l) load a loop trip with the loads interleaved with the sums 12.9 us, this
//   8.8 us.
//   Where B = 1 and 32 <= P < 64 (B1 H64 s_q1 in halves and s_q4: P = 33, at most 33 splits a row),
//   the same kernel with kWarpAQuarter: a CTA per row, each warp a quarter with all its splits. At s_q4
//   (H64: 256 rows, P = 33) the CTA per (row, quarter) left warps 2-3 idle (33 splits: one full
//   batch and one split) and needed 1024 CTAs, two waves at 4 CTAs an SM; a warp a quarter needs
//   256 CTAs, one wave, with the same chain (32 loads in flight, then the tail). H100, whole
//   pipeline: s_q4 31.0 -> 29.2-29.4 us; s_q1 (P = 33 in halves, 64 rows) unchanged.
//
// Math (split_reference.h's Combine), partials j = the entry's splits in part order, slot b + p,
// each stored normalised (o_j = O_j / l_j, fp16):
//   M = max_j m_j;  w_j = l_j 2^(m_j - M);  L = sum_j w_j;  o = sum_j w_j o_j / L
//   lse = (M + log2 L) ln 2;   M = -inf (no split saw a key for this row): o = 0, lse = -inf.
#include "mla/mla_gpu.cuh"

namespace longhaul::mla::gpu {
namespace {

constexpr int kWarps = 4;
constexpr int kThreads = 32 * kWarps;
constexpr int kQuarters = 4;  // a CTA's share of a row: 128 columns
constexpr int kChunk = 256;   // splits whose (m, l) a warp holds at once

// Output row `row` = (b, R): the splits n of its entry (0: the entry has no keys; 1: decode wrote
// the row) and, for n > 1, where its partials start: split j's (m, l) at ml + 2 M j, O / l at
// opart + 512 M j.
struct RowSplits {
  int b, R, n;
  const float* ml;
  const __half* opart;
};
__device__ __forceinline__ RowSplits RowSplitsOf(const Params& p, int64_t row) {
  RowSplits r{int(row / p.M), int(row % p.M), 0, p.ml, p.opart};
  const int64_t W = p.cum[p.B], c0 = p.cum[r.b], c1 = p.cum[r.b + 1];
  const int64_t equal = p.B > 1 && p.M <= kWholeEntriesMaxRows ? p.cum[p.B + 1] : 0;  // (decode wrote it)
  const PartCut cut = CutParts(W, p.parts, p.B, equal);
  // One part (prefill): no more 64-bit divisions for the rows decode wrote, all but the empty entries'.
  if (c1 <= c0 || cut.parts == 1) {
    r.n = c1 <= c0 ? 0 : 1;
    return r;
  }
  const int p0 = PartOf(c0, cut);
  r.n = PartOf(c1 - 1, cut) - p0 + 1;
  if (r.n > 1) {
    const int64_t at = int64_t(SlotOf(r.b, p0)) * p.M + r.R;
    r.ml = p.ml + at * 2, r.opart = p.opart + at * kDimV;
  }
  return r;
}

// (m_j, l_j) of split j (at ml + j * 2M); (-inf, 0) past n.
__device__ __forceinline__ float2 LoadMl(const float* ml, int M, int n, int j) {
  return j < n ? *reinterpret_cast<const float2*>(ml + int64_t(j) * 2 * M) : make_float2(-INFINITY, 0.f);
}

// acc += w * 4 fp16.
__device__ __forceinline__ void Accumulate(float4& acc, float w, uint2 raw) {
  const float2 a = __half22float2(*reinterpret_cast<const __half2*>(&raw.x));
  const float2 b = __half22float2(*reinterpret_cast<const __half2*>(&raw.y));
  acc.x += w * a.x, acc.y += w * a.y, acc.z += w * b.x, acc.w += w * b.y;
}

template <bool kWarpAQuarter>
__global__ void __launch_bounds__(kThreads, 1) CombineKernel(const Params p) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  static_assert(kWarps == kQuarters, "kWarpAQuarter: a CTA per row, a warp per quarter");
  const int64_t row = kWarpAQuarter ? blockIdx.x : blockIdx.x / kQuarters;
  const int quarter = kWarpAQuarter ? warp : int(blockIdx.x % kQuarters);
  const RowSplits rs = RowSplitsOf(p, row);
  const int b = rs.b, R = rs.R, sq = R / p.H, h = R % p.H, n = rs.n;
  if (n == 1) return;
  const float* ml = rs.ml;
  const __half* opart = rs.opart + quarter * 128 + lane * 4;

  float M = -INFINITY;
  for (int base = 0; base < n; base += kChunk) {
    float2 v[kChunk / 32];
#pragma unroll
    for (int i = 0; i < kChunk / 32; ++i) v[i] = LoadMl(ml, p.M, n, base + lane + 32 * i);
#pragma unroll
    for (int i = 0; i < kChunk / 32; ++i) M = fmaxf(M, v[i].x);
  }
#pragma unroll
  for (int o = 16; o; o >>= 1) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, o));
  float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
  float L = 0.f;  // the lane's share of the weights (every warp sums all of them)
  if (M != -INFINITY) {
    for (int base = 0; base < n; base += kChunk) {
      float w[kChunk / 32];  // split base + lane + 32 i's weight (0 past n and for m_j = -inf)
#pragma unroll
      for (int i = 0; i < kChunk / 32; ++i) {
        const float2 v = LoadMl(ml, p.M, n, base + lane + 32 * i);  // an L1 hit: loaded above
        w[i] = v.y * exp2f(v.x - M);
        L += w[i];
      }
      constexpr int kBatchesPerWarp = kWarpAQuarter ? kChunk / 32 : kChunk / 32 / kWarps;
#pragma unroll
      for (int t = 0; t < kBatchesPerWarp; ++t) {
        const int i = kWarpAQuarter ? t : t * kWarps + warp, j0 = base + 32 * i;
        if (j0 >= n) break;
        float wi = 0.f;  // w[i], without indexing the array by a register
#pragma unroll
        for (int i2 = 0; i2 < kChunk / 32; ++i2) wi = i2 == i ? w[i2] : wi;
        const __half* src = opart + int64_t(j0) * p.M * kDimV;
        if (n - j0 >= 32) {  // a full batch: its 32 loads first, all in flight at once (~110 registers)
          uint2 raw[32];
#pragma unroll
          for (int j = 0; j < 32; ++j) raw[j] = __ldg(reinterpret_cast<const uint2*>(src + int64_t(j) * p.M * kDimV));
#pragma unroll
          for (int j = 0; j < 32; ++j) Accumulate(acc, __shfl_sync(0xffffffffu, wi, j), raw[j]);
          continue;
        }
        for (int j = 0; j < min(32, n - j0); ++j)  // one split at a time
          Accumulate(acc, __shfl_sync(0xffffffffu, wi, j), __ldg(reinterpret_cast<const uint2*>(src + int64_t(j) * p.M * kDimV)));
      }
    }
  }
#pragma unroll
  for (int o = 16; o; o >>= 1) L += __shfl_xor_sync(0xffffffffu, L, o);
  if constexpr (!kWarpAQuarter) {
    __shared__ float4 sAcc[kWarps - 1][32];
    if (warp > 0) sAcc[warp - 1][lane] = acc;
    __syncthreads();
    if (warp > 0) return;
#pragma unroll
    for (int i = 0; i < kWarps - 1; ++i) {
      const float4 v = sAcc[i][lane];
      acc.x += v.x, acc.y += v.y, acc.z += v.z, acc.w += v.w;
    }
  }
  const float inv = L > 0.f ? 1.f / L : 0.f;
  __nv_bfloat16* dst = p.o + b * p.o_st[0] + sq * p.o_st[1] + h * p.o_st[2] + quarter * 128 + lane * 4;
  uint32_t* d = reinterpret_cast<uint32_t*>(dst);
  d[0] = PackBf16(acc.x * inv, acc.y * inv);
  d[1] = PackBf16(acc.z * inv, acc.w * inv);
  if (lane == 0 && quarter == 0 && p.lse)
    p.lse[b * p.lse_st[0] + sq * p.lse_st[1] + h * p.lse_st[2]] = L > 0.f ? (M + log2f(L)) * kLn2 : -INFINITY;
}

constexpr int kRowCols = kDimV / 32;  // CombineRowsKernel: the columns a lane owns (16)
constexpr int kInFlight = 4;          // splits whose loads a warp issues before summing them

// acc += w * 8 fp16.
__device__ __forceinline__ void Accumulate8(float* acc, float w, uint4 raw) {
  const __half2* h = reinterpret_cast<const __half2*>(&raw);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __half22float2(h[i]);
    acc[2 * i] += w * f.x, acc[2 * i + 1] += w * f.y;
  }
}

__global__ void __launch_bounds__(kThreads) CombineRowsKernel(const Params p) {
  const int lane = threadIdx.x & 31;
  const int64_t row = int64_t(blockIdx.x) * kWarps + (threadIdx.x >> 5);
  if (row >= int64_t(p.B) * p.M) return;
  const RowSplits rs = RowSplitsOf(p, row);
  const int b = rs.b, R = rs.R, sq = R / p.H, h = R % p.H, n = rs.n;
  if (n == 1) return;
  const float* ml = rs.ml;
  const __half* opart = rs.opart + lane * kRowCols;
  const int64_t o_step = int64_t(p.M) * kDimV;

  float M = -INFINITY;
  for (int j = lane; j < n; j += 32) M = fmaxf(M, LoadMl(ml, p.M, n, j).x);
#pragma unroll
  for (int o = 16; o; o >>= 1) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, o));
  float acc[kRowCols] = {};
  float L = 0.f;  // the lane's share of the weights
  if (M != -INFINITY) {
    for (int base = 0; base < n; base += 32) {
      const float2 v = LoadMl(ml, p.M, n, base + lane);  // (an L1 hit when n <= 32: loaded above)
      const float w = v.y * exp2f(v.x - M);             // 0 past n and for m_j = -inf
      L += w;
      const int count = min(32, n - base);
      for (int j0 = 0; j0 < count; j0 += kInFlight) {
        uint4 raw[kInFlight][2];
#pragma unroll
        for (int k = 0; k < kInFlight; ++k) {
          if (j0 + k < count) {
            const uint4* src = reinterpret_cast<const uint4*>(opart + int64_t(base + j0 + k) * o_step);
            raw[k][0] = __ldg(src), raw[k][1] = __ldg(src + 1);
          }
        }
#pragma unroll
        for (int k = 0; k < kInFlight; ++k) {
          const float wk = __shfl_sync(0xffffffffu, w, (j0 + k) & 31);
          if (j0 + k < count) Accumulate8(acc, wk, raw[k][0]), Accumulate8(acc + 8, wk, raw[k][1]);
        }
      }
    }
  }
#pragma unroll
  for (int o = 16; o; o >>= 1) L += __shfl_xor_sync(0xffffffffu, L, o);
  const float inv = L > 0.f ? 1.f / L : 0.f;
  // o rows are only 4-byte aligned (mla_cuda.cu's contract)
  uint32_t* dst = reinterpret_cast<uint32_t*>(p.o + b * p.o_st[0] + sq * p.o_st[1] + h * p.o_st[2] + lane * kRowCols);
#pragma unroll
  for (int i = 0; i < kRowCols / 2; ++i) dst[i] = PackBf16(acc[2 * i] * inv, acc[2 * i + 1] * inv);
  if (lane == 0 && p.lse)
    p.lse[b * p.lse_st[0] + sq * p.lse_st[1] + h * p.lse_st[2]] = L > 0.f ? (M + log2f(L)) * kLn2 : -INFINITY;
}

}  // namespace

cudaError_t LaunchCombine(const Params& p, cudaStream_t stream) {
  const int64_t rows = int64_t(p.B) * p.M;
  if (p.B == 1 && p.parts < 64 && p.parts >= 32)
    CombineKernel<true><<<unsigned(rows), kThreads, 0, stream>>>(p);
  else if (p.parts >= 32 * p.B)
    CombineKernel<false><<<unsigned(rows * kQuarters), kThreads, 0, stream>>>(p);
  else
    CombineRowsKernel<<<unsigned((rows + kWarps - 1) / kWarps), kThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace longhaul::mla::gpu
