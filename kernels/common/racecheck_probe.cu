// common/racecheck_probe.cu: does compute-sanitizer racecheck model named barriers? Warpgroup 0
// writes shared memory and hands it to warpgroup 1, which reads it and hands the buffer back, four
// times, in five ways: 0 bar.arrive -> bar.sync (producer / consumer), 1 bar.sync on both sides,
// 2 __syncthreads, 3 as 1 plus a 128-thread bar.red in warpgroup 1, 4 as 1 plus a 128-thread
// bar.sync; ways 5 and 6 (Seesaw below) replay decode.cu's seesaw hand-offs; ways 7 and 8 (WgmmaReads
// below) put a wgmma between the writes and the reads; ways 9 and 10 (TensorReloads below) reload
// the wgmma's tile by a TMA tensor copy after each hand-back. All are correct. On the H200 racecheck
// flagged way 0 (3 hazards, 2026-12-03) and none of the others (ways 5, 6: 2026-12-04); on an H100
// ways 7 and 8 were clean too (2026-12-07). Ways 9 and 10: built, not yet run.
// Usage (on the GPU):
//   nvcc -O2 -lineinfo -gencode=arch=compute_90a,code=sm_90a -I kernels kernels/common/racecheck_probe.cu -o probe
//   compute-sanitizer --tool racecheck ./probe [way]
#include <cstdio>
#include <cstdlib>

#include "common/cuda_host.cuh"
#include "common/mma.cuh"
#include "common/tma.cuh"
#include "common/wgmma.cuh"

template <int kWay>
__global__ void HandOff(float* out) {
  __shared__ float s[64];
  const int wg = threadIdx.x >> 7, r = threadIdx.x & 63;
  constexpr bool kSyncBoth = kWay == 1 || kWay >= 3;
  float acc = 0.f;
  for (int it = 0; it < 4; ++it) {
    if (wg == 0) {
      if ((threadIdx.x & 1) == 0) s[r] = float(it + r);
      if (kWay == 0) asm volatile("bar.arrive 1, 256;" ::: "memory");
      if (kWay == 0 || kSyncBoth) asm volatile("bar.sync %0, 256;" ::"n"(kWay == 0 ? 2 : 1) : "memory");
      if (kSyncBoth) asm volatile("bar.sync 2, 256;" ::: "memory");
      if (kWay == 2) __syncthreads(), __syncthreads();
    } else {
      if (kWay == 0 || kSyncBoth) asm volatile("bar.sync 1, 256;" ::: "memory");
      if (kWay == 2) __syncthreads();
      acc += s[r];
      if (kWay == 3) {
        unsigned any;
        asm volatile("{\n.reg .pred p, q;\nsetp.ne.u32 p, %1, 0;\nbar.red.or.pred q, 4, 128, p;\nselp.u32 %0, 1, 0, q;\n}"
                     : "=r"(any)
                     : "r"(unsigned(acc > 1e9f))
                     : "memory");
        acc += float(any);
      }
      if (kWay == 4) asm volatile("bar.sync 4, 128;" ::: "memory");
      if (kWay == 0) asm volatile("bar.arrive 2, 256;" ::: "memory");
      if (kSyncBoth) asm volatile("bar.sync 2, 256;" ::: "memory");
      if (kWay == 2) __syncthreads();
    }
  }
  out[threadIdx.x] = acc;
}

// Way 5: the seesaw's sequence of hand-offs (kernels/mla/decode.cu, RunSeesaw) with plain
// shared-memory traffic in place of the tiles: per pair WG0 publishes its rows' reference and arrives
// on kBarQ and kBarM, writes P_A and arrives on kBarA, waits on kBarB and reads WG1's reference and
// P_B; WG1 waits on kBarQ and kBarM, reads WG0's reference, publishes its own and P_B, arrives on kBarB,
// waits on kBarA, reads P_A, and runs the 128-thread bar.red; then the epilogue's sums meet across a
// __syncthreads. (Waiting on both sides of kBarA and kBarB would deadlock: WG0 passes A before B,
// WG1 B before A.) Way 6 adds a bulk copy (TMA) a warpgroup and pair into a region of its own, which
// every thread of the warpgroup waits for on an mbarrier and reads: no region is reused.
template <bool kCopies>
__global__ void Seesaw(const float* src, float* out) {
  using namespace longhaul::kernels;
  __shared__ float sM[128], sSum[128], sPA[64 * 8], sPB[64 * 8];
  __shared__ __align__(128) float sBuf[8][128];
  __shared__ __align__(8) uint64_t bars[8];
  if (kCopies) {
    if (threadIdx.x == 0) {
      for (int i = 0; i < 8; ++i) BarInit(SmemAddr(&bars[i]), 1);
      BarInitFence();
    }
    __syncthreads();
  }
  const int wg = threadIdx.x >> 7, lane = threadIdx.x & 31, wt = threadIdx.x & 127;
  const int r0 = 16 * (wt >> 5) + (lane >> 2), r1 = r0 + 8;
  float acc = 0.f, l = 0.f;
  for (int k = 0; k < 4; ++k) {
    if (kCopies) {
      const int i = 2 * k + wg;
      const uint32_t bar = SmemAddr(&bars[i]);
      if (wt == 0) {
        BarArriveExpectTx(bar, sizeof sBuf[i]);
        BulkLoad(SmemAddr(sBuf[i]), src + 128 * i, sizeof sBuf[i], bar);
      }
      BarWait(bar, 0);
      acc += sBuf[i][wt];
    }
    if (wg == 0) {
      asm volatile("bar.arrive 5, 256;" ::: "memory");
      if ((lane & 3) == 0) sM[r0] = float(k), sM[r1] = float(k + 1);
      asm volatile("bar.arrive 6, 256;" ::: "memory");
      sPA[wt * 4 + (k & 3)] = acc;
      asm volatile("bar.arrive 1, 256;" ::: "memory");
      asm volatile("bar.sync 2, 256;" ::: "memory");
      acc += sM[64 + r0] + sM[64 + r1] + sPB[(127 - wt) * 4];
      l += acc;
    } else {
      asm volatile("bar.sync 5, 256;" ::: "memory");
      asm volatile("bar.sync 6, 256;" ::: "memory");
      const float m0 = sM[r0], m1 = sM[r1];
      if ((lane & 3) == 0) sM[64 + r0] = m0 + 1.f, sM[64 + r1] = m1 + 1.f;
      sPB[wt * 4] = m0 + m1;
      asm volatile("bar.arrive 2, 256;" ::: "memory");
      asm volatile("bar.sync 1, 256;" ::: "memory");
      acc += sPA[(127 - wt) * 4 + (k & 3)];
      unsigned any;
      asm volatile("{\n.reg .pred p, q;\nsetp.ne.u32 p, %1, 0;\nbar.red.or.pred q, 4, 128, p;\nselp.u32 %0, 1, 0, q;\n}"
                   : "=r"(any)
                   : "r"(unsigned(acc > 1e9f))
                   : "memory");
      l += acc + float(any);
    }
  }
  if ((lane & 3) == 0) sSum[64 * wg + r0] = l, sSum[64 * wg + r1] = l;
  __syncthreads();
  out[threadIdx.x] = acc + sSum[64 * (1 - wg) + r0];
}

// Ways 7-10's mbarrier (one arrival a phase), initialised by thread 0 before any thread uses it.
__device__ __forceinline__ void InitBarrier(uint64_t& bar) {
  using namespace longhaul::kernels;
  if (threadIdx.x == 0) {
    BarInit(SmemAddr(&bar), 1);
    BarInitFence();
  }
  __syncthreads();
}
// Warpgroup 0's side of ways 7-10: writes tile A (64 x 64 bf16) for round k, fences it for the async
// proxy and hands it over on barrier 1.
__device__ __forceinline__ void WriteAndHandOver(uint16_t* sA, int wt, int k) {
  for (int i = wt; i < 64 * 64; i += 128) sA[i] = uint16_t(0x3c00 + k);
  longhaul::kernels::FenceProxyAsync();
  asm volatile("bar.arrive 1, 256;" ::: "memory");
}
// Warpgroup 1's product d += A B over the 64-wide k of two swizzled tiles, waited for.
__device__ __forceinline__ void Product(float (&d)[8][4], const uint16_t* sA, const uint16_t* sB) {
  using namespace longhaul::kernels;
  WgmmaFence();
#pragma unroll
  for (int s = 0; s < 4; ++s)
    Wgmma64x64(d, Sw128Desc(SmemAddr(sA) + Sw128KStep(s, 8192), 0, 1024),
               Sw128Desc(SmemAddr(sB) + Sw128KStep(s, 8192), 0, 1024), 1);
  WgmmaCommit();
  WgmmaWait<0>();
  FenceOperands(d);
}

// Ways 7 and 8: shared memory that a wgmma reads (the async proxy), as decode.cu's tiles are read.
// Way 7, four times: warpgroup 0 writes a 64 x 64 bf16 tile with st.shared, fences it for the async
// proxy and hands it over (bar.arrive -> bar.sync); warpgroup 1's wgmma reads it as A (B: a tile that
// a bulk copy brought in, waited for on an mbarrier), waits for the wgmma and hands the tile back.
// Way 8: way 7, then decode.cu's epilogue sums (sSum, a region of its own): every thread writes its
// word, __syncthreads, reads another thread's word.
template <bool kSums>
__global__ void WgmmaReads(const float* src, float* out) {
  using namespace longhaul::kernels;
  __shared__ __align__(1024) uint16_t sA[64 * 64], sB[64 * 64];
  __shared__ float sSum[256];
  __shared__ __align__(8) uint64_t bar;
  const int wg = threadIdx.x >> 7, wt = threadIdx.x & 127;
  InitBarrier(bar);
  if (threadIdx.x == 0) {
    BarArriveExpectTx(SmemAddr(&bar), sizeof sB);
    BulkLoad(SmemAddr(sB), src, sizeof sB, SmemAddr(&bar));
  }
  BarWait(SmemAddr(&bar), 0);
  float d[8][4] = {};
  for (int k = 0; k < 4; ++k) {
    if (wg == 0) {
      if (k > 0) asm volatile("bar.sync 2, 256;" ::: "memory");
      WriteAndHandOver(sA, wt, k);
    } else {
      asm volatile("bar.sync 1, 256;" ::: "memory");
      Product(d, sA, sB);
      if (k < 3) asm volatile("bar.arrive 2, 256;" ::: "memory");
    }
  }
  float acc = d[0][0] + d[7][3];
  if (kSums) {
    sSum[threadIdx.x] = acc;
    __syncthreads();
    acc += sSum[255 - threadIdx.x];
  }
  out[threadIdx.x] = acc;
}

// Ways 9 and 10: the tile a wgmma reads is reloaded by a TMA tensor copy (a 64 x 64 bf16 box,
// 128-byte swizzle, as decode.cu's KV tiles), four times into one buffer. Warpgroup 0's thread 0
// issues each copy after warpgroup 1 has handed the buffer back (bar.arrive -> bar.sync, after the
// wgmma's wait); warpgroup 1 waits for the copy on the mbarrier's parity, and the wgmma reads it with
// a tile (A) that warpgroup 0 wrote with st.shared and fenced, as in way 7. Way 10 also zeroes rows
// of the landed tile with st.shared before the wgmma, fenced for the async proxy and joined by a
// 128-thread barrier (decode.cu's ZeroRows on a tile past the split's end).
template <bool kZeroRows>
__global__ void TensorReloads(const __grid_constant__ CUtensorMap map, float* out) {
  using namespace longhaul::kernels;
  __shared__ __align__(1024) uint16_t sA[64 * 64], sB[64 * 64];
  __shared__ __align__(8) uint64_t bar;
  const int wg = threadIdx.x >> 7, wt = threadIdx.x & 127;
  InitBarrier(bar);
  float d[8][4] = {};
  for (int k = 0; k < 4; ++k) {
    if (wg == 0) {
      if (k > 0) asm volatile("bar.sync 2, 256;" ::: "memory");
      if (wt == 0) {
        BarArriveExpectTx(SmemAddr(&bar), sizeof sB);
        TmaLoad4d(SmemAddr(sB), &map, 0, 0, 0, k & 1, SmemAddr(&bar));
      }
      WriteAndHandOver(sA, wt, k);
    } else {
      asm volatile("bar.sync 1, 256;" ::: "memory");
      BarWait(SmemAddr(&bar), k & 1);
      if (kZeroRows) {
        for (int i = 48 * 64 + wt; i < 64 * 64; i += 128) sB[i] = 0;  // rows 48-63 (their swizzle: same rows)
        FenceProxyAsync();
        asm volatile("bar.sync 3, 128;" ::: "memory");
      }
      Product(d, sA, sB);
      if (k < 3) asm volatile("bar.arrive 2, 256;" ::: "memory");
    }
  }
  out[threadIdx.x] = d[0][0] + d[7][3];
}

// Ways 9 and 10's tensor map: two 64 x 64 bf16 tiles at src, as (column, row, block, tile), one tile a
// box, 128-byte swizzle (mla_cuda.cu's EncodeKvMap with one block). False where the driver cannot make it.
static bool EncodeTileMap(void* src, CUtensorMap* map) {
  const auto encode = longhaul::kernels::TensorMapEncoder();
  const cuuint64_t dims[4] = {64, 64, 1, 2}, strides[3] = {128, 8192, 8192};
  const cuuint32_t box[4] = {64, 64, 1, 1}, unit[4] = {1, 1, 1, 1};
  return encode && encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, src, dims, strides, box, unit,
                          CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                          CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

int main(int argc, char** argv) {
  longhaul::kernels::RequireHopper("racecheck_probe");
  const int way = argc > 1 ? std::atoi(argv[1]) : -1;  // -1: all
  float* d = nullptr;
  if (cudaMalloc(&d, 256 * sizeof(float)) != cudaSuccess) return 1;
  if (way < 0 || way == 0) HandOff<0><<<1, 256>>>(d);
  if (way < 0 || way == 1) HandOff<1><<<1, 256>>>(d);
  if (way < 0 || way == 2) HandOff<2><<<1, 256>>>(d);
  if (way < 0 || way == 3) HandOff<3><<<1, 256>>>(d);
  if (way < 0 || way == 4) HandOff<4><<<1, 256>>>(d);
  float* src = nullptr;
  if (cudaMalloc(&src, 8 * 128 * sizeof(float)) != cudaSuccess || cudaMemset(src, 0, 8 * 128 * sizeof(float)) != cudaSuccess)
    return 1;
  if (way < 0 || way == 5) Seesaw<false><<<1, 256>>>(src, d);
  if (way < 0 || way == 6) Seesaw<true><<<1, 256>>>(src, d);
  float* tiles = nullptr;  // two 64 x 64 bf16 tiles of zeros: way 7 and 8's B, way 9 and 10's copies
  if (cudaMalloc(&tiles, 16384) != cudaSuccess || cudaMemset(tiles, 0, 16384) != cudaSuccess) return 1;
  if (way < 0 || way == 7) WgmmaReads<false><<<1, 256>>>(tiles, d);
  if (way < 0 || way == 8) WgmmaReads<true><<<1, 256>>>(tiles, d);
  if (way < 0 || way >= 9) {
    CUtensorMap map;
    if (!EncodeTileMap(tiles, &map)) {
      std::printf("racecheck_probe: the driver made no tensor map (ways 9, 10)\n");
      return 1;
    }
    if (way < 0 || way == 9) TensorReloads<false><<<1, 256>>>(map, d);
    if (way < 0 || way == 10) TensorReloads<true><<<1, 256>>>(map, d);
  }
  const cudaError_t e = cudaDeviceSynchronize();
  std::printf("racecheck_probe: %s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
