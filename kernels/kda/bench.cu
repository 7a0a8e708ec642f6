// kda/bench.cu: the speed bench of kda_fwd (a program). FLA's in-kernel configuration: raw gate
// activated in the kernel (lower_bound -5 sigmoid with A_log and dt_bias), L2 norm of q and k and
// sigmoid of beta in the kernel, fp32 initial and final state, bf16 q/k/v/g/beta/o, K = V = 128.
// Random inputs (never zeros), warm-up, then the median of --iters CUDA-event timings of one kda_fwd
// each (eager launches, or BENCH_GRAPH=1: each call one launch of a CUDA graph that holds it), L2
// flushed before every timed call by writing a 256 MB buffer, no host sync inside the loop.
// Times every variant (the fused kernel with one and with two CTAs a head, prep + scan with one and
// two CTAs a head in the scan), each in the same run on the same inputs;
// kda_fwd's pick (AutoVariant) is marked *.
// Bytes: compulsory traffic = q, k, v, g, beta read + o written (bf16) + h0 read + hT written (fp32);
// floor = bytes / 4.3 TB/s (the device-to-device copy ceiling measured on this H200, anchors.md).
//
// Usage: bench [iters=30]
// Environment: BENCH_SHAPES=013 runs only those shapes (indices into the list in main);
// BENCH_JSON=1 times kda_fwd alone (its pick of variant) and prints the metrics protocol's lines
// (docs/metrics-protocol.md): time_ms for the first shape run, time_ms_<index> for each.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/bench.cuh"
#include "kda/kda.h"
#include "kda/kda_gpu.cuh"

using namespace longhaul::kernels;

struct Shape {
  std::string name;
  int B, T, H;
  std::vector<int64_t> seqlens;  // varlen lengths (B = 1) or empty
};

struct Row {
  std::string name;
  double ms1, ms2, ms_ps1, ms_ps2, bytes;
  longhaul::kda::Variant chosen;  // what kda_fwd picks (AutoVariant)
  double Chosen() const {
    using longhaul::kda::Variant;
    switch (chosen) {
      case Variant::kFused2: return ms2;
      case Variant::kPrepScan1: return ms_ps1;
      case Variant::kPrepScan2: return ms_ps2;
      default: return ms1;
    }
  }
};

int main(int argc, char** argv) {
  longhaul::kernels::RequireHopper("bench");
  const int iters = argc > 1 ? std::max(20, std::atoi(argv[1])) : 30;
  constexpr int K = 128, V = 128;
  constexpr double kCeilingTBs = 4.3;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const longhaul::kda::DeviceInfo device = longhaul::kda::CurrentDevice();
  std::printf("bench: %s, %d SMs, L2 %d MB, DRAM peak %.2f TB/s; median of %d, L2 flushed (256 MB write) before each call\n",
              prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20, device.dram_bytes_per_s / 1e12, iters);
  const std::vector<Shape> shapes = {
      {"B1 T8192 H64", 1, 8192, 64, {}},
      {"B1 T8192 H96", 1, 8192, 96, {}},
      {"B8 T8192 H16", 8, 8192, 16, {}},
      {"varlen 6 seqs T8192 H96", 1, 8192, 96, {1300, 547, 2048, 963, 271, 3063}},
      {"B1 T8192 H32", 1, 8192, 32, {}},  // 4, 5: where kda_fwd's choice of variant changes
      {"B1 T8192 H48", 1, 8192, 48, {}},
  };
  const std::string picked = getenv("BENCH_SHAPES") ? getenv("BENCH_SHAPES") : "0123";
  const bool json = getenv("BENCH_JSON") != nullptr;
  const bool graphs = getenv("BENCH_GRAPH") != nullptr && std::string(getenv("BENCH_GRAPH")) != "0";
  if (graphs) std::printf("each call one CUDA-graph launch\n");
  const L2Flush flush;
  cudaStream_t st;
  CK(cudaStreamCreate(&st));
  std::vector<Row> table;
  uint64_t seed = 12345;
  for (char pick : picked) {
    const size_t si = size_t(pick - '0');
    if (si >= shapes.size()) {
      std::fprintf(stderr, "BENCH_SHAPES: no shape %c (0..%zu)\n", pick, shapes.size() - 1);
      return 2;
    }
    const Shape& sh = shapes[si];
    const size_t BT = size_t(sh.B) * sh.T, NK = BT * sh.H * K, NV = BT * sh.H * V;
    const int N = sh.seqlens.empty() ? sh.B : int(sh.seqlens.size());
    const size_t NS = size_t(N) * sh.H * K * V;
    __nv_bfloat16 *q, *k, *v, *g, *beta, *o;
    float *A_log, *dt_bias, *h0, *hT;
    CK(cudaMalloc(&q, NK * 2));
    CK(cudaMalloc(&k, NK * 2));
    CK(cudaMalloc(&v, NV * 2));
    CK(cudaMalloc(&g, NK * 2));
    CK(cudaMalloc(&beta, BT * sh.H * 2));
    CK(cudaMalloc(&o, NV * 2));
    CK(cudaMalloc(&A_log, sh.H * 4));
    CK(cudaMalloc(&dt_bias, sh.H * K * 4));
    CK(cudaMalloc(&h0, NS * 4));
    CK(cudaMalloc(&hT, NS * 4));
    FillBf16<<<1024, 256>>>(q, NK, ++seed, 1.f, 0.f);
    FillBf16<<<1024, 256>>>(k, NK, ++seed, 1.f, 0.f);
    FillBf16<<<1024, 256>>>(v, NV, ++seed, 1.f, 0.f);
    FillBf16<<<1024, 256>>>(g, NK, ++seed, 1.f, 0.f);
    FillBf16<<<1024, 256>>>(beta, BT * sh.H, ++seed, 1.f, 0.f);
    FillF32<<<64, 256>>>(A_log, sh.H, ++seed, 0.3f, 0.5f);
    FillF32<<<64, 256>>>(dt_bias, sh.H * K, ++seed, 0.3f, 0.5f);
    FillF32<<<1024, 256>>>(h0, NS, ++seed, 0.1f, 0.f);
    CK(cudaGetLastError());
    std::vector<int64_t> cu;
    int64_t* dcu = nullptr;
    if (!sh.seqlens.empty()) {
      cu.push_back(0);
      for (int64_t l : sh.seqlens) cu.push_back(cu.back() + l);
      CK(cudaMalloc(&dcu, cu.size() * 8));
      CK(cudaMemcpy(dcu, cu.data(), cu.size() * 8, cudaMemcpyHostToDevice));
    }
    kda_fwd_params p;
    kda_fwd_params_init(&p);
    p.B = sh.B, p.T = sh.T, p.H = sh.H, p.K = K, p.V = V;
    kda_fwd_params_set_contiguous(&p);
    p.num_seqs = sh.seqlens.empty() ? 0 : N;
    p.cu_seqlens = dcu, p.cu_seqlens_host = cu.empty() ? nullptr : cu.data();
    p.in_dtype = p.g_dtype = p.beta_dtype = p.out_dtype = KDA_DTYPE_BF16;
    p.q = q, p.k = k, p.v = v, p.g = g, p.beta = beta, p.o = o;
    p.A_log = A_log, p.dt_bias = dt_bias, p.initial_state = h0, p.final_state = hT;
    p.gate = KDA_GATE_LOWER_BOUND_SIGMOID, p.lower_bound = -5.0f;
    p.flags = KDA_FLAG_L2NORM_QK | KDA_FLAG_BETA_SIGMOID;
    size_t ws_bytes = 0;
    if (kda_fwd_workspace_size(&p, &ws_bytes) != KDA_OK) return 2;
    void* ws;
    CK(cudaMalloc(&ws, ws_bytes));
    p.workspace = ws, p.workspace_bytes = ws_bytes;

    using longhaul::kda::Variant;
    double spread = 0;  // of the last variant timed
    auto time_variant = [&](Variant variant) {
      auto launch = [&] {
        if (longhaul::kda::FwdVariant(&p, st, variant) != KDA_OK) {
          std::fprintf(stderr, "kda_fwd: %s\n", kda_last_error());
          std::exit(2);
        }
      };
      for (int i = 0; i < 3; ++i) launch();
      CK(cudaStreamSynchronize(st));
      std::vector<float> ms;
      if (graphs) {
        const CapturedGraph graph(st, launch);
        graph.Replay();
        ms = TimeEach(st, iters, flush, [&] { graph.Replay(); });
      } else {
        ms = TimeEach(st, iters, flush, launch);
      }
      spread = HalfIqr(ms);
      return Median(ms);
    };
    Row r;
    r.name = sh.name;
    r.chosen = longhaul::kda::AutoVariant(N, sh.H, device);
    if (json) {  // kda_fwd alone (its pick), for a longhaul search
      const double ms = time_variant(r.chosen);
      if (table.empty())
        std::printf("{\"metric\": \"time_ms\", \"value\": %.4f, \"spread\": %.4f, \"samples\": %d}\n", ms, spread, iters);
      std::printf("{\"metric\": \"time_ms_%zu\", \"value\": %.4f, \"spread\": %.4f, \"samples\": %d}\n", si, ms, spread,
                  iters);
      r.ms1 = r.ms2 = r.ms_ps1 = r.ms_ps2 = ms;
    } else {
      r.ms1 = time_variant(Variant::kFused1);
      r.ms2 = time_variant(Variant::kFused2);
      r.ms_ps1 = time_variant(Variant::kPrepScan1);
      r.ms_ps2 = time_variant(Variant::kPrepScan2);
    }
    r.bytes = double(NK) * 2 * 3 /*q k g*/ + double(NV) * 2 * 2 /*v o*/ + double(BT) * sh.H * 2 /*beta*/ +
              double(NS) * 4 * 2 /*h0 hT*/;
    if (!json) {
      const double ms = r.Chosen();
      std::printf("%-26s kda_fwd %.3f ms (fused, 1 CTA a head %.3f, 2: %.3f; prep+scan 1: %.3f, 2: %.3f)  %.2f TB/s  floor %.3f ms  x%.2f\n",
                  r.name.c_str(), ms, r.ms1, r.ms2, r.ms_ps1, r.ms_ps2, r.bytes / ms / 1e9,
                  r.bytes / (kCeilingTBs * 1e9), ms / (r.bytes / (kCeilingTBs * 1e9)));
      std::fflush(stdout);
    }
    table.push_back(r);
    // KDA_PROFILE=1: the fused kernel's clocks per chunk and phase (thread 0 of each CTA; one extra,
    // untimed launch of each variant). Zeros unless built with NVCC_EXTRA=-DKDA_PHASE_CLOCKS.
    if (getenv("KDA_PROFILE")) {
      unsigned long long* prof;
      CK(cudaMalloc(&prof, 7 * 8));
      for (Variant var : {Variant::kFused1, Variant::kFused2, Variant::kPrepScan1}) {
        CK(cudaMemset(prof, 0, 7 * 8));
        longhaul::kda::SetProfileBuffer(prof);
        if (longhaul::kda::FwdVariant(&p, st, var) != KDA_OK) std::exit(2);
        longhaul::kda::SetProfileBuffer(nullptr);
        unsigned long long hp[7];
        CK(cudaMemcpy(hp, prof, sizeof hp, cudaMemcpyDeviceToHost));
        const double nc = double(hp[6]);
        if (nc == 0) {
          std::printf("  profile: no clocks (build with NVCC_EXTRA=-DKDA_PHASE_CLOCKS)\n");
          break;
        }
        std::printf("  profile %s, cycles a chunk: wait %.0f  P1 %.0f  P2 %.0f  P3 %.0f  P4 %.0f  scan %.0f\n",
                    var == Variant::kFused1 ? "1 CTA a head " : var == Variant::kFused2 ? "2 CTAs a head" : "prep alone   ", hp[0] / nc, hp[1] / nc,
                    hp[2] / nc, hp[3] / nc, hp[4] / nc, hp[5] / nc);
      }
      CK(cudaFree(prof));
    }
    // BENCH_DUMP=dir: the first shape's inputs and our outputs as raw files (for the FLA comparison).
    if (const char* dir = getenv("BENCH_DUMP"); dir && si == 0) {
      if (kda_fwd(&p, st) != KDA_OK) std::exit(2);
      CK(cudaDeviceSynchronize());
      auto dump = [&](const char* name, const void* dptr, size_t bytes) {
        std::vector<char> hbuf(bytes);
        CK(cudaMemcpy(hbuf.data(), dptr, bytes, cudaMemcpyDeviceToHost));
        const std::string path = std::string(dir) + "/" + name + ".bin";
        FILE* f = std::fopen(path.c_str(), "wb");
        if (!f || std::fwrite(hbuf.data(), 1, bytes, f) != bytes) std::exit(3);
        std::fclose(f);
      };
      dump("q", q, NK * 2), dump("k", k, NK * 2), dump("v", v, NV * 2), dump("g", g, NK * 2);
      dump("beta", beta, BT * sh.H * 2), dump("A_log", A_log, sh.H * 4), dump("dt_bias", dt_bias, sh.H * K * 4);
      dump("h0", h0, NS * 4), dump("o", o, NV * 2), dump("hT", hT, NS * 4);
      std::printf("dumped %s to %s\n", sh.name.c_str(), dir);
    }
    for (void* ptr : {(void*)q, (void*)k, (void*)v, (void*)g, (void*)beta, (void*)o, (void*)A_log,
                      (void*)dt_bias, (void*)h0, (void*)hT, (void*)dcu, ws})
      if (ptr) CK(cudaFree(ptr));
  }
  if (json) return 0;
  std::printf("\n| shape | kda_fwd ms | fused, 1 CTA a head | fused, 2 CTAs a head | prep+scan, 1 | prep+scan, 2 | compulsory MB | TB/s | floor ms | x floor |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|---|\n");
  using longhaul::kda::Variant;
  for (const Row& r : table) {
    const double ms = r.Chosen();
    auto mark = [&](Variant v) { return r.chosen == v ? "*" : ""; };
    std::printf("| %s | %.3f | %.3f%s | %.3f%s | %.3f%s | %.3f%s | %.0f | %.2f | %.3f | %.2f |\n", r.name.c_str(), ms,
                r.ms1, mark(Variant::kFused1), r.ms2, mark(Variant::kFused2), r.ms_ps1,
                mark(Variant::kPrepScan1), r.ms_ps2, mark(Variant::kPrepScan2),
                r.bytes / 1e6, r.bytes / ms / 1e9, r.bytes / (kCeilingTBs * 1e9), ms / (r.bytes / (kCeilingTBs * 1e9)));
  }
  return 0;
}
