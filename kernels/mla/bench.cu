// mla/bench.cu: the speed bench of mla_fwd (a program): the whole pipeline (split-KV and combine
// kernels), bf16 q / KV / o, paged KV (pages of 64, shuffled block table), scale 1/sqrt(192).
// Random inputs (never zeros). Warm-up, then the median of --iters CUDA-event timings, each of one
// CUDA-graph launch of mla_fwd (captured once), L2 flushed before every timed call by writing a 256
// MB buffer, no host sync inside the loop. Also the eager (non-graph) median, for the launch cost.
// Metrics (FlashMLA's conventions, research/mla.md s2):
//   bytes = KV (sum_b S_b * 576 * 2) + Q (B s_q H 576 * 2) + O (B s_q H 512 * 2)
//   FLOP  = 2 H s_q (576 + 512) sum_b S_b  (decode: full S even when causal, as FlashMLA counts);
//           causal prefill: 2 H (576 + 512) S (S + 1) / 2
//   floor = max(bytes / 4.3 TB/s, FLOP / 790 TFLOP/s)  (this H200's copy and bf16 GEMM ceilings)
//
// Usage: bench [iters=50]
// Environment: BENCH_SHAPES=035 runs only those shapes (indices into the list in main); BENCH_JSON=1
// also prints the metrics protocol's lines (docs/metrics-protocol.md): time_us (graph-launched) for
// the first shape run, time_us_<index> for each. BENCH_NUM_PARTS=n overrides the schedule's parts per
// m-block (mla_fwd_params.num_parts), to measure the split count's trade-off. MLA_PROFILE=1: after
// each shape's timings, one more (untimed) launch with decode.cu's phase clocks on: cycles a tile
// and a CTA, thread 0 of each CTA (needs a build with NVCC_EXTRA=-DMLA_PHASE_CLOCKS).
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include <cuda_bf16.h>

#include "common/bench.cuh"
#include "mla/mla.h"
#include "mla/mla_gpu.cuh"

using namespace longhaul::kernels;

struct Shape {
  std::string name;
  int B, s_q, H, S;
  bool prefill;  // s_q = S, causal FLOPs
};

int main(int argc, char** argv) {
  longhaul::kernels::RequireHopper("mla bench");
  const int iters = argc > 1 ? std::max(10, std::atoi(argv[1])) : 50;
  constexpr double kTBs = 4.3, kTFlops = 790;
  constexpr int kD = 576, kDV = 512, kPage = 64;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("mla bench: %s, %d SMs, L2 %d MB; median of %d graph launches, L2 flushed (256 MB write) "
              "before each\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20, iters);
  const std::vector<Shape> shapes = {
      {"B1 H64 S8192 s_q1", 1, 1, 64, 8192, false},     {"B1 H64 S8192 s_q2", 1, 2, 64, 8192, false},
      {"B1 H64 S8192 s_q4", 1, 4, 64, 8192, false},     {"B128 H16 S8192 s_q1", 128, 1, 16, 8192, false},
      {"B128 H128 S8192 s_q1", 128, 1, 128, 8192, false}, {"B128 H128 S8192 s_q2", 128, 2, 128, 8192, false},
      {"prefill B1 H64 S8192 causal", 1, 8192, 64, 8192, true},
  };
  const std::string picked = getenv("BENCH_SHAPES") ? getenv("BENCH_SHAPES") : "0123456";
  const bool json = getenv("BENCH_JSON") != nullptr;
  const int num_parts = getenv("BENCH_NUM_PARTS") ? std::atoi(getenv("BENCH_NUM_PARTS")) : 0;
  bool first = true;
  const L2Flush flush;
  cudaStream_t st;
  CK(cudaStreamCreate(&st));
  std::printf("\n| shape | graph us | eager us | TB/s | TFLOP/s | floor us | x floor |\n|---|---|---|---|---|---|---|\n");
  uint64_t seed = 777;
  std::mt19937_64 rng(4242);
  for (char pick : picked) {
    const size_t si = size_t(pick - '0');
    if (si >= shapes.size()) {
      std::fprintf(stderr, "BENCH_SHAPES: no shape %c (0..%zu)\n", pick, shapes.size() - 1);
      return 2;
    }
    const Shape& sh = shapes[si];
    const int n_it = sh.prefill ? std::min(iters, 10) : iters;
    const int max_pages = (sh.S + kPage - 1) / kPage, num_pages = sh.B * max_pages;
    const size_t NQ = size_t(sh.B) * sh.s_q * sh.H * kD, NO = size_t(sh.B) * sh.s_q * sh.H * kDV;
    const size_t NKV = size_t(num_pages) * kPage * kD;
    __nv_bfloat16 *q, *kv, *o;
    float* lse;
    int32_t *bt, *sl;
    CK(cudaMalloc(&q, NQ * 2));
    CK(cudaMalloc(&kv, NKV * 2));
    CK(cudaMalloc(&o, NO * 2));
    CK(cudaMalloc(&lse, NO / kDV * 4));
    FillBf16<<<1024, 256>>>(q, NQ, ++seed, 1.f);
    FillBf16<<<1024, 256>>>(kv, NKV, ++seed, 1.f);
    CK(cudaGetLastError());
    std::vector<int32_t> perm(num_pages), seqlens(sh.B, sh.S);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    CK(cudaMalloc(&bt, perm.size() * 4));
    CK(cudaMalloc(&sl, seqlens.size() * 4));
    CK(cudaMemcpy(bt, perm.data(), perm.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(sl, seqlens.data(), seqlens.size() * 4, cudaMemcpyHostToDevice));
    mla_fwd_params p;
    mla_fwd_params_init(&p);
    p.B = sh.B, p.s_q = sh.s_q, p.H = sh.H;
    p.block_table = bt, p.block_table_stride = max_pages, p.max_pages = max_pages, p.num_pages = num_pages;
    mla_fwd_params_set_contiguous(&p);
    p.flags = MLA_FLAG_CAUSAL;
    p.num_parts = num_parts;
    p.q = q, p.kv = kv, p.o = o, p.lse = lse, p.seqlens = sl, p.seqlens_host = seqlens.data();
    size_t ws_bytes = 0;
    if (mla_fwd_workspace_size(&p, &ws_bytes) != MLA_OK) return 2;
    void* ws;
    CK(cudaMalloc(&ws, std::max<size_t>(ws_bytes, 256)));
    p.workspace = ws, p.workspace_bytes = ws_bytes;
    for (int i = 0; i < 3; ++i)
      if (mla_fwd(&p, st) != MLA_OK) {
        std::fprintf(stderr, "mla_fwd: %s\n", mla_last_error());
        return 2;
      }
    CK(cudaStreamSynchronize(st));
    p.seqlens_host = nullptr;  // the graph replays without host state
    const CapturedGraph graph(st, [&] {
      if (mla_fwd(&p, st) != MLA_OK) std::exit(2);
    });
    double spread = 0;  // of the last timing, us
    auto time = [&](bool use_graph) {
      auto launch = [&] {
        if (use_graph) graph.Replay();
        else if (mla_fwd(&p, st) != MLA_OK) std::exit(2);
      };
      for (int i = 0; i < 2; ++i) launch();
      const std::vector<float> ms = TimeEach(st, n_it, flush, launch);
      spread = HalfIqr(ms) * 1e3;
      return Median(ms) * 1e3;  // us
    };
    const double us = time(true), us_spread = spread, us_eager = time(false);
    const double tokens = double(sh.B) * sh.S;
    const double bytes = tokens * kD * 2 + double(NQ) * 2 + double(NO) * 2;
    const double flop = sh.prefill ? 2.0 * sh.H * (kD + kDV) * double(sh.S) * (sh.S + 1) / 2
                                   : 2.0 * sh.H * sh.s_q * (kD + kDV) * tokens;
    const double floor_us = std::max(bytes / (kTBs * 1e6), flop / (kTFlops * 1e6));
    std::printf("| %s | %.1f | %.1f | %.2f | %.0f | %.1f | %.2f |\n", sh.name.c_str(), us, us_eager,
                bytes / us / 1e6, flop / us / 1e6, floor_us, us / floor_us);
    if (json) {
      if (first)
        std::printf("{\"metric\": \"time_us\", \"value\": %.3f, \"spread\": %.3f, \"samples\": %d}\n", us, us_spread, n_it);
      std::printf("{\"metric\": \"time_us_%zu\", \"value\": %.3f, \"spread\": %.3f, \"samples\": %d}\n", si, us, us_spread,
                  n_it);
      first = false;
    }
    if (getenv("MLA_PROFILE")) {
      using namespace longhaul::mla::gpu;
      unsigned long long* prof;
      unsigned long long h[kPhaseCounters];
      CK(cudaMalloc(&prof, sizeof h));
      CK(cudaMemset(prof, 0, sizeof h));
      SetProfileBuffer(prof);  // read at launch: an eager one (the graph has none)
      if (mla_fwd(&p, st) != MLA_OK) return 2;
      CK(cudaStreamSynchronize(st));
      SetProfileBuffer(nullptr);
      CK(cudaMemcpy(h, prof, sizeof h, cudaMemcpyDeviceToHost));
      CK(cudaFree(prof));
      if (h[kCtas] == 0) {
        std::printf("  profile: no counts (decode.cu built without -DMLA_PHASE_CLOCKS)\n");
      } else {
        const double tiles = std::max(1.0, double(h[kTiles])), ctas = double(h[kCtas]);
        std::printf("  profile: %.0f tiles over %.0f CTAs; cycles a tile: land %.0f  barrier %.0f  issue %.0f  QK %.0f"
                    "  softmax %.0f  PV %.0f; a CTA: scan %.0f  prologues %.0f  epilogues %.0f\n", tiles, ctas,
                    h[kLand] / tiles, h[kBarrier] / tiles, h[kIssue] / tiles, h[kQK] / tiles, h[kSoftmax] / tiles,
                    h[kPV] / tiles, h[kScan] / ctas, h[kPrologue] / ctas, h[kEpilogue] / ctas);
        for (int c = 0; c < 2; ++c) {
          const unsigned long long* w = h + kSeesawClocks + kSwPhases * c;
          if (w[kSwPairs] == 0) continue;
          const double pairs = double(w[kSwPairs]);
          std::printf("  seesaw WG%d: %.0f pairs; cycles a pair: drain %.0f  load %.0f  land %.0f  QK %.0f  land2 %.0f"
                      "  barriers %.0f  S wait %.0f  softmax %.0f  PV %.0f  PV wait %.0f\n", c, pairs, w[kSwDrain] / pairs,
                      w[kSwLoad] / pairs, w[kSwLand] / pairs, w[kSwQK] / pairs, w[kSwLand2] / pairs,
                      w[kSwBarrier] / pairs, w[kSwSWait] / pairs, w[kSwSoftmax] / pairs, w[kSwPV] / pairs,
                      w[kSwPVWait] / pairs);
        }
      }
    }
    std::fflush(stdout);
    for (void* ptr : {(void*)q, (void*)kv, (void*)o, (void*)lse, (void*)bt, (void*)sl, ws}) CK(cudaFree(ptr));
  }
  std::printf("\ntargets (issue 5): B1 H64 s_q1 <= 6 us, s_q4 <= 10 us; B128 H16 >= 4.0 TB/s; B128 H128 s_q1 >= 640 "
              "TFLOP/s, s_q2 >= 670; prefill <= 8 ms\n");
  return 0;
}
