// kda/kda_api.cc: the backend-independent part of the C API: defaults, validation, errors.
#include "kda/kda_api.h"

#include <cstdio>

namespace longhaul::kda {
namespace {
thread_local std::string g_last_error;

bool ValidDtype(kda_dtype d) { return d == KDA_DTYPE_F32 || d == KDA_DTYPE_BF16; }
}  // namespace

kda_status SetError(kda_status s, const std::string& detail) {
  g_last_error = detail;
  return s;
}
void ClearError() { g_last_error.clear(); }

std::string CheckParams(const kda_fwd_params& p, const int64_t* host_cu) {
  if (p.B < 1 || p.T < 0 || p.H < 1 || p.K < 1 || p.V < 1)
    return "shape must have B, H, K, V >= 1 and T >= 0";
  if (!p.q || !p.k || !p.v || !p.g || !p.beta || !p.o) return "q, k, v, g, beta and o are required";
  if (!ValidDtype(p.in_dtype) || !ValidDtype(p.g_dtype) || !ValidDtype(p.beta_dtype) ||
      !ValidDtype(p.out_dtype))
    return "unknown dtype";
  const int64_t* strides[] = {p.q_stride, p.k_stride, p.v_stride, p.g_stride, p.beta_stride, p.o_stride};
  for (const int64_t* s : strides)
    for (int i = 0; i < 3; ++i)
      if (s[i] < 0) return "strides must be >= 0";
  if (p.num_seqs < 0) return "num_seqs must be >= 0";
  if (p.num_seqs > 0) {
    if (p.B != 1) return "varlen (num_seqs > 0) needs B == 1";
    if (!p.cu_seqlens) return "varlen needs cu_seqlens";
    if (host_cu) {
      if (host_cu[0] != 0) return "cu_seqlens[0] must be 0";
      if (host_cu[p.num_seqs] != p.T) return "cu_seqlens[num_seqs] must equal T";
      for (int i = 1; i <= p.num_seqs; ++i)
        if (host_cu[i] < host_cu[i - 1]) return "cu_seqlens must be non-decreasing";
    }
  }
  switch (p.gate) {
    case KDA_GATE_LOG_DECAY:
      if (p.A_log || p.dt_bias) return "A_log and dt_bias apply only to in-kernel gates";
      break;
    case KDA_GATE_LOWER_BOUND_SIGMOID:
      if (!(p.lower_bound < 0)) return "lower_bound must be < 0";
      break;
    case KDA_GATE_SOFTPLUS:
      break;
    default:
      return "unknown gate mode";
  }
  const uint32_t known = KDA_FLAG_L2NORM_QK | KDA_FLAG_BETA_SIGMOID | KDA_FLAG_ALLOW_NEG_EIGVAL |
                         KDA_FLAG_STATE_V_FIRST;
  if (p.flags & ~known) return "unknown flag bits";
  if ((p.flags & KDA_FLAG_ALLOW_NEG_EIGVAL) && !(p.flags & KDA_FLAG_BETA_SIGMOID))
    return "KDA_FLAG_ALLOW_NEG_EIGVAL needs KDA_FLAG_BETA_SIGMOID";
  if (p.chunk_size < 0) return "chunk_size must be >= 0";
  return "";
}

}  // namespace longhaul::kda

using namespace longhaul::kda;

extern "C" {

void kda_fwd_params_init(kda_fwd_params* p) {
  std::memset(p, 0, sizeof(*p));
  p->in_dtype = KDA_DTYPE_BF16;
  p->g_dtype = KDA_DTYPE_F32;
  p->beta_dtype = KDA_DTYPE_F32;
  p->out_dtype = KDA_DTYPE_BF16;
  p->lower_bound = -5.0f;
  p->gate = KDA_GATE_LOG_DECAY;
}

void kda_fwd_params_set_contiguous(kda_fwd_params* p) {
  const int64_t T = p->T, H = p->H, K = p->K, V = p->V;
  auto set = [](int64_t* s, int64_t b, int64_t t, int64_t h) { s[0] = b, s[1] = t, s[2] = h; };
  set(p->q_stride, T * H * K, H * K, K);
  set(p->k_stride, T * H * K, H * K, K);
  set(p->g_stride, T * H * K, H * K, K);
  set(p->v_stride, T * H * V, H * V, V);
  set(p->o_stride, T * H * V, H * V, V);
  set(p->beta_stride, T * H, H, 1);
}

size_t kda_fwd_params_bytes(void) { return sizeof(kda_fwd_params); }

const char* kda_status_string(kda_status s) {
  switch (s) {
    case KDA_OK: return "ok";
    case KDA_ERR_INVALID: return "invalid parameters";
    case KDA_ERR_UNSUPPORTED: return "not supported by this backend";
    case KDA_ERR_WORKSPACE: return "workspace missing or too small";
    case KDA_ERR_CUDA: return "CUDA error";
  }
  return "unknown status";
}

const char* kda_last_error(void) { return g_last_error.c_str(); }

}  // extern "C"
