// common/tma.cuh: Hopper's asynchronous bulk copies into shared memory (sm_90) as inline PTX: the
// mbarrier a copy completes on, the bulk copy of contiguous bytes, and the tensor-map copy of a box
// (TMA). A copy's issuer announces the bytes with BarArriveExpectTx; the barrier's phase completes
// when they have all landed, and every thread that needs them waits on the phase's parity.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <cstdint>

namespace longhaul::kernels {

// Shared-memory writes by ordinary stores (st.shared, cp.async) become visible to the async proxy
// (wgmma's operand reads, bulk copies out of shared memory) after this fence and a barrier.
__device__ __forceinline__ void FenceProxyAsync() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// Before first use, by one thread; then fence.mbarrier_init (BarInitFence) and a CTA barrier.
__device__ __forceinline__ void BarInit(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared.b64 [%0], %1;\n" ::"r"(bar), "r"(count));
}
__device__ __forceinline__ void BarInitFence() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }
// One arrival that also expects `bytes` of copies to complete on the barrier.
__device__ __forceinline__ void BarArriveExpectTx(uint32_t bar, int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
// Until the phase with this parity (0 for the barrier's first phase, then 1, 0, ...) has completed.
__device__ __forceinline__ void BarWait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n.reg .pred done;\nLAB_WAIT:\n"
      "mbarrier.try_wait.parity.shared.b64 done, [%0], %1;\n"
      "@!done bra LAB_WAIT;\n}\n" ::"r"(bar), "r"(parity) : "memory");
}
// bytes (a multiple of 16, both addresses 16-byte aligned) global -> shared, completing on bar.
__device__ __forceinline__ void BulkLoad(uint32_t smem, const void* gmem, int bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(smem),
               "l"(gmem), "r"(bytes), "r"(bar) : "memory");
}
// bytes (a multiple of 16, both addresses 16-byte aligned) shared -> global, in the thread's current
// bulk group (BulkCommit closes it). The shared bytes must have been fenced (FenceProxyAsync) and
// may be overwritten only after BulkWaitRead; the global writes are done after BulkWait.
__device__ __forceinline__ void BulkStore(void* gmem, uint32_t smem, int bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n" ::"l"(gmem), "r"(smem), "r"(bytes)
               : "memory");
}
__device__ __forceinline__ void BulkCommit() { asm volatile("cp.async.bulk.commit_group;\n" ::: "memory"); }
// Until at most N of this thread's bulk groups still read shared memory.
template <int N>
__device__ __forceinline__ void BulkWaitRead() {
  asm volatile("cp.async.bulk.wait_group.read %0;\n" ::"n"(N) : "memory");
}
template <int N>
__device__ __forceinline__ void BulkWait() {
  asm volatile("cp.async.bulk.wait_group %0;\n" ::"n"(N) : "memory");
}
// The box of a rank-4 tensor map at coordinates (x innermost, y, z, w) -> shared, completing on bar.
// Elements outside the tensor arrive as zeros and count towards the bytes. `map` must be a
// __grid_constant__ kernel parameter (or in global or constant memory).
__device__ __forceinline__ void TmaLoad4d(uint32_t smem, const CUtensorMap* map, int x, int y, int z, int w, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(
          smem),
      "l"(map), "r"(x), "r"(y), "r"(z), "r"(w), "r"(bar)
      : "memory");
}

// TmaLoad4d into the same offset of every CTA of the cluster in cta_mask (bit r: cluster rank r),
// completing on the barrier at bar's offset in each of them; each announces the whole box's bytes
// on its own barrier.
__device__ __forceinline__ void TmaLoad4dMulticast(uint32_t smem, const CUtensorMap* map, int x, int y, int z, int w,
                                                   uint32_t bar, uint16_t cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
      " [%0], [%1, {%2, %3, %4, %5}], [%6], %7;\n" ::"r"(smem),
      "l"(map), "r"(x), "r"(y), "r"(z), "r"(w), "r"(bar), "h"(cta_mask)
      : "memory");
}
// Every thread of every CTA of the cluster: what each did before (its barriers' initialisation
// included) is seen by all after.
__device__ __forceinline__ void ClusterSync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

// Host side: the driver's cuTensorMapEncodeTiled, reached through the runtime so that nothing links
// libcuda; null where the driver has none (the caller then copies without tensor maps).
inline PFN_cuTensorMapEncodeTiled_v12000 TensorMapEncoder() {
  static const auto encode = [] {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found;
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000, cudaEnableDefault, &found) !=
            cudaSuccess ||
        found != cudaDriverEntryPointSuccess)
      fn = nullptr;
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
  }();
  return encode;
}

}  // namespace longhaul::kernels
