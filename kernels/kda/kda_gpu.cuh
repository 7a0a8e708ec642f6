// kda/kda_gpu.cuh: what fused.cu's kernels and their launcher (kda_cuda.cu) share: the launch
// parameters, the workspace (the prep + scan variant's chunk images), kda_fwd's choice of variant,
// and the warp-level primitives (mma.sync m16n8k16 bf16 -> fp32, ldmatrix, cp.async) as inline PTX.
//
// ---- Workspace: one image per (chunk, head), index gc * H + h with gc the chunk's global index
// (sequences' chunks back to back; chunk = 64 tokens of one sequence, a tail's rows zero in every
// matrix): the fused kernel's scan operands as they lie in its shared memory, W, Qg, Kg [64][128]
// and Aqk [64][64] bf16 in 128-byte-swizzled 64 x 64 blocks (8 KiB each), U^T bf16 [128][72] (rows
// v), gamma fp32 [128]. 76,288 bytes per (chunk, head). The one-kernel variants use none of it.
#pragma once

#include <cuda_bf16.h>

#include "common/mma.cuh"
#include "kda/kda.h"
#include "kda/variant.h"
#include <cstddef>
#include <cstdint>

namespace longhaul::kda {
// kda_fwd with a choice of kernels (variant.h), for side-by-side timing.
kda_status FwdVariant(const kda_fwd_params* p, void* stream, Variant variant);
// The current device's SMs and DRAM peak (memory clock x bus width, double rate), for AutoVariant.
DeviceInfo CurrentDevice();
// Diagnostics: the fused kernel adds its per-phase clocks ([0..5], fused.cu) and its chunk count ([6])
// into buf (device memory, 7 counters) on every launch while buf is set; null turns it off.
void SetProfileBuffer(unsigned long long* buf);
}  // namespace longhaul::kda

namespace longhaul::kda::gpu {

constexpr int kC = 64;   // chunk: tokens per step of the scan (FLA's BT)
constexpr int kK = 128;  // key dim (the only one built)
constexpr int kV = 128;  // value dim
constexpr int kImgW = 0, kImgQg = 2 * kC * 128, kImgUt = 7 * kC * 128, kImgGam = kImgUt + kV * 72 * 2;
constexpr int kImgBytes = kImgGam + kK * 4;
constexpr int kPrepCtasPerSm = 2;  // the preparation alone: its shared memory and registers fit two

// Bytes for n_ch (chunk, head) images.
inline size_t WorkspaceBytes(size_t n_ch) { return n_ch * kImgBytes; }

// Everything the kernels need about the problem (device pointers, strides in elements).
struct Params {
  int B, T, H, N;            // N sequences (= B, or num_seqs in varlen)
  const int64_t* cu;         // device cu_seqlens [N+1] or nullptr (then sequence n = batch row n)
  const void *q, *k, *v, *g, *beta;
  int64_t q_st[3], k_st[3], v_st[3], g_st[3], beta_st[3], o_st[3];
  bool in_bf16, g_bf16, beta_bf16, out_bf16;
  void* o;
  const float* A_log;    // [H] or nullptr
  const float* dt_bias;  // [H*K] or nullptr
  const float* h0;       // [N,H,K,V] or nullptr
  float* hT;             // [N,H,K,V] or nullptr
  bool v_first;          // states are [N,H,V,K]
  float scale;
  float lower_bound;
  int gate;              // kda_gate_mode
  bool l2norm, beta_sigmoid, neg_eigval;
  unsigned char* img;        // the workspace: the prep + scan variant's chunk images
  int64_t prep_chunks;       // prep + scan: global chunks, all sequences (a bound in varlen without a
                             // host copy of cu_seqlens: chunks past the last sequence are skipped)
  int prep_ctas;             // prep + scan: the preparation's CTAs (one an SM), an equal share each
  unsigned long long* prof;  // fused.cu's phase clocks, summed over CTAs (bench diagnostics), or null
};

// kda_fwd's Params for p (kda_cuda.cu; p already checked): everything but the launch's prep_chunks
// and prep_ctas, which stay zero.
Params ParamsOf(const kda_fwd_params& p);

// Token range [bos, eos) of sequence n, the batch row it lives in, and its first global chunk.
struct SeqInfo {
  int64_t bos, len;
  int b;
  int chunk0;
};
// Token range [bos, bos + len) of sequence n.
__device__ inline void SeqSpan(const Params& p, int n, int64_t& bos, int64_t& len) {
  if (p.cu) bos = p.cu[n], len = p.cu[n + 1] - p.cu[n];
  else bos = 0, len = p.T;
}
__device__ inline SeqInfo GetSeq(const Params& p, int n) {
  SeqInfo s;
  SeqSpan(p, n, s.bos, s.len);
  if (!p.cu) {
    s.b = n;
    s.chunk0 = n * ((p.T + kC - 1) / kC);
  } else {
    s.b = 0;
    int c = 0;
    for (int m = 0; m < n; ++m) c += int((p.cu[m + 1] - p.cu[m] + kC - 1) / kC);
    s.chunk0 = c;
  }
  return s;
}

// Launchers (fused.cu); they return cudaGetLastError() of their launch.
// The whole forward in one kernel, with the V columns in `slices` (1 or 2) CTAs a head.
cudaError_t LaunchFused(const Params& p, int slices, cudaStream_t stream);
// The preparation on all SMs (chunk images to p.img), then the scan with `slices` CTAs a head.
cudaError_t LaunchPrepScan(const Params& p, int slices, cudaStream_t stream);

// ---- warp-level primitives --------------------------------------------------------------------
using kernels::Mma;
using kernels::SmemAddr;

// Four 8x8 b16 matrices; lane l gives the address of row (l%8) of matrix l/8.
__device__ __forceinline__ void Ldsm4(uint32_t* r, const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(SmemAddr(p)));
}
__device__ __forceinline__ void Ldsm4T(uint32_t* r, const void* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(SmemAddr(p)));
}
// A fragment of the 16x16 tile at (m0, k0) of a row-major bf16 [.][ld] smem matrix.
__device__ __forceinline__ void LoadA(uint32_t* a, const __nv_bfloat16* base, int ld, int m0, int k0,
                                      int lane) {
  Ldsm4(a, base + (m0 + (lane & 15)) * ld + k0 + (lane >> 4) * 8);
}
// B fragments of two n-tiles (n0, n0+8) over k0..k0+15 from a row-major [k][n] smem matrix:
// b[0],b[1] for n-tile n0, b[2],b[3] for n-tile n0+8.
__device__ __forceinline__ void LoadBKN(uint32_t* b, const __nv_bfloat16* base, int ld, int k0, int n0,
                                        int lane) {
  Ldsm4T(b, base + (k0 + (lane & 15)) * ld + n0 + (lane >> 4) * 8);
}

__device__ __forceinline__ uint32_t PackBf16(float lo, float hi) {
  __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);  // .x = lo (lower address), .y = hi
  return *reinterpret_cast<uint32_t*>(&v);
}
// x = hi + lo with hi = bf16(x), lo = bf16(x - hi): two bf16 MMAs (hi.b + lo.b) carry ~16 bits.
__device__ __forceinline__ void SplitBf16(float x0, float x1, uint32_t& hi, uint32_t& lo) {
  __nv_bfloat162 h = __floats2bfloat162_rn(x0, x1);
  const float2 hf = __bfloat1622float2(h);
  __nv_bfloat162 l = __floats2bfloat162_rn(x0 - hf.x, x1 - hf.y);
  hi = *reinterpret_cast<uint32_t*>(&h);
  lo = *reinterpret_cast<uint32_t*>(&l);
}

__device__ __forceinline__ void CpAsync16(void* smem, const void* gmem) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(SmemAddr(smem)), "l"(gmem));
}
__device__ __forceinline__ void CpAsyncCommit() { asm volatile("cp.async.commit_group;\n"); }
template <int N>
__device__ __forceinline__ void CpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

}  // namespace longhaul::kda::gpu
