// mla/mla_cpu.cc: mla_fwd_cpu, the C API (mla.h) on the CPU: gathers the strided bf16/fp32 q and KV
// cache into contiguous floats (the cache keeps its contiguous or paged layout, block table and
// all), runs the float64 reference (reference.h), and writes o (float64 -> fp32 -> out_dtype, bf16
// by round-to-nearest-even) and the natural-log LSE (fp32) in the caller's strides.
//
// Uses: the reference backend of gpu_check.cu and of the future Python module; tests of the C API.
#include <stdexcept>
#include <vector>

#include "mla/mla.h"
#include "mla/mla_api.h"
#include "mla/reference.h"

namespace longhaul::mla {
namespace {

float LoadElem(const void* base, mla_dtype dt, int64_t i) {
  if (dt == MLA_DTYPE_BF16) return Bf16ToFloat(static_cast<const uint16_t*>(base)[i]);
  return static_cast<const float*>(base)[i];
}

mla_status Run(const mla_fwd_params& p) {
  if (std::string err = CheckParams(p, p.seqlens); !err.empty()) return SetError(MLA_ERR_INVALID, err);
  const int B = p.B, s_q = p.s_q, H = p.H;
  std::vector<float> q(size_t(B) * s_q * H * kDimQK);
  size_t x = 0;
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < s_q; ++i)
      for (int h = 0; h < H; ++h) {
        const int64_t off = b * p.q_stride[0] + i * p.q_stride[1] + h * p.q_stride[2];
        for (int d = 0; d < kDimQK; ++d) q[x++] = LoadElem(p.q, p.in_dtype, off + d);
      }
  const bool paged = p.block_table != nullptr;
  const int64_t outer = paged ? p.num_pages : B, rows = paged ? kPageSize : p.S_max;
  std::vector<float> kv(size_t(outer * rows) * kDimQK);
  x = 0;
  for (int64_t a = 0; a < outer; ++a)
    for (int64_t t = 0; t < rows; ++t) {
      const int64_t off = a * p.kv_stride[0] + t * p.kv_stride[1];
      for (int d = 0; d < kDimQK; ++d) kv[x++] = LoadElem(p.kv, p.in_dtype, off + d);
    }

  Problem pr;
  pr.B = B, pr.s_q = s_q, pr.H = H;
  pr.q = q.data();
  pr.kv.data = kv.data();
  pr.kv.stride_outer = rows * kDimQK;
  pr.kv.stride_token = kDimQK;
  pr.kv.capacity = paged ? 0 : p.S_max;
  pr.kv.block_table = p.block_table;
  pr.kv.bt_stride = p.block_table_stride;
  pr.kv.max_pages = p.max_pages;
  pr.kv.num_pages = p.num_pages;
  pr.seqlens.assign(p.seqlens, p.seqlens + B);
  pr.causal = p.flags & MLA_FLAG_CAUSAL;
  pr.scale = p.scale;
  Result r;
  try {
    r = Attention(pr);
  } catch (const std::exception& e) {
    return SetError(MLA_ERR_INVALID, e.what());
  }
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < s_q; ++i)
      for (int h = 0; h < H; ++h) {
        const size_t row = (size_t(b) * s_q + i) * H + h;
        const double* src = r.o.data() + row * kDimV;
        const int64_t off = b * p.o_stride[0] + i * p.o_stride[1] + h * p.o_stride[2];
        for (int e = 0; e < kDimV; ++e) {
          const float f = float(src[e]);
          if (p.out_dtype == MLA_DTYPE_BF16)
            static_cast<uint16_t*>(p.o)[off + e] = FloatToBf16(f);
          else
            static_cast<float*>(p.o)[off + e] = f;
        }
        if (p.lse)
          p.lse[b * p.lse_stride[0] + i * p.lse_stride[1] + h * p.lse_stride[2]] = float(r.lse[row]);
      }
  ClearError();
  return MLA_OK;
}

}  // namespace
}  // namespace longhaul::mla

extern "C" mla_status mla_fwd_cpu(const mla_fwd_params* p, void* /*stream*/) {
  if (!p) return longhaul::mla::SetError(MLA_ERR_INVALID, "params is NULL");
  return longhaul::mla::Run(*p);
}
