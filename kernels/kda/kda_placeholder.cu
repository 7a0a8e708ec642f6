// kda/kda_placeholder.cu: proves the sm_90a compile rule in kernels/CMakeLists.txt works before the
// real kernels land (delete it then). It includes the C API header so that kda.h stays nvcc-clean.
#include "kda/kda.h"

__global__ void kda_placeholder_kernel(float* x) {
  x[threadIdx.x] = static_cast<float>(threadIdx.x);
}
