// kda/kda_cuda.cu: the C API (kda.h) on the GPU: kda_fwd_workspace_size and kda_fwd. Validates the
// parameters (kda_api.h's CheckParams plus this backend's limits) and launches, on the caller's
// stream, the variant that measured fastest for the shape and the GPU (AutoVariant): fused.cu's
// one-kernel forward, or its preparation on every SM followed by its scan over chunk images in the
// workspace.
//
// This backend: K = V = 128, chunk_size 0 or 64, bf16 q/k/v, bf16 or fp32 g/beta/o, rows of q, k,
// v, g and a bf16 o 16-byte aligned (strides multiples of 8 bf16 or 4 fp32 elements), no GVA.
#include <cuda_runtime.h>

#include <algorithm>
#include <string>

#include "kda/kda.h"
#include "kda/kda_api.h"
#include "kda/kda_gpu.cuh"

namespace longhaul::kda {
namespace {

int64_t MaxChunks(const kda_fwd_params& p) {
  const int64_t per = (int64_t(p.T) + gpu::kC - 1) / gpu::kC;
  return p.num_seqs > 0 ? per + p.num_seqs : per * p.B;
}

// The chunks of all sequences: exact, or MaxChunks in varlen without a host copy of cu_seqlens.
int64_t ExactChunks(const kda_fwd_params& p) {
  if (p.num_seqs == 0 || !p.cu_seqlens_host) return MaxChunks(p);
  int64_t n = 0;
  for (int i = 0; i < p.num_seqs; ++i) n += (p.cu_seqlens_host[i + 1] - p.cu_seqlens_host[i] + gpu::kC - 1) / gpu::kC;
  return n;
}

std::string CheckGpu(const kda_fwd_params& p) {
  if (p.K != gpu::kK || p.V != gpu::kV) return "the GPU backend supports K = V = 128 only";
  if (p.chunk_size != 0 && p.chunk_size != gpu::kC) return "the GPU backend supports chunk_size 64 only";
  auto aligned = [](const void* ptr, const int64_t* st, kda_dtype dt) {
    const int64_t m = dt == KDA_DTYPE_BF16 ? 8 : 4;
    return reinterpret_cast<uintptr_t>(ptr) % 16 == 0 && st[0] % m == 0 && st[1] % m == 0 && st[2] % m == 0;
  };
  if (!aligned(p.q, p.q_stride, p.in_dtype) || !aligned(p.k, p.k_stride, p.in_dtype) ||
      !aligned(p.v, p.v_stride, p.in_dtype) || !aligned(p.g, p.g_stride, p.g_dtype))
    return "q, k, v and g rows must be 16-byte aligned";
  if (p.in_dtype != KDA_DTYPE_BF16) return "the GPU backend takes bf16 q, k and v";
  if (!aligned(p.o, p.o_stride, p.out_dtype)) return "o rows must be 16-byte aligned";
  return "";
}

}  // namespace
}  // namespace longhaul::kda

using namespace longhaul::kda;

extern "C" kda_status kda_fwd_workspace_size(const kda_fwd_params* p, size_t* bytes) {
  if (!p || !bytes) return SetError(KDA_ERR_INVALID, "params or bytes is NULL");
  if (p->K != gpu::kK || p->V != gpu::kV) return SetError(KDA_ERR_UNSUPPORTED, "K = V = 128 only");
  *bytes = gpu::WorkspaceBytes(size_t(MaxChunks(*p)) * p->H);
  ClearError();
  return KDA_OK;
}

namespace longhaul::kda {
namespace {
unsigned long long* g_profile = nullptr;
}  // namespace
void SetProfileBuffer(unsigned long long* buf) { g_profile = buf; }

DeviceInfo CurrentDevice() {
  int dev = 0, sms = 0, clock_khz = 0, bus_bits = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess || sms <= 0)
    sms = 132;
  if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrMemoryClockRate, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, dev) != cudaSuccess)
    clock_khz = bus_bits = 0;  // unknown: counted as slow DRAM
  return {sms, 2.0 * clock_khz * 1e3 * bus_bits / 8};
}

gpu::Params gpu::ParamsOf(const kda_fwd_params& p) {
  Params g{};
  g.B = p.B, g.T = p.T, g.H = p.H;
  g.N = p.num_seqs > 0 ? p.num_seqs : p.B;
  g.cu = p.num_seqs > 0 ? p.cu_seqlens : nullptr;
  g.q = p.q, g.k = p.k, g.v = p.v, g.g = p.g, g.beta = p.beta, g.o = p.o;
  for (int i = 0; i < 3; ++i) {
    g.q_st[i] = p.q_stride[i], g.k_st[i] = p.k_stride[i], g.v_st[i] = p.v_stride[i];
    g.g_st[i] = p.g_stride[i], g.beta_st[i] = p.beta_stride[i], g.o_st[i] = p.o_stride[i];
  }
  g.in_bf16 = p.in_dtype == KDA_DTYPE_BF16;
  g.g_bf16 = p.g_dtype == KDA_DTYPE_BF16;
  g.beta_bf16 = p.beta_dtype == KDA_DTYPE_BF16;
  g.out_bf16 = p.out_dtype == KDA_DTYPE_BF16;
  g.A_log = p.A_log, g.dt_bias = p.dt_bias;
  g.h0 = p.initial_state, g.hT = p.final_state;
  g.v_first = p.flags & KDA_FLAG_STATE_V_FIRST;
  g.scale = p.scale > 0 ? p.scale : 1.0f / sqrtf(float(p.K));
  g.lower_bound = p.lower_bound;
  g.gate = p.gate;
  g.l2norm = p.flags & KDA_FLAG_L2NORM_QK;
  g.beta_sigmoid = p.flags & KDA_FLAG_BETA_SIGMOID;
  g.neg_eigval = p.flags & KDA_FLAG_ALLOW_NEG_EIGVAL;
  g.img = static_cast<unsigned char*>(p.workspace);
  g.prof = g_profile;
  return g;
}

kda_status FwdVariant(const kda_fwd_params* pp, void* stream, Variant variant) {
  if (!pp) return SetError(KDA_ERR_INVALID, "params is NULL");
  const kda_fwd_params& p = *pp;
  if (std::string e = CheckParams(p, p.num_seqs > 0 ? p.cu_seqlens_host : nullptr); !e.empty())
    return SetError(KDA_ERR_INVALID, e);
  if (std::string e = CheckGpu(p); !e.empty()) return SetError(KDA_ERR_UNSUPPORTED, e);
  const size_t n_ch = size_t(MaxChunks(p)) * p.H;
  const size_t need = gpu::WorkspaceBytes(n_ch);
  if (!p.workspace || p.workspace_bytes < need || reinterpret_cast<uintptr_t>(p.workspace) % 256)
    return SetError(KDA_ERR_WORKSPACE, "workspace needs " + std::to_string(need) +
                                           " bytes, 256-byte aligned");

  gpu::Params g = gpu::ParamsOf(p);
  cudaStream_t s = static_cast<cudaStream_t>(stream);
  if (g.N == 0) {
    ClearError();
    return KDA_OK;
  }
  static const DeviceInfo device = CurrentDevice();
  const int sms = device.sms;
  if (variant == Variant::kAuto) variant = AutoVariant(g.N, g.H, device);
  if (variant == Variant::kPrepScan1 || variant == Variant::kPrepScan2) {
    g.prep_chunks = ExactChunks(p);
    g.prep_ctas = int(std::min<int64_t>(g.prep_chunks * g.H, int64_t(gpu::kPrepCtasPerSm) * sms));
    if (cudaError_t e = gpu::LaunchPrepScan(g, variant == Variant::kPrepScan2 ? 2 : 1, s); e != cudaSuccess)
      return SetError(KDA_ERR_CUDA, std::string("prep + scan: ") + cudaGetErrorString(e));
    ClearError();
    return KDA_OK;
  }
  const int slices = variant == Variant::kFused2 ? 2 : 1;
  if (cudaError_t e = gpu::LaunchFused(g, slices, s); e != cudaSuccess)
    return SetError(KDA_ERR_CUDA, std::string("fused: ") + cudaGetErrorString(e));
  ClearError();
  return KDA_OK;
}
}  // namespace longhaul::kda

extern "C" kda_status kda_fwd(const kda_fwd_params* p, void* stream) {
  return longhaul::kda::FwdVariant(p, stream, longhaul::kda::Variant::kAuto);
}
