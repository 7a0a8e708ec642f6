// kda/kda_cpu.cc: kda_fwd_cpu, the C API (kda.h) on the CPU: gathers the strided bf16/fp32 inputs
// into contiguous floats, runs the chunked float64 reference (chunked_reference.h), and writes o and
// the final state back in the caller's dtype, strides and state layout.
//
// Uses: the reference backend of the future Python module; tests of the C API's contract.
#include <cmath>
#include <stdexcept>
#include <vector>

#include "kda/chunked_reference.h"
#include "kda/kda.h"
#include "kda/kda_api.h"

namespace longhaul::kda {
namespace {

float LoadElem(const void* base, kda_dtype dt, int64_t i) {
  if (dt == KDA_DTYPE_BF16) return Bf16ToFloat(static_cast<const uint16_t*>(base)[i]);
  return static_cast<const float*>(base)[i];
}

// Gathers [B,T,H,D] (strides {b,t,h}, D contiguous) into a contiguous float vector.
std::vector<float> Gather(const void* base, kda_dtype dt, const int64_t* st, int B, int T, int H, int D) {
  std::vector<float> out(size_t(B) * T * H * D);
  size_t x = 0;
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < H; ++h) {
        const int64_t off = b * st[0] + t * st[1] + h * st[2];
        for (int d = 0; d < D; ++d) out[x++] = LoadElem(base, dt, off + d);
      }
  return out;
}

// [.., K, V] <-> [.., V, K] for N*H square-ish blocks.
template <typename Src, typename Dst>
void Transpose(const Src* in, Dst* out, int NH, int R, int C) {
  for (int m = 0; m < NH; ++m)
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c)
        out[(size_t(m) * C + c) * R + r] = Dst(in[(size_t(m) * R + r) * C + c]);
}

kda_status Run(const kda_fwd_params& p) {
  if (std::string err = CheckParams(p, p.cu_seqlens); !err.empty())
    return SetError(KDA_ERR_INVALID, err);
  const int C = p.chunk_size ? p.chunk_size : 64;
  if (C > 16 && C % 16 != 0)
    return SetError(KDA_ERR_UNSUPPORTED, "the CPU backend takes chunk_size 1..16 or a multiple of 16");
  const int B = p.B, T = p.T, H = p.H, K = p.K, V = p.V;
  const bool v_first = p.flags & KDA_FLAG_STATE_V_FIRST;

  const std::vector<float> q = Gather(p.q, p.in_dtype, p.q_stride, B, T, H, K);
  const std::vector<float> k = Gather(p.k, p.in_dtype, p.k_stride, B, T, H, K);
  const std::vector<float> v = Gather(p.v, p.in_dtype, p.v_stride, B, T, H, V);
  const std::vector<float> g = Gather(p.g, p.g_dtype, p.g_stride, B, T, H, K);
  std::vector<float> beta(size_t(B) * T * H);
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < H; ++h)
        beta[(size_t(b) * T + t) * H + h] =
            LoadElem(p.beta, p.beta_dtype, b * p.beta_stride[0] + t * p.beta_stride[1] + h * p.beta_stride[2]);

  Problem pr;
  pr.B = B, pr.T = T, pr.H = H, pr.K = K, pr.V = V;
  if (p.num_seqs > 0) pr.cu_seqlens.assign(p.cu_seqlens, p.cu_seqlens + p.num_seqs + 1);
  const int N = pr.num_seqs();
  std::vector<float> h0;
  if (p.initial_state) {
    h0.resize(size_t(N) * H * K * V);
    if (v_first)
      Transpose(p.initial_state, h0.data(), N * H, V, K);
    else
      std::copy(p.initial_state, p.initial_state + h0.size(), h0.begin());
  }
  pr.q = q.data(), pr.k = k.data(), pr.v = v.data(), pr.g = g.data(), pr.beta = beta.data();
  pr.A_log = p.A_log, pr.dt_bias = p.dt_bias;
  pr.initial_state = p.initial_state ? h0.data() : nullptr;
  pr.scale = p.scale;
  pr.gate = p.gate == KDA_GATE_LOG_DECAY             ? Gate::kLogDecay
            : p.gate == KDA_GATE_LOWER_BOUND_SIGMOID ? Gate::kLowerBoundSigmoid
                                                     : Gate::kSoftplus;
  pr.lower_bound = p.lower_bound;
  pr.l2norm_qk = p.flags & KDA_FLAG_L2NORM_QK;
  pr.beta_sigmoid = p.flags & KDA_FLAG_BETA_SIGMOID;
  pr.allow_neg_eigval = p.flags & KDA_FLAG_ALLOW_NEG_EIGVAL;

  ChunkedOptions opt;
  opt.chunk_size = C;
  opt.sub_chunk = C < 16 ? C : 16;
  Result r;
  try {
    r = ChunkedForward(pr, opt);
  } catch (const std::exception& e) {
    return SetError(KDA_ERR_INVALID, e.what());
  }

  // o: float64 -> fp32 (what a kernel's accumulator holds) -> out_dtype, in the caller's strides.
  for (int b = 0; b < B; ++b)
    for (int t = 0; t < T; ++t)
      for (int h = 0; h < H; ++h) {
        const double* src = r.o.data() + ((size_t(b) * T + t) * H + h) * V;
        const int64_t off = b * p.o_stride[0] + t * p.o_stride[1] + h * p.o_stride[2];
        for (int e = 0; e < V; ++e) {
          const float f = float(src[e]);
          if (p.out_dtype == KDA_DTYPE_BF16)
            static_cast<uint16_t*>(p.o)[off + e] = FloatToBf16(f);
          else
            static_cast<float*>(p.o)[off + e] = f;
        }
      }
  if (p.final_state) {
    if (v_first)
      Transpose(r.final_state.data(), p.final_state, N * H, K, V);
    else
      for (size_t i = 0; i < r.final_state.size(); ++i) p.final_state[i] = float(r.final_state[i]);
  }
  ClearError();
  return KDA_OK;
}

}  // namespace
}  // namespace longhaul::kda

extern "C" kda_status kda_fwd_cpu(const kda_fwd_params* p, void* /*stream*/) {
  if (!p) return longhaul::kda::SetError(KDA_ERR_INVALID, "params is NULL");
  return longhaul::kda::Run(*p);
}
