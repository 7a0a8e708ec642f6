// mla/mla_api.cc: the backend-independent part of the C API: defaults, validation, errors.
#include "mla/mla_api.h"

#include "mla/schedule.h"

namespace longhaul::mla {
namespace {
thread_local std::string g_last_error;
bool ValidDtype(mla_dtype d) { return d == MLA_DTYPE_F32 || d == MLA_DTYPE_BF16; }
}  // namespace

mla_status SetError(mla_status s, const std::string& detail) {
  g_last_error = detail;
  return s;
}
void ClearError() { g_last_error.clear(); }

std::string CheckParams(const mla_fwd_params& p, const int32_t* seqlens_host) {
  if (p.B < 1 || p.s_q < 1 || p.H < 1) return "B, s_q and H must be >= 1";
  if (!p.q || !p.kv || !p.o || !p.seqlens) return "q, kv, o and seqlens are required";
  if (!ValidDtype(p.in_dtype) || !ValidDtype(p.out_dtype)) return "unknown dtype";
  for (int i = 0; i < 3; ++i)
    if (p.q_stride[i] < 0 || p.o_stride[i] < 0 || p.lse_stride[i] < 0) return "strides must be >= 0";
  if (p.kv_stride[0] < 0 || p.kv_stride[1] < 0) return "strides must be >= 0";
  if (p.flags & ~uint32_t(MLA_FLAG_CAUSAL)) return "unknown flag bits";
  if (p.num_sms < 0 || p.num_parts < 0) return "num_sms and num_parts must be >= 0";
  int64_t capacity;
  if (p.block_table) {
    if (p.num_pages < 1 || p.max_pages < 1) return "a paged cache needs num_pages and max_pages >= 1";
    if (p.block_table_stride < p.max_pages) return "block_table_stride must be >= max_pages";
    capacity = int64_t(p.max_pages) * kPageSize;
  } else {
    if (p.S_max < 0) return "S_max must be >= 0";
    capacity = p.S_max;
  }
  if (seqlens_host) {
    int64_t total = 0;
    for (int b = 0; b < p.B; ++b) {
      if (seqlens_host[b] < 0) return "seqlens must be >= 0";
      if (seqlens_host[b] > capacity)
        return "seqlens[" + std::to_string(b) + "] = " + std::to_string(seqlens_host[b]) +
               " exceeds the cache's capacity " + std::to_string(capacity);
      total += seqlens_host[b];
    }
    if (total >= (int64_t(1) << 40)) return "sum of seqlens too large";
  }
  return "";
}

}  // namespace longhaul::mla

using namespace longhaul::mla;

extern "C" {

void mla_fwd_params_init(mla_fwd_params* p) {
  std::memset(p, 0, sizeof(*p));
  p->in_dtype = MLA_DTYPE_BF16;
  p->out_dtype = MLA_DTYPE_BF16;
  p->flags = MLA_FLAG_CAUSAL;
}

void mla_fwd_params_set_contiguous(mla_fwd_params* p) {
  const int64_t s_q = p->s_q, H = p->H;
  auto set = [](int64_t* s, int64_t b, int64_t t, int64_t h) { s[0] = b, s[1] = t, s[2] = h; };
  set(p->q_stride, s_q * H * kDimQK, H * kDimQK, kDimQK);
  set(p->o_stride, s_q * H * kDimV, H * kDimV, kDimV);
  set(p->lse_stride, s_q * H, H, 1);
  if (p->block_table)
    p->kv_stride[0] = int64_t(kPageSize) * kDimQK;
  else
    p->kv_stride[0] = int64_t(p->S_max) * kDimQK;
  p->kv_stride[1] = kDimQK;
}

size_t mla_fwd_params_bytes(void) { return sizeof(mla_fwd_params); }

const char* mla_status_string(mla_status s) {
  switch (s) {
    case MLA_OK: return "ok";
    case MLA_ERR_INVALID: return "invalid parameters";
    case MLA_ERR_UNSUPPORTED: return "not supported by this backend";
    case MLA_ERR_WORKSPACE: return "workspace missing or too small";
    case MLA_ERR_CUDA: return "CUDA error";
  }
  return "unknown status";
}

const char* mla_last_error(void) { return g_last_error.c_str(); }

}  // extern "C"
