// mla/mla_gpu.cuh: what the two CUDA kernels of the MLA forward share: the launch parameters, the
// launchers, and the warp-level primitives (mma.sync m16n8k16 bf16 -> fp32, ldmatrix, cp.async with
// zero fill) as inline PTX.
//
// Uses: decode.cu (stage 1: the split-KV kernel, which also finds each part's entries from the
// seqlens), combine.cu (stage 2: merges partials), mla_cuda.cu (the C API launcher).
// The schedule itself (which CTA does which tokens) is mla/schedule.h, shared with the CPU model.
#pragma once

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "common/mma.cuh"
#include "mla/schedule.h"

namespace longhaul::mla::gpu {

// Everything the kernels need (device pointers; strides in elements).
struct Params {
  // The cache as a TMA tensor (mla_cuda.cu), one box a 64-token tile in decode.cu's swizzled layout:
  // the wgmma path copies its tiles with it.
  CUtensorMap kv_map;
  // The same with a box of blocks 0-3 (V's left half) and of blocks 4-8 (V's right half and the
  // rope): the seesaw schedule reloads each half of a buffer as soon as its last reader is done.
  CUtensorMap kv_map_lo, kv_map_hi;
  bool kv_tma;               // the three maps are valid
  int B, s_q, H, M;          // M = s_q * H query rows per entry (row R = s * H + h)
  int m_blocks, parts;       // the decode grid (m_blocks, parts, halves); parts = schedule.h's P / halves
  int halves;                // schedule.h's HalvesFor: 2, each part's V columns in two CTAs
  int64_t part_tokens;       // at most this many tokens a part (the cache's capacity over parts)
  const __nv_bfloat16* q;    int64_t q_st[3];   // {b, s, h}
  const __nv_bfloat16* kv;   int64_t kv_st[2];  // {b, t} contiguous or {page, t} paged
  const int32_t* block_table;                    // paged when not null
  int64_t bt_stride;
  int max_pages;                                 // the entries of a block-table row
  const int32_t* seqlens;    // [B]
  __nv_bfloat16* o;          int64_t o_st[3];
  float* lse;                int64_t lse_st[3];  // or null
  float scale_log2;          // scale * log2(e)
  bool causal;
  // The workspace (schedule.h's layout).
  int64_t* cum;              // [B+2] (schedule.h), written by decode CTA (0, 0), read by the combine
  float* ml;                 // [slots][M][2]
  __half* opart;             // [slots][M][512]
  unsigned long long* prof;  // [kPhaseCounters]: decode.cu's phase clocks (bench diagnostics), or null
  // Q's rows in boxes of blocks 0-3 and 4-8; valid where q_pairs (B = 1: pairs of CTAs that read the
  // same Q rows are clusters, decode.cu, each copying one box into both). Last, so that the other
  // fields keep their offsets in the kernels without pairs.
  CUtensorMap q_map_lo, q_map_hi;
  bool q_pairs;
};

// decode.cu's phase clocks (built with -DMLA_PHASE_CLOCKS), summed over CTAs, in this order: the
// seqlens scan; a segment's prologue; a tile's landing, the barrier after it, the next tile's issue,
// QK^T, softmax, PV; the epilogue; then the count of tiles and of CTAs. Then, for the seesaw, each
// warpgroup's (threads 0 and 128) clocks a pair of tiles: the drain of its previous products, TMA
// issue, the wait for its tile's first half, QK^T's issue, the wait for the second half, the
// named-barrier waits, S's wait, the softmax, PV's issue, PV's wait; then its count of pairs.
enum Phase { kScan, kPrologue, kLand, kBarrier, kIssue, kQK, kSoftmax, kPV, kEpilogue, kTiles, kCtas };
enum SeesawPhase { kSwDrain, kSwLoad, kSwLand, kSwQK, kSwLand2, kSwBarrier, kSwSWait, kSwSoftmax, kSwPV, kSwPVWait,
                   kSwPairs, kSwPhases };
constexpr int kSeesawClocks = kCtas + 1;  // warpgroup c's at kSeesawClocks + kSwPhases c
constexpr int kPhaseCounters = kSeesawClocks + 2 * kSwPhases;

// Sets the buffer (kPhaseCounters, zeroed by the caller) that the following launches of this process
// add decode.cu's phase clocks to; null (the default) turns it off.
void SetProfileBuffer(unsigned long long* buf);

cudaError_t LaunchDecode(const Params& p, cudaStream_t stream);
cudaError_t LaunchCombine(const Params& p, cudaStream_t stream);

constexpr float kLn2 = 0.69314718055994530942f;

// ---- warp-level primitives --------------------------------------------------------------------
using kernels::Mma;
using kernels::SmemAddr;

// Four 8x8 b16 matrices; lane l gives the address of row (l%8) of matrix l/8.
__device__ __forceinline__ void Ldsm4(uint32_t* r, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void Ldsm4T(uint32_t* r, uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// 16 bytes global -> shared; src_bytes = 0 writes zeros (and reads nothing).
__device__ __forceinline__ void CpAsync16(uint32_t smem, const void* gmem, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem), "l"(gmem), "r"(src_bytes));
}
__device__ __forceinline__ void CpAsyncCommit() { asm volatile("cp.async.commit_group;\n"); }
// Until at most n of this thread's most recent groups are still in flight.
template <int n>
__device__ __forceinline__ void CpAsyncWaitGroup() { asm volatile("cp.async.wait_group %0;\n" ::"n"(n) : "memory"); }
__device__ __forceinline__ void CpAsyncWaitAll() { CpAsyncWaitGroup<0>(); }

__device__ __forceinline__ uint32_t PackHalf(float lo, float hi) {
  __half2 v = __floats2half2_rn(lo, hi);  // .x = lo (lower address), .y = hi
  return *reinterpret_cast<uint32_t*>(&v);
}
__device__ __forceinline__ uint32_t PackBf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);  // .x = lo (lower address), .y = hi
  return *reinterpret_cast<uint32_t*>(&v);
}

}  // namespace longhaul::mla::gpu
