// mla/schedule.cu: stage 0 of the MLA forward: the schedule's device-side state (schedule.h) from
// the device seqlens, so that the launch needs no host copy of them (graph capture, decode loops).
//
// One CTA of 1024 threads:
//   cum[b]    = sum_{b' < b} S_b'              (B+1 entries, a chunked block scan)
//   part_b[p] = the first entry b with cum[b] <= PartStart(p) < cum[b+1]   (skips S_b = 0 entries)
//             for p < P' (parts with work; B for the rest)
// Cost: O(B + P log B), a few microseconds at most; it is one more launch in the pipeline (PDL or
// folding it into the decode kernel is a later optimisation).
#include "mla/mla_gpu.cuh"

namespace longhaul::mla::gpu {
namespace {

constexpr int kThreads = 1024;

__global__ void __launch_bounds__(kThreads) ScheduleKernel(const Params p) {
  __shared__ int64_t warp_sum[kThreads / 32];
  __shared__ int64_t carry;
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  if (tid == 0) carry = 0, p.cum[0] = 0;
  __syncthreads();
  for (int base = 0; base < p.B; base += kThreads) {
    const int b = base + tid;
    int64_t x = b < p.B ? int64_t(p.seqlens[b]) : 0;
    for (int d = 1; d < 32; d <<= 1) {  // inclusive warp scan
      const int64_t y = __shfl_up_sync(0xffffffffu, x, d);
      if (lane >= d) x += y;
    }
    if (lane == 31) warp_sum[warp] = x;
    __syncthreads();
    if (warp == 0) {
      int64_t w = warp_sum[lane];
      for (int d = 1; d < 32; d <<= 1) {
        const int64_t y = __shfl_up_sync(0xffffffffu, w, d);
        if (lane >= d) w += y;
      }
      warp_sum[lane] = w;  // inclusive over warps
    }
    __syncthreads();
    const int64_t incl = carry + x + (warp > 0 ? warp_sum[warp - 1] : 0);
    if (b < p.B) p.cum[b + 1] = incl;
    __syncthreads();
    if (tid == kThreads - 1) carry = incl;
    __syncthreads();
  }
  // cum is complete (global writes of this CTA are visible to it after the barrier).
  const int64_t W = p.cum[p.B];
  const int Pe = W > 0 ? EffectiveParts(W, p.parts) : 0;
  for (int part = tid; part < p.parts; part += kThreads) {
    int first = p.B;
    if (part < Pe) {
      const int64_t x = PartStart(part, W, Pe);
      int lo = 0, hi = p.B - 1;  // the last b with cum[b] <= x; then cum[b+1] > x (non-empty)
      while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (p.cum[mid] <= x) lo = mid; else hi = mid - 1;
      }
      first = lo;
    }
    p.part_b[part] = first;
  }
}

}  // namespace

cudaError_t LaunchSchedule(const Params& p, cudaStream_t stream) {
  ScheduleKernel<<<1, kThreads, 0, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace longhaul::mla::gpu
