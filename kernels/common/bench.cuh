// common/bench.cuh: the timing rules every bench program follows (BENCHMARKS.md quotes them):
// random inputs on the device (never zeros), each timed call alone between two CUDA events after a
// 256 MB write that flushes L2, no host sync inside the loop, the median of the samples and half
// their interquartile range (the metrics protocol's `spread`).
#pragma once

#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common/cuda_host.cuh"

namespace longhaul::kernels {

__device__ inline uint32_t Hash(uint64_t x) {
  x ^= x >> 33, x *= 0xff51afd7ed558ccdull, x ^= x >> 33, x *= 0xc4ceb9fe1a85ec53ull, x ^= x >> 33;
  return uint32_t(x);
}
// Approximately normal (sum of 4 uniforms, centred, unit variance) times sd, plus mean.
__device__ inline float Gaussish(uint64_t seed, size_t i, float sd, float mean) {
  float s = 0;
  for (int j = 0; j < 4; ++j) s += Hash(seed * 0x9e3779b97f4a7c15ull + i * 4 + j) * (1.f / 4294967296.f);
  return mean + sd * (s - 2.f) * 1.7320508f;
}
static __global__ void FillBf16(__nv_bfloat16* x, size_t n, uint64_t seed, float sd, float mean = 0.f) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    x[i] = __float2bfloat16_rn(Gaussish(seed, i, sd, mean));
}
static __global__ void FillF32(float* x, size_t n, uint64_t seed, float sd, float mean = 0.f) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    x[i] = Gaussish(seed, i, sd, mean);
}

inline double Median(std::vector<float> x) {
  std::sort(x.begin(), x.end());
  return x[x.size() / 2];
}

// Half the interquartile range: the `spread` of the metrics protocol, which tells longhaul when a
// gain is within the noise and must be re-measured beside the incumbent before it counts.
inline double HalfIqr(std::vector<float> x) {
  std::sort(x.begin(), x.end());
  return (x[x.size() * 3 / 4] - x[x.size() / 4]) / 2;
}

// The L2 flush: a write of more than L2 holds, different bytes each call.
struct L2Flush {
  static constexpr size_t kBytes = size_t(256) << 20;
  void* buffer = nullptr;
  L2Flush() { CK(cudaMalloc(&buffer, kBytes)); }
  ~L2Flush() { cudaFree(buffer); }
  L2Flush(const L2Flush&) = delete;
  L2Flush& operator=(const L2Flush&) = delete;
  void operator()(cudaStream_t st, int i) const { CK(cudaMemsetAsync(buffer, i & 0xff, kBytes, st)); }
};

// Milliseconds of each of `iters` calls of launch() on st, every one after a flush; launch enqueues
// its work on st. The caller warms up first.
template <typename Launch>
std::vector<float> TimeEach(cudaStream_t st, int iters, const L2Flush& flush, Launch&& launch) {
  std::vector<cudaEvent_t> ev(2 * iters);
  for (auto& e : ev) CK(cudaEventCreate(&e));
  for (int i = 0; i < iters; ++i) {
    flush(st, i);
    CK(cudaEventRecord(ev[2 * i], st));
    launch();
    CK(cudaEventRecord(ev[2 * i + 1], st));
  }
  CK(cudaStreamSynchronize(st));
  CK(cudaGetLastError());
  std::vector<float> ms(iters);
  for (int i = 0; i < iters; ++i) CK(cudaEventElapsedTime(&ms[i], ev[2 * i], ev[2 * i + 1]));
  for (auto& e : ev) CK(cudaEventDestroy(e));
  return ms;
}

// launch() (its work enqueued on st) captured once as a CUDA graph; Replay() enqueues all of it with
// one launch, as a model that runs under CUDA graphs would (no host launch cost between kernels).
class CapturedGraph {
 public:
  template <typename Launch>
  CapturedGraph(cudaStream_t st, Launch&& launch) : st_(st) {
    CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeGlobal));
    launch();
    CK(cudaStreamEndCapture(st, &graph_));
    CK(cudaGraphInstantiate(&exec_, graph_, 0));
  }
  ~CapturedGraph() {
    cudaGraphExecDestroy(exec_);
    cudaGraphDestroy(graph_);
  }
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;
  void Replay() const { CK(cudaGraphLaunch(exec_, st_)); }

 private:
  cudaStream_t st_;
  cudaGraph_t graph_;
  cudaGraphExec_t exec_;
};

}  // namespace longhaul::kernels
