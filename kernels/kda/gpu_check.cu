// kda/gpu_check.cu: the GPU correctness check of kda_fwd (a program, not a CI test: it needs a GPU).
// For each case: fresh random inputs (seed from argv[1], else the clock), rounded to the dtypes the
// kernel reads; the float64 CPU backend (kda_fwd_cpu, the chunked reference) on those very values;
// the GPU's o and final state poisoned with NaN before the launch; FLA's metric
// RMS(out - ref) / RMS(ref) <= 5e-3 for the output and the final state. One line per case; exit 1 on
// any failure. Each case runs every variant (kda.h's Variant): the fused kernel with one and with
// two CTAs a head, and prep + scan with one and with two CTAs a head.
//
// Usage: gpu_check [seed] [case index]
#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "common/cuda_host.cuh"
#include "kda/kda.h"
#include "kda/kda_api.h"
#include "kda/kda_gpu.cuh"

using namespace longhaul::kda;
using longhaul::kernels::ToDevice;


struct Case {
  const char* name;
  int B, T, H;
  std::vector<int64_t> cu;  // varlen offsets (B = 1) or empty
  kda_gate_mode gate;
  bool l2norm, beta_sigmoid, h0, hT, v_first, A_log, dt_bias, g_bf16, beta_bf16;
  double A_log_mean = 0;  // A_log ~ A_log_mean + 0.5 randn: a steep softplus gate reaches the exact path
  bool o_f32 = false;     // o written as fp32 (out_dtype), not bf16
};

static double Sig(double x) { return 1.0 / (1.0 + std::exp(-x)); }


static double RelRms(const std::vector<double>& ref, const std::vector<double>& x) {
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = ref[i] - x[i];
    num += d * d, den += ref[i] * ref[i];
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

static bool RunCase(const Case& c, uint64_t seed) {
  constexpr int K = 128, V = 128;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd;
  const size_t BT = size_t(c.B) * c.T, NK = BT * c.H * K, NV = BT * c.H * V;
  const int N = c.cu.empty() ? c.B : int(c.cu.size()) - 1;
  auto bf = [](double x) { return FloatToBf16(float(x)); };
  auto rows = [&](size_t n, bool unit) {  // bf16 rows of K, unit-normalised if asked
    std::vector<uint16_t> out(n);
    std::vector<double> r(K);
    for (size_t i = 0; i < n; i += K) {
      double ss = 0;
      for (int d = 0; d < K; ++d) r[d] = nd(rng), ss += r[d] * r[d];
      for (int d = 0; d < K; ++d) out[i + d] = bf(unit ? r[d] / std::sqrt(ss) : r[d]);
    }
    return out;
  };
  std::vector<uint16_t> q = rows(NK, !c.l2norm), k = rows(NK, !c.l2norm), v = rows(NV, false);
  // g: log decay = logsigmoid(randn) clamped to [-5, 0]; or the raw projection ~ randn.
  std::vector<float> gf(NK);
  for (auto& e : gf) {
    const double x = nd(rng);
    e = c.gate == KDA_GATE_LOG_DECAY ? float(std::max(-5.0, std::log(Sig(x)))) : float(x);
  }
  std::vector<uint16_t> gb;
  if (c.g_bf16) {
    gb.resize(NK);
    for (size_t i = 0; i < NK; ++i) gb[i] = FloatToBf16(gf[i]), gf[i] = Bf16ToFloat(gb[i]);
  }
  std::vector<float> betaf(BT * c.H);
  for (auto& e : betaf) e = c.beta_sigmoid ? float(nd(rng)) : float(Sig(nd(rng)));
  std::vector<uint16_t> betab;
  if (c.beta_bf16) {
    betab.resize(betaf.size());
    for (size_t i = 0; i < betaf.size(); ++i) betab[i] = FloatToBf16(betaf[i]), betaf[i] = Bf16ToFloat(betab[i]);
  }
  std::vector<float> A_log, dt_bias, h0;
  if (c.gate != KDA_GATE_LOG_DECAY && c.A_log)
    for (int i = 0; i < c.H; ++i) A_log.push_back(float(c.A_log_mean + 0.5 * nd(rng)));
  if (c.gate != KDA_GATE_LOG_DECAY && c.dt_bias)
    for (int i = 0; i < c.H * K; ++i) dt_bias.push_back(float(nd(rng)));
  const size_t NS = size_t(N) * c.H * K * V;
  // Share of the 16-token blocks (of every sequence, head and chunk) whose decay spans more than 110
  // (log2) in some channel: their chunks take the fused kernel's exact path (fused.cu, kExactSpan).
  int blocks = 0, steep = 0;
  for (int n = 0; n < N; ++n) {
    const int64_t bos = c.cu.empty() ? 0 : c.cu[n], len = c.cu.empty() ? c.T : c.cu[n + 1] - c.cu[n];
    const size_t row0 = c.cu.empty() ? size_t(n) * c.T : 0;
    for (int h = 0; h < c.H; ++h)
      for (int64_t a = 0; a < len; a += 16, ++blocks) {
        bool over = false;
        for (int d = 0; d < K && !over; ++d) {
          double span = 0;
          for (int64_t i = a + 1; i < std::min<int64_t>(a + 16, len); ++i) {
            const double x = gf[((row0 + bos + i) * c.H + h) * K + d];
            const double al = A_log.empty() ? 1.0 : std::exp(A_log[h]), dt = dt_bias.empty() ? 0.0 : dt_bias[h * K + d];
            const double inc = c.gate == KDA_GATE_LOG_DECAY ? x
                               : c.gate == KDA_GATE_SOFTPLUS ? -al * std::log1p(std::exp(x + dt))
                                                              : -5.0 * Sig(al * (x + dt));
            span -= inc / std::log(2.0);
          }
          over = span > 110;
        }
        steep += over;
      }
  }
  if (steep) std::printf("%-34s %d of %d blocks span more than 110 (exact chunks)\n", c.name, steep, blocks);
  if (c.h0)
    for (size_t i = 0; i < NS; ++i) h0.push_back(float(nd(rng)));

  kda_fwd_params p;
  kda_fwd_params_init(&p);
  p.B = c.B, p.T = c.T, p.H = c.H, p.K = K, p.V = V;
  kda_fwd_params_set_contiguous(&p);
  p.num_seqs = c.cu.empty() ? 0 : N;
  p.g_dtype = c.g_bf16 ? KDA_DTYPE_BF16 : KDA_DTYPE_F32;
  p.beta_dtype = c.beta_bf16 ? KDA_DTYPE_BF16 : KDA_DTYPE_F32;
  p.gate = c.gate;
  p.lower_bound = -5.0f;
  p.out_dtype = c.o_f32 ? KDA_DTYPE_F32 : KDA_DTYPE_BF16;
  p.flags = (c.l2norm ? KDA_FLAG_L2NORM_QK : 0) | (c.beta_sigmoid ? KDA_FLAG_BETA_SIGMOID : 0) |
            (c.v_first ? KDA_FLAG_STATE_V_FIRST : 0);

  // ---- the float64 reference on the CPU (o as fp32) -------------------------------------------
  kda_fwd_params pc = p;
  std::vector<float> o_ref(NV), s_ref(c.hT ? NS : 0);
  for (auto* x : {&q, &k, &v, &gb, &betab}) x->reserve(1);  // (T = 0: the API wants the pointers all the same)
  for (auto* x : {&gf, &betaf, &o_ref}) x->reserve(1);
  pc.q = q.data(), pc.k = k.data(), pc.v = v.data(), pc.o = o_ref.data();
  pc.g = c.g_bf16 ? static_cast<const void*>(gb.data()) : gf.data();
  pc.beta = c.beta_bf16 ? static_cast<const void*>(betab.data()) : betaf.data();
  pc.A_log = A_log.empty() ? nullptr : A_log.data();
  pc.dt_bias = dt_bias.empty() ? nullptr : dt_bias.data();
  pc.initial_state = c.h0 ? h0.data() : nullptr;
  pc.final_state = c.hT ? s_ref.data() : nullptr;
  pc.cu_seqlens = c.cu.empty() ? nullptr : c.cu.data();
  pc.out_dtype = KDA_DTYPE_F32;
  if (kda_status st = kda_fwd_cpu(&pc, nullptr); st != KDA_OK) {
    std::printf("%-34s CPU reference failed: %s\n", c.name, kda_last_error());
    return false;
  }

  // ---- the GPU -----------------------------------------------------------------------------------
  uint16_t *dq = ToDevice(q), *dk = ToDevice(k), *dv = ToDevice(v);
  void* dg = c.g_bf16 ? static_cast<void*>(ToDevice(gb)) : static_cast<void*>(ToDevice(gf));
  void* dbeta = c.beta_bf16 ? static_cast<void*>(ToDevice(betab)) : static_cast<void*>(ToDevice(betaf));
  float* dA = A_log.empty() ? nullptr : ToDevice(A_log);
  float* ddt = dt_bias.empty() ? nullptr : ToDevice(dt_bias);
  float* dh0 = c.h0 ? ToDevice(h0) : nullptr;
  int64_t* dcu = c.cu.empty() ? nullptr : ToDevice(c.cu);
  const size_t o_bytes = NV * (c.o_f32 ? 4 : 2);
  void* dout = nullptr;
  float* dhT = nullptr;
  CK(cudaMalloc(&dout, std::max<size_t>(o_bytes, 1)));
  if (c.hT) CK(cudaMalloc(&dhT, NS * 4));
  kda_fwd_params pg = p;
  pg.q = dq, pg.k = dk, pg.v = dv, pg.g = dg, pg.beta = dbeta, pg.o = dout;
  pg.A_log = dA, pg.dt_bias = ddt, pg.initial_state = dh0, pg.final_state = dhT;
  pg.cu_seqlens = dcu, pg.cu_seqlens_host = c.cu.empty() ? nullptr : c.cu.data();
  size_t ws_bytes = 0;
  if (kda_fwd_workspace_size(&pg, &ws_bytes) != KDA_OK) {
    std::printf("%-34s workspace size failed: %s\n", c.name, kda_last_error());
    return false;
  }
  void* ws = nullptr;
  CK(cudaMalloc(&ws, std::max<size_t>(ws_bytes, 256)));
  pg.workspace = ws, pg.workspace_bytes = ws_bytes;
  // (varlen: prep + scan once more without the host copy of cu_seqlens, where the preparation's
  // item count is a bound and the pairs past the last sequence must come to nothing)
  const struct {
    const char* name;
    longhaul::kda::Variant variant;
    bool host_cu;
  } variants[] = {{"fused x1", longhaul::kda::Variant::kFused1, true},
                  {"fused x2", longhaul::kda::Variant::kFused2, true},
                  {"prep+scan x1", longhaul::kda::Variant::kPrepScan1, true},
                  {"prep+scan x2", longhaul::kda::Variant::kPrepScan2, true},
                  {"prep+scan x1, no host cu", longhaul::kda::Variant::kPrepScan1, false}};
  bool ok = true;
  for (const auto& [vname, variant, host_cu] : variants) {
    if (!host_cu && c.cu.empty()) continue;
    pg.cu_seqlens_host = host_cu && !c.cu.empty() ? c.cu.data() : nullptr;
    CK(cudaMemset(dout, 0xff, o_bytes));  // NaN in bf16 and in fp32
    if (dhT) CK(cudaMemset(dhT, 0xff, NS * 4));  // NaN in fp32
    CK(cudaMemset(ws, 0xff, ws_bytes));  // the workspace starts as NaN too: every read must be written
    if (kda_status st = longhaul::kda::FwdVariant(&pg, nullptr, variant); st != KDA_OK) {
      std::printf("%-34s %-9s kda_fwd failed: %s: %s\n", c.name, vname, kda_status_string(st), kda_last_error());
      ok = false;
      continue;
    }
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<uint16_t> o_gpu(c.o_f32 ? 0 : NV);
    std::vector<float> o_gpu_f32(c.o_f32 ? NV : 0);
    std::vector<float> s_gpu(c.hT ? NS : 0);
    CK(cudaMemcpy(c.o_f32 ? static_cast<void*>(o_gpu_f32.data()) : o_gpu.data(), dout, o_bytes, cudaMemcpyDeviceToHost));
    if (c.hT) CK(cudaMemcpy(s_gpu.data(), dhT, NS * 4, cudaMemcpyDeviceToHost));

    std::vector<double> a(o_ref.begin(), o_ref.end()), b(NV);
    for (size_t i = 0; i < NV; ++i) b[i] = c.o_f32 ? o_gpu_f32[i] : Bf16ToFloat(o_gpu[i]);
    const double ro = RelRms(a, b);
    double rs = 0;
    if (c.hT) rs = RelRms(std::vector<double>(s_ref.begin(), s_ref.end()),
                          std::vector<double>(s_gpu.begin(), s_gpu.end()));
    const bool pass = ro <= 5e-3 && (!c.hT || rs <= 5e-3);  // NaN fails both comparisons
    ok = ok && pass;
    char sbuf[32];
    if (c.hT) std::snprintf(sbuf, sizeof sbuf, "%.3e", rs); else std::snprintf(sbuf, sizeof sbuf, "-");
    std::printf("%-34s %-12s out %.3e  state %-9s  %s\n", c.name, vname, ro, sbuf, pass ? "PASS" : "FAIL");
    std::fflush(stdout);
  }
  for (void* ptr : {(void*)dq, (void*)dk, (void*)dv, dg, dbeta, (void*)dA, (void*)ddt, (void*)dh0,
                    (void*)dcu, dout, (void*)dhT, ws})
    if (ptr) CK(cudaFree(ptr));
  return ok;
}

int main(int argc, char** argv) {
  longhaul::kernels::RequireHopper("gpu_check");
  const uint64_t seed = argc > 1 ? std::strtoull(argv[1], nullptr, 10)
                                 : uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  std::printf("gpu_check seed %llu, threshold RMS(out-ref)/RMS(ref) <= 5e-3, K = V = 128\n",
              (unsigned long long)seed);
  const auto LD = KDA_GATE_LOG_DECAY, LB = KDA_GATE_LOWER_BOUND_SIGMOID, SP = KDA_GATE_SOFTPLUS;
  // name, B, T, H, cu, gate, l2norm, beta_sigmoid, h0, hT, v_first, A_log, dt_bias, g_bf16, beta_bf16
  const std::vector<Case> cases = {
      {"logdecay B2 T1000 H2 h0 hT", 2, 1000, 2, {}, LD, false, false, true, true, false, false, false, false, false},
      {"lowerbound B1 T2048 H4 l2 sig h0 hT", 1, 2048, 4, {}, LB, true, true, true, true, false, true, true, true, true},
      {"lowerbound noAlog B1 T777 H2", 1, 777, 2, {}, LB, true, true, false, true, false, false, true, false, false},
      {"softplus B1 T700 H2 l2 sig hT", 1, 700, 2, {}, SP, true, true, false, true, false, true, true, false, false},
      {"softplus B2 T300 H1 h0 v_first", 2, 300, 1, {}, SP, false, false, true, true, true, true, false, false, false},
      {"softplus steep B1 T600 H4 l2 h0 hT", 1, 600, 4, {}, SP, true, true, true, true, false, true, true, false, false, 1.5},
      {"varlen 9 seqs (0,1,15,63,64,65..) H3", 1, 1200, 3, {0, 1, 16, 16, 79, 143, 208, 400, 1000, 1200},
       LB, true, true, true, true, false, true, true, true, true},
      {"varlen [0,15,100,300,1200,2000] H2", 1, 2000, 2, {0, 15, 100, 300, 1200, 2000},
       LD, false, false, true, true, false, false, false, false, false},
      {"no states B3 T130 H2", 3, 130, 2, {}, LD, false, false, false, false, false, false, false, false, false},
      {"h0 only B1 T64 H2", 1, 64, 2, {}, LB, true, true, true, false, false, true, true, false, false},
      {"short T5 B2 H2 h0 hT v_first", 2, 5, 2, {}, LB, true, true, true, true, true, true, true, true, true},
      // no tokens at all: hT = h0, and prep + scan has no chunk to prepare
      {"empty T0 B2 H2 h0 hT", 2, 0, 2, {}, LB, true, true, true, true, false, true, true, false, false},
      {"varlen all empty [0,0,0] H2 h0 hT", 1, 0, 2, {0, 0, 0}, LD, false, false, true, true, false, false, false, false, false},
      // o as fp32: the kernels' other store path (tails and every sequence boundary included)
      {"fp32 o B2 T333 H3 l2 sig h0 hT", 2, 333, 3, {}, LB, true, true, true, true, false, true, true, true, true, 0, true},
      {"fp32 o varlen [0,7,64,200,521] H2", 1, 521, 2, {0, 7, 64, 200, 521}, SP, true, true, false, true, false, true, true, false, false, 0, true},
  };
  int fails = 0;
  const int only = argc > 2 ? std::atoi(argv[2]) : -1;
  for (size_t i = 0; i < cases.size(); ++i)
    if (only < 0 || size_t(only) == i) fails += !RunCase(cases[i], seed * 1000003ull + i);
  std::printf("gpu_check: %d of %zu cases failed\n", fails, cases.size());
  return fails ? 1 : 0;
}
