// common/cuda_host.cuh: what the GPU programs of every kernel folder (gpu_check, bench) share on the
// host side: CK, which ends the program with exit status 2 and the failing call on any CUDA error,
// RequireHopper, which ends it the same way on a machine without an sm_90 GPU, and ToDevice, a
// vector's copy in device memory.
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

// Before the first CUDA call: where there is no GPU (or no driver), CUDA's own first error reads
// "CUDA driver version is insufficient for CUDA runtime version", and on a GPU other than sm_90 "no
// kernel image is available"; this names the program and the machine's problem instead.
inline void RequireHopper(const char* program) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    std::fprintf(stderr, "%s: no usable CUDA device on this machine (%s); run it where an H100 or H200 is\n", program,
                 e != cudaSuccess ? cudaGetErrorString(e) : "no devices");
    std::exit(2);
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  if (prop.major != 9 || prop.minor != 0) {
    std::fprintf(stderr, "%s: device 0 is %s (sm_%d%d); these kernels are built for sm_90a (H100, H200)\n", program,
                 prop.name, prop.major, prop.minor);
    std::exit(2);
  }
}

template <typename T>
T* ToDevice(const std::vector<T>& x) {
  T* d = nullptr;
  CK(cudaMalloc(&d, std::max<size_t>(x.size(), 1) * sizeof(T)));
  if (!x.empty()) CK(cudaMemcpy(d, x.data(), x.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

}  // namespace longhaul::kernels
