// mla/mla_cuda.cu: the C API (mla.h) on the GPU: mla_fwd_workspace_size and mla_fwd. Validates the
// parameters (mla_api.h's CheckParams plus this backend's limits), carves the workspace
// (schedule.h's layout), and launches the two kernels on the caller's stream: decode.cu (split-KV;
// each CTA finds its entries from the device seqlens) and combine.cu (partials -> o, LSE). No host sync:
// the launch can be captured in a CUDA graph, and the workspace depends on the shape only.
//
// This backend: bf16 q, kv and o; q and kv rows 16-byte aligned (strides multiples of 8 elements);
// o rows 4-byte aligned (even strides); pages of 64 tokens.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cmath>
#include <string>

#include "common/tma.cuh"
#include "mla/mla.h"
#include "mla/mla_api.h"
#include "mla/mla_gpu.cuh"

namespace longhaul::mla {
namespace {

std::string CheckGpu(const mla_fwd_params& p) {
  if (p.in_dtype != MLA_DTYPE_BF16 || p.out_dtype != MLA_DTYPE_BF16)
    return "the GPU backend takes bf16 q, kv and o only";
  auto aligned16 = [](const void* ptr, const int64_t* st, int n) {
    bool ok = reinterpret_cast<uintptr_t>(ptr) % 16 == 0;
    for (int i = 0; i < n; ++i) ok = ok && st[i] % 8 == 0;
    return ok;
  };
  if (!aligned16(p.q, p.q_stride, 3) || !aligned16(p.kv, p.kv_stride, 2))
    return "q and kv rows must be 16-byte aligned (strides multiples of 8)";
  if (reinterpret_cast<uintptr_t>(p.o) % 4 || p.o_stride[0] % 2 || p.o_stride[1] % 2 || p.o_stride[2] % 2)
    return "o rows must be 4-byte aligned";
  if (int64_t(p.B) * p.s_q * p.H >= (int64_t(1) << 31)) return "B * s_q * H must be < 2^31";
  return "";
}

// P for p's shape and the device.
mla_status Parts(const mla_fwd_params& p, int* P) {
  int sms = p.num_sms;
  if (sms == 0) {
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
      return SetError(MLA_ERR_CUDA, "cannot query the SM count");
  }
  *P = p.num_parts > 0 ? p.num_parts : PartsForShape(p.s_q, p.H, sms);
  if (*P > 65535) return SetError(MLA_ERR_UNSUPPORTED, "num_parts must be <= 65535");
  return MLA_OK;
}

unsigned long long* g_profile = nullptr;

// A rank-4 tensor map in decode.cu's shared-memory layout (blocks of 64 rows x 128 bytes, 128-byte
// swizzle) over bf16 rows of 576: (column within a 64-column block, row, block, entry), one box
// `blocks` blocks of 64 rows; false when the driver cannot make one.
bool EncodeRowBlocks(CUtensorMap* map, const void* base, int64_t rows, int64_t row_stride, int64_t entries,
                     int64_t entry_stride, int blocks) {
  const auto encode = kernels::TensorMapEncoder();
  const cuuint64_t dims[4] = {64, cuuint64_t(rows), cuuint64_t(kDimQK / 64), cuuint64_t(entries)};
  const cuuint64_t strides[3] = {cuuint64_t(row_stride) * 2, 128, cuuint64_t(entry_stride) * 2};
  const cuuint32_t box[4] = {64, 64, cuuint32_t(blocks), 1}, unit[4] = {1, 1, 1, 1};
  return encode &&
         encode(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 4, const_cast<void*>(base), dims, strides, box, unit,
                CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// The cache's tensor map for decode.cu's TMA tiles (mla_gpu.cuh), or false when the driver cannot
// make one; the kernel then copies every tile with cp.async. Rows are a page's or an entry's tokens;
// one box is `blocks` blocks of a tile (all nine by default). Nine rank-3 boxes a tile kept the
// issuing thread ~0.9k cycles a tile (B128 H128 684 us; 674 with one box).
bool EncodeKvMap(const mla_fwd_params& p, CUtensorMap* map, int blocks = kDimQK / 64) {
  const bool paged = p.block_table != nullptr;
  const int64_t rows = paged ? kPageSize : p.S_max, entries = paged ? p.num_pages : p.B;
  return rows > 0 && entries > 0 && EncodeRowBlocks(map, p.kv, rows, p.kv_stride[1], entries, p.kv_stride[0], blocks);
}

// Q's tensor map for the multicast of Q within a cluster (decode.cu): rows R = s H + h; false where
// they are not equally spaced (s_q > 1 with a stride of s other than H rows) or the driver cannot
// make one.
bool EncodeQMap(const mla_fwd_params& p, CUtensorMap* map, int blocks) {
  if (p.s_q > 1 && p.q_stride[1] != p.H * p.q_stride[2]) return false;
  return p.q_stride[2] > 0 && (p.B == 1 || p.q_stride[0] > 0) &&
         EncodeRowBlocks(map, p.q, int64_t(p.s_q) * p.H, p.q_stride[2], p.B, p.q_stride[0], blocks);
}

}  // namespace

void gpu::SetProfileBuffer(unsigned long long* buf) { g_profile = buf; }

}  // namespace longhaul::mla

using namespace longhaul::mla;

extern "C" mla_status mla_fwd_workspace_size(const mla_fwd_params* p, size_t* bytes) {
  if (!p || !bytes) return SetError(MLA_ERR_INVALID, "params or bytes is NULL");
  if (p->B < 1 || p->s_q < 1 || p->H < 1) return SetError(MLA_ERR_INVALID, "B, s_q and H must be >= 1");
  int P;
  if (mla_status s = Parts(*p, &P); s != MLA_OK) return s;
  *bytes = size_t(MakeWorkspaceLayout(p->B, p->s_q, p->H, P).bytes);
  ClearError();
  return MLA_OK;
}

extern "C" mla_status mla_fwd(const mla_fwd_params* pp, void* stream) {
  if (!pp) return SetError(MLA_ERR_INVALID, "params is NULL");
  const mla_fwd_params& p = *pp;
  if (std::string e = CheckParams(p, p.seqlens_host); !e.empty()) return SetError(MLA_ERR_INVALID, e);
  if (std::string e = CheckGpu(p); !e.empty()) return SetError(MLA_ERR_UNSUPPORTED, e);
  int P;
  if (mla_status s = Parts(p, &P); s != MLA_OK) return s;
  const WorkspaceLayout w = MakeWorkspaceLayout(p.B, p.s_q, p.H, P);
  if (!p.workspace || p.workspace_bytes < size_t(w.bytes) || reinterpret_cast<uintptr_t>(p.workspace) % 256)
    return SetError(MLA_ERR_WORKSPACE, "workspace needs " + std::to_string(w.bytes) + " bytes, 256-byte aligned");

  gpu::Params g{};
  g.B = p.B, g.s_q = p.s_q, g.H = p.H, g.M = p.s_q * p.H;
  g.m_blocks = MBlocks(p.s_q, p.H);
  const int64_t capacity = int64_t(p.B) * (p.block_table ? int64_t(p.max_pages) * kPageSize : p.S_max);
  g.halves = p.num_parts > 0 ? 1 : HalvesFor(g.M, P, capacity);  // a forced P is kept as given
  g.parts = P / g.halves;
  g.part_tokens = capacity / g.parts;
  g.q = static_cast<const __nv_bfloat16*>(p.q);
  g.kv = static_cast<const __nv_bfloat16*>(p.kv);
  g.o = static_cast<__nv_bfloat16*>(p.o);
  g.lse = p.lse;
  for (int i = 0; i < 3; ++i) g.q_st[i] = p.q_stride[i], g.o_st[i] = p.o_stride[i], g.lse_st[i] = p.lse_stride[i];
  g.kv_st[0] = p.kv_stride[0], g.kv_st[1] = p.kv_stride[1];
  g.block_table = p.block_table, g.bt_stride = p.block_table_stride, g.max_pages = p.max_pages;
  g.kv_tma = EncodeKvMap(p, &g.kv_map) && EncodeKvMap(p, &g.kv_map_lo, 4) && EncodeKvMap(p, &g.kv_map_hi, 5);
  // At B = 1 every part reads its m-block's Q: pairs of CTAs (the halves of a part, else two parts
  // of an m-block) each copy half of it into both (decode.cu; H100, 2026-12-07: s_q1 -0.65 us, s_q2
  // -0.95, s_q4 unchanged).
  g.q_pairs = p.B == 1 && (g.halves == 2 || (g.m_blocks > 1 && g.parts % 2 == 0)) &&
              EncodeQMap(p, &g.q_map_lo, 4) && EncodeQMap(p, &g.q_map_hi, 5);
  g.seqlens = p.seqlens;
  const double scale = p.scale > 0 ? double(p.scale) : 1.0 / std::sqrt(192.0);
  g.scale_log2 = float(scale * 1.4426950408889634074);
  g.causal = p.flags & MLA_FLAG_CAUSAL;
  char* base = static_cast<char*>(p.workspace);
  g.cum = reinterpret_cast<int64_t*>(base + w.cum);
  g.ml = reinterpret_cast<float*>(base + w.ml);
  g.opart = reinterpret_cast<__half*>(base + w.opart);
  g.prof = g_profile;

  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (cudaError_t e = gpu::LaunchDecode(g, s); e != cudaSuccess)
    return SetError(MLA_ERR_CUDA, std::string("decode: ") + cudaGetErrorString(e));
  if (cudaError_t e = gpu::LaunchCombine(g, s); e != cudaSuccess)
    return SetError(MLA_ERR_CUDA, std::string("combine: ") + cudaGetErrorString(e));
  ClearError();
  return MLA_OK;
}
