// mla/load_probe.cu: how fast one CTA an SM can stream a paged KV cache into shared memory when it
// does nothing else: the ceiling of the decode kernel's tile loads under each way of loading, on
// the B128 H16 S8192 cache (1.2 GB, pages of 64 tokens x 576 bf16, shuffled page table). Each of the
// 132 CTAs (256 threads) streams its 1/132 of the pages in order, a page (72 KiB) a tile, through
// `stages` shared-memory buffers, with the decode kernel's per-tile barrier:
//   cp.async       16-byte cp.async.cg copies (decode.cu's LoadTile), wait_group + __syncthreads
//   bulk rows      one cp.async.bulk a 1152-byte row (rows padded to 1168 bytes, as an unswizzled
//                  tile would need for conflict-free ldmatrix), an mbarrier a buffer
//   bulk tile      one cp.async.bulk of the whole page (possible only for page-aligned tiles)
//   ld.global      no shared memory: 16-byte loads into registers, 16 in flight a thread
// Prints TB/s (bytes of KV / median time, L2 flushed before each launch). Usage: load_probe [iters]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

#include "common/bench.cuh"
#include "common/tma.cuh"
#include "mla/mla_gpu.cuh"

using namespace longhaul::kernels;
using namespace longhaul::mla::gpu;

namespace {

constexpr int kThreads = 256, kRows = longhaul::mla::kPageSize, kRowBytes = longhaul::mla::kDimQK * 2;
constexpr int kPageBytes = kRows * kRowBytes;
constexpr int kPadRow = kRowBytes + 16;

enum Method { kCpAsync, kBulkRows, kBulkTile, kLdGlobal };
// A shared-memory buffer (one page) of each method.
__host__ __device__ constexpr int BufferBytes(Method m) { return m == kLdGlobal ? 0 : m == kBulkRows ? kRows * kPadRow : kPageBytes; }

template <Method kMethod, int kStages>
__global__ void __launch_bounds__(kThreads, 1) Probe(const uint8_t* kv, const int* pages, int num_pages, float* sink) {
  extern __shared__ __align__(128) uint8_t smem[];
  __shared__ __align__(8) uint64_t bars[kStages];
  const int first = int(int64_t(blockIdx.x) * num_pages / gridDim.x);
  const int n = int(int64_t(blockIdx.x + 1) * num_pages / gridDim.x) - first;
  const int tid = threadIdx.x;
  float acc = 0.f;
  if constexpr (kMethod == kLdGlobal) {
    for (int j = 0; j < n; ++j) {
      const uint4* src = reinterpret_cast<const uint4*>(kv + int64_t(pages[first + j]) * kPageBytes);
      uint4 v[18];  // 4608 16-byte pieces a page / 256 threads
#pragma unroll
      for (int k = 0; k < 18; ++k) v[k] = __ldcg(src + tid + k * kThreads);
#pragma unroll
      for (int k = 0; k < 18; ++k) acc += __uint_as_float(v[k].x ^ v[k].w);
    }
  } else {
    const uint32_t base = SmemAddr(smem);
    constexpr int kBuf = BufferBytes(kMethod);
    const uint32_t bar0 = SmemAddr(bars);
    if (tid == 0)
      for (int s = 0; s < kStages; ++s) BarInit(bar0 + 8 * s, 1);
    FenceProxyAsync();
    __syncthreads();
    auto issue = [&](int j) {
      const int s = j % kStages;
      if (j >= n) {
        if constexpr (kMethod == kCpAsync) CpAsyncCommit();
        return;
      }
      const uint8_t* src = kv + int64_t(pages[first + j]) * kPageBytes;
      const uint32_t dst = base + s * kBuf;
      if constexpr (kMethod == kCpAsync) {
        for (int i = tid; i < kPageBytes / 16; i += kThreads) CpAsync16(dst + 16 * i, src + 16 * i, 16);
        CpAsyncCommit();
      } else if (tid < 32) {
        if (tid == 0) BarArriveExpectTx(bar0 + 8 * s, kPageBytes);
        __syncwarp();
        if constexpr (kMethod == kBulkTile) {
          if (tid == 0) BulkLoad(dst, src, kPageBytes, bar0 + 8 * s);
        } else {
          for (int r = tid; r < kRows; r += 32) BulkLoad(dst + r * kPadRow, src + r * kRowBytes, kRowBytes, bar0 + 8 * s);
        }
      }
    };
    for (int j = 0; j + 1 < kStages; ++j) issue(j);
    for (int j = 0; j < n; ++j) {
      if constexpr (kMethod == kCpAsync) CpAsyncWaitGroup<kStages - 2>();
      else BarWait(bar0 + 8 * (j % kStages), (j / kStages) & 1);
      __syncthreads();  // tile j landed everywhere; tile j - 1's buffer is free
      issue(j + kStages - 1);
      acc += reinterpret_cast<const float*>(smem + (j % kStages) * kBuf)[tid];  // touch the tile
    }
    if constexpr (kMethod == kCpAsync) CpAsyncWaitAll();
  }
  if (acc == 1.2345f) sink[0] = acc;  // keeps the loads; practically never true
}

template <Method kMethod, int kStages>
void Run(const char* name, const uint8_t* kv, const int* pages, int num_pages, float* sink, int sms, int iters,
           const L2Flush& flush, cudaStream_t st) {
  const int smem = kStages * BufferBytes(kMethod);
  CK(cudaFuncSetAttribute(Probe<kMethod, kStages>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  auto launch = [&] { Probe<kMethod, kStages><<<sms, kThreads, smem, st>>>(kv, pages, num_pages, sink); };
  launch();
  CK(cudaStreamSynchronize(st));
  CK(cudaGetLastError());
  const double ms = Median(TimeEach(st, iters, flush, launch));
  const double tbs = double(num_pages) * kPageBytes / (ms * 1e-3) / 1e12;
  std::printf("| %s | %d | %.1f | %.2f |\n", name, kStages, ms * 1e3, tbs);
}

}  // namespace

int main(int argc, char** argv) {
  longhaul::kernels::RequireHopper("load_probe");
  const int iters = argc > 1 ? std::max(5, std::atoi(argv[1])) : 20;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount, num_pages = 128 * 8192 / kRows;
  uint8_t* kv;
  int* pages;
  float* sink;
  CK(cudaMalloc(&kv, size_t(num_pages) * kPageBytes));
  CK(cudaMalloc(&pages, num_pages * 4));
  CK(cudaMalloc(&sink, 4));
  FillBf16<<<1024, 256>>>(reinterpret_cast<__nv_bfloat16*>(kv), size_t(num_pages) * kPageBytes / 2, 99, 1.f);
  std::vector<int> perm(num_pages);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937_64(7));
  CK(cudaMemcpy(pages, perm.data(), num_pages * 4, cudaMemcpyHostToDevice));
  const L2Flush flush;
  cudaStream_t st;
  CK(cudaStreamCreate(&st));
  std::printf("load probe: %s, %d CTAs x %d threads, %.2f GB of 72 KiB pages, median of %d, L2 flushed\n\n"
              "| method | buffers | us | TB/s |\n|---|---|---|---|\n",
              prop.name, sms, kThreads, double(num_pages) * kPageBytes / 1e9, iters);
  Run<kCpAsync, 2>("cp.async 16 B", kv, pages, num_pages, sink, sms, iters, flush, st);
  Run<kCpAsync, 3>("cp.async 16 B", kv, pages, num_pages, sink, sms, iters, flush, st);
  Run<kBulkRows, 2>("bulk rows", kv, pages, num_pages, sink, sms, iters, flush, st);
  Run<kBulkRows, 3>("bulk rows", kv, pages, num_pages, sink, sms, iters, flush, st);
  Run<kBulkTile, 2>("bulk tile", kv, pages, num_pages, sink, sms, iters, flush, st);
  Run<kBulkTile, 3>("bulk tile", kv, pages, num_pages, sink, sms, iters, flush, st);
  Run<kLdGlobal, 1>("ld.global", kv, pages, num_pages, sink, sms, iters, flush, st);
  return 0;
}
