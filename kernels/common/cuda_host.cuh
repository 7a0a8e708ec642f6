// common/cuda_host.cuh: what the GPU programs of every kernel folder (gpu_check, bench) share on the
// host side: CK, which ends the program with exit status 2 and the failing call on any CUDA error,
// and ToDevice, a vector's copy in device memory.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define CK(x)                                                                                  \
  do {                                                                                         \
    cudaError_t e_ = (x);                                                                      \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(2);                                                                            \
    }                                                                                          \
  } while (0)

namespace longhaul::kernels {

template <typename T>
T* ToDevice(const std::vector<T>& x) {
  T* d = nullptr;
  CK(cudaMalloc(&d, std::max<size_t>(x.size(), 1) * sizeof(T)));
  if (!x.empty()) CK(cudaMemcpy(d, x.data(), x.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

}  // namespace longhaul::kernels
