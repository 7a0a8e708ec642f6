// common/racecheck_probe.cu: does compute-sanitizer racecheck model named barriers? Warpgroup 0
// writes shared memory and hands it to warpgroup 1, which reads it and hands the buffer back, four
// times, in five ways: 0 bar.arrive -> bar.sync (producer / consumer, as decode.cu's seesaw), 1
// bar.sync on both sides, 2 __syncthreads, 3 as 1 plus a 128-thread bar.red in warpgroup 1, 4 as 1
// plus a 128-thread bar.sync. All five are correct. On the H200 (2026-12-03) racecheck flagged way 0
// (3 hazards) and none of the others. Usage (on the GPU):
//   nvcc -O2 -lineinfo -gencode=arch=compute_90a,code=sm_90a racecheck_probe.cu -o probe
//   compute-sanitizer --tool racecheck ./probe [way]
#include <cstdio>
#include <cstdlib>

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

int main(int argc, char** argv) {
  const int way = argc > 1 ? std::atoi(argv[1]) : -1;  // -1: all
  float* d = nullptr;
  if (cudaMalloc(&d, 256 * sizeof(float)) != cudaSuccess) return 1;
  if (way < 0 || way == 0) HandOff<0><<<1, 256>>>(d);
  if (way < 0 || way == 1) HandOff<1><<<1, 256>>>(d);
  if (way < 0 || way == 2) HandOff<2><<<1, 256>>>(d);
  if (way < 0 || way == 3) HandOff<3><<<1, 256>>>(d);
  if (way < 0 || way == 4) HandOff<4><<<1, 256>>>(d);
  const cudaError_t e = cudaDeviceSynchronize();
  std::printf("racecheck_probe: %s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
