// common/cluster.cuh: thread block clusters (sm_90) as inline PTX: the cluster-wide barrier, and
// loads and stores to a peer CTA's shared memory (DSMEM).
#pragma once

#include <cstdint>

namespace longhaul::kernels {

// Every thread of every CTA of the cluster: this CTA's earlier shared-memory writes (its own and
// those to peers) are visible to the cluster after it, and a peer may exit only after the last one
// that follows its accesses to this CTA's shared memory.
__device__ __forceinline__ void ClusterSync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

// The address in CTA `rank`'s shared memory of the byte at this CTA's shared address `smem`.
__device__ __forceinline__ uint32_t PeerAddr(uint32_t smem, uint32_t rank) {
  uint32_t r;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(r) : "r"(smem), "r"(rank));
  return r;
}

__device__ __forceinline__ void StCluster(uint32_t addr, float x, float y) {
  asm volatile("st.shared::cluster.v2.f32 [%0], {%1, %2};\n" ::"r"(addr), "f"(x), "f"(y) : "memory");
}
__device__ __forceinline__ float2 LdCluster(uint32_t addr) {
  float2 v;
  asm volatile("ld.shared::cluster.v2.f32 {%0, %1}, [%2];\n" : "=f"(v.x), "=f"(v.y) : "r"(addr) : "memory");
  return v;
}

}  // namespace longhaul::kernels
