// kda/scan_step_probe.cu: how long one scan step of KDA takes in a CTA sized like the preparation's
// (256 threads, `__launch_bounds__(256, 2)`: at most 128 registers a thread, no spills, and at most
// ~113 KB of shared memory with its 1 KiB alignment pad, so that two CTAs share an SM), and whether
// it is right. RESULTS.md's step 13 counts a fused design in which such CTAs take both preparation
// items and scan steps from one queue; this measures its scan step before any of it is built.
//
// The step (ScanStepKernel): a CTA scans ONE V half (64 v, v0 = 0 or 64) of one head over a window
// of consecutive chunks, from the chunk images that the prep + scan variant leaves in the workspace
// (kda_gpu.cuh), with the state loaded from h0 at the window's start and stored to hT at its end
// ([N][H][V][K], KDA_FLAG_STATE_V_FIRST). ScanChunk (fused.cu) keeps a warp's 16 v x 128 d of S^T in
// 64 registers and spills at 128; here the d columns are split between the two warpgroups instead:
// warpgroup w holds S^T[64 v][64 w .. 64 w + 63], 16 v x 64 d a warp (`float st[8][4]`, 32 registers).
// Per chunk (V_new^T = U^T - S^T W^T; O^T = S^T Qg^T + V_new^T Aqk^T; S^T = S^T Diag(gamma) + V_new^T Kg):
//   1. each warpgroup: P_w = S^T_w W^T over its d half (K-steps 4w .. 4w + 3 of ScanChunk's), and
//      S^T_w in bf16 into W's block w, which only it read (step 3's A operand from there: held in
//      registers beside o, st and V_new^T in flight, it made the step spill at 128 registers);
//   2. the partials P_w meet in shared memory (16 KiB each; barrier B1): both warpgroups hold the
//      whole S^T W^T and form V_new^T (bf16 A fragments over the 4 token blocks, as ScanChunk's vb);
//   3. O_w = S^T_w Qg^T + V_new^T Aqk^T over half the tokens: warpgroup 0 token blocks 0, 1,
//      warpgroup 1 blocks 2, 3. Warpgroup 1 builds its vb rotated by two blocks (vb[0], vb[1] hold
//      blocks 2, 3), so that both warpgroups issue the same wgmma instructions on the same
//      registers: a warpgroup-dependent select of the A registers serialises the wgmmas (ptxas
//      C7512), and so does a wgmma in a branch that one warpgroup takes (C7514). Descriptors differ
//      by address arithmetic only;
//   4. warpgroup 0's O_0 goes to warpgroup 1 through shared memory (barrier B2), which adds it and
//      writes o (bf16, through a per-warp transposition as ScanChunk's);
//   5. S^T_w = S^T_w Diag(gamma) + V_new^T Kg[:, its d half] over all 4 token blocks.
// The image lands in one stage of shared memory by bulk copies, in two parts on two mbarriers:
// A = W (step 1) and B = Qg, Kg, Aqk, the V half's U^T rows, gamma (steps 2 to 5). Two stages
// (2 x 67 KB) do not fit beside the exchange, and every part of the stage is read until step 5
// (W's blocks hold S^T), so the next chunk's copies start after B2. The late form (kEarly false)
// waits for both parts before step 1; the early form waits for A only, and for B after step 1's
// products, so that B's copy overlaps them.
// Step 5 runs before step 3, with a wait between: in flight together (o, st and V_new^T: 80
// registers) the step spilled a few bytes at 128 registers; this way at most 72 are in flight.
//
// The driver: random inputs as bench.cu's (seed from the clock), kda_fwd's prep + scan for o, hT
// and the images, then the probe over every chunk from the same h0 (o2, hT2), compared; then timings
// (microseconds a chunk step, i.e. one V half of one chunk of one head; median of iters):
//   (a) every (sequence, head, V half) at once, images from DRAM (L2 flushed): elapsed / chunks;
//   (b) one CTA alone over its whole sequence, from DRAM: elapsed / chunks;
//   (c) one CTA alone over 8 chunks whose images it has just read (L2): the second of two launches / 8;
//   (d) 2 CTAs an SM at once, each on its own (head, window, V half), windows of 8, 4 and 2 chunks, the
//       same windows warmed just before: / window (the images' footprint beside L2's size is printed);
//   (e) one CTA with no chunk: the launch and the state's load and store, to subtract from (c).
//   (f) a preparation item (a chunk of a head), the preparation kernel alone with 2 CTAs an SM, with 1, and
//       with 1 beside step CTAs on a second stream: what kernels/kda/queue_model.py most depends on.
// Usage: scan_step_probe [shape=0] [iters=20; 0: the check only]; shape 0 = B1 T8192 H64, 1 = B8 T8192
// H16. Exits 1 if o or the state differ from prep + scan by more than 2e-2 (relative RMS) or hold a NaN.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "common/bench.cuh"
#include "common/bf16.h"
#include "kda/kda_testing.h"

// This program compiles its own copy of fused.cu for the device helpers. Its two exported launchers
// are renamed here, so that they do not interpose on libkda_cuda's (kda_fwd would then launch this
// program's copies of the kernels): the probe calls neither.
#define LaunchFused ScanStepProbeUnusedLaunchFused
#define LaunchPrepScan ScanStepProbeUnusedLaunchPrepScan
#include "kda/fused.cu"
#undef LaunchFused
#undef LaunchPrepScan

namespace longhaul::kda::gpu {
namespace {
using kernels::Wgmma64x64;

// D[64 x 64] (+)= A[64 x 16] B[16 x 64]: A from registers, B MN-major (wgmma.cuh's Wgmma64x128RsMnB
// at N = 64; that header's operand macros are private to it).
__device__ __forceinline__ void Wgmma64x64RsMnB(float (&d)[8][4], const uint32_t (&a)[4], uint64_t b, int accumulate) {
#define PROBE_D2(n) "+f"(d[n][0]), "+f"(d[n][1]), "+f"(d[n][2]), "+f"(d[n][3]), \
                    "+f"(d[n + 1][0]), "+f"(d[n + 1][1]), "+f"(d[n + 1][2]), "+f"(d[n + 1][3])
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
               "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}"
               ", {%32,%33,%34,%35}, %36, p, 1, 1, 1;\n}\n"
               : PROBE_D2(0), PROBE_D2(2), PROBE_D2(4), PROBE_D2(6)
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));
#undef PROBE_D2
}

// Shared memory: one stage of the image as ScanKernel<64>'s ring holds it (W, Qg, Kg, Aqk, the V
// half's U^T rows, gamma), then the warpgroups' exchange X: [warpgroup][warp][n-tile][lane] float4,
// an accumulator fragment a thread, 16 KiB a warpgroup (4 KiB a warp). X_w holds warpgroup w's P_w
// (step 2); X_1 then takes O_0 (step 4: warpgroup 0 writes it where it read P_1, each thread its
// own fragment) and, per warp, warpgroup 1's output transposition (kC x kLdOt bf16 in 4 KiB).
struct StepLayout {
  using Ring = ScanRing<64>;
  static constexpr int kPartA = kImgQg;                 // W: the image's first bytes
  static constexpr int kX = Ring::kBytesIn;             // (16-byte aligned: the exchange's float4)
  static constexpr int kXWarp = 8 * 32 * 16;            // a warp's fragments
  static constexpr int kBar = kX + 8 * kXWarp;
  static constexpr int kBytes = kBar + 2 * 8;
  static_assert(kX % 16 == 0 && kBar % 8 == 0, "float4 exchange, mbarriers");
  static_assert(kC * kLdOt * 2 <= kXWarp, "a warp's transposition fits its part of X_1");
  static_assert(kPrepCtasPerSm * (kBytes + 1024 + 1024) <= 233472, "two CTAs an SM, as PrepLayout");
};

// CTA blockIdx.x: V half blockIdx.x % 2, head (blockIdx.x / 2) % H, then sequence and window (n
// fastest): chunks [w window, w window + count) of sequence n, clipped to the sequence. The state
// comes from p.h0 (zero without) and goes to p.hT; several windows of one head store to the same hT
// (only the timings do that). Requires p.v_first, bf16 o, and no cu_seqlens (the driver's shapes).
template <bool kEarly>
__global__ void __launch_bounds__(kThreads, kPrepCtasPerSm) ScanStepKernel(const Params p, int window, int count) {
  using L = StepLayout;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024 - SmemAddr(smem_raw) % 1024) % 1024);  // the swizzle's alignment
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
  const int wg = warp >> 2, wq = warp & 3;  // warpgroup (d half), warp in it (16 v rows)
  const int vs = blockIdx.x % 2, h = (blockIdx.x / 2) % p.H, rest = blockIdx.x / 2 / p.H;
  const int n = rest % p.N, win = rest / p.N;
  const int v0 = 64 * vs;
  const SeqInfo seq = GetSeq(p, n);
  const int nchunks = int((seq.len + kC - 1) / kC);
  const int c_begin = win * window, c_end = min(nchunks, c_begin + count);

  // st[nt][e]: S^T row v = v0 + 16 wq + g + 8 (e / 2), column d = 64 wg + 8 nt + 2 t + e % 2 (the
  // wgmma accumulator's layout). v_first: d and d + 1 are adjacent.
  const int vrow = v0 + 16 * wq + g, dcol = 64 * wg + 2 * t;
  // This thread's state elements: (n, h)'s state at hd, row vrow (+ 8), column dcol + 8 nt (+ 1), as
  // StateAt with v_first. (An int offset: StateAt's 16 addresses, held to the end, spilled.)
  const size_t hd = (size_t(n) * p.H + h) * kK * kV;
  const int soff = vrow * kK + dcol;
  float st[8][4];
#pragma unroll
  for (int nt = 0; nt < 8; ++nt)
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      const float2 x =
          p.h0 ? *reinterpret_cast<const float2*>(p.h0 + hd + soff + 8 * hh * kK + 8 * nt) : make_float2(0.f, 0.f);
      st[nt][2 * hh] = x.x, st[nt][2 * hh + 1] = x.y;
    }

  const uint32_t base = SmemAddr(smem), bar_a = SmemAddr(smem + L::kBar), bar_b = bar_a + 8;
  if (tid == 0) {
    BarInit(bar_a, 1);
    BarInit(bar_b, 1);
    BarInitFence();
  }
  __syncthreads();
  // Chunk c's image, part A (W) or B (Qg, Kg, Aqk, this half's U^T rows, gamma), as ScanKernel's
  // `issue` (thread 0).
  auto issue_a = [&](int c) {
    const unsigned char* rec = ChunkImage(p, seq.chunk0 + c, h);
    BarArriveExpectTx(bar_a, L::kPartA);
    BulkLoad(base, rec, L::kPartA, bar_a);
  };
  auto issue_b = [&](int c) {
    const unsigned char* rec = ChunkImage(p, seq.chunk0 + c, h);
    BarArriveExpectTx(bar_b, L::Ring::kBytesIn - L::kPartA);
    BulkLoad(base + L::kPartA, rec + L::kPartA, kImgUt - L::kPartA, bar_b);
    BulkLoad(base + kImgUt, rec + kImgUt + v0 * kLd64 * 2, 64 * kLd64 * 2, bar_b);
    BulkLoad(base + L::Ring::kGam, rec + kImgGam, kK * 4, bar_b);
  };
  if (tid == 0 && c_begin < c_end) issue_a(c_begin), issue_b(c_begin);

  // This thread's float4 slots in the exchange (slot nt at [nt * 32]): warpgroup 0's, warpgroup 1's
  // (also O_0's way, step 4) and its own warpgroup's.
  float4* const x_wg0 = reinterpret_cast<float4*>(smem + L::kX) + wq * 8 * 32 + lane;
  float4* const x_wg1 = x_wg0 + 4 * 8 * 32;
  float4* const x_own = x_wg0 + wg * 4 * 8 * 32;
  const auto* ut = reinterpret_cast<const __nv_bfloat16*>(smem + kImgUt) + (16 * wq + g) * kLd64 + 2 * t;
  const auto* gam = reinterpret_cast<const float*>(smem + L::Ring::kGam) + dcol;
  unsigned char* const w_half = smem + kImgW + wg * kSwBlock;  // W's block wg: this warpgroup's d half
  // Descriptors: W and Qg, K-major, this warpgroup's d half is their 64-column block wg (K-steps
  // 4 wg .. 4 wg + 3 of ScanChunk's desc_k); S^T_w's copy in W's block wg the same way, as an A
  // operand [64 v][64 d]; Aqk, K-major over tokens, K-step kt 32 kt bytes in; Kg, MN-major
  // [64 tokens][128 d]: d 64 .. 127 is its second 64-column block, kSwBlock in (Sw128Offset: column
  // 64 is chunk 8, block 1), token block kt 16 rows (2 KiB) down it.
  auto w_desc = [&](int ks) { return Sw128Desc(base + kImgW + wg * kSwBlock + 32 * ks, 16, 1024); };
  auto qg_desc = [&](int ks) { return Sw128Desc(base + kImgQg + wg * kSwBlock + 32 * ks, 16, 1024); };
  auto aqk_desc = [&](int kt) { return Sw128Desc(base + kImgQg + 4 * kSwBlock + 32 * kt, 16, 1024); };
  auto kg_desc = [&](int kt) {
    return Sw128Desc(base + kImgQg + 2 * kSwBlock + wg * kSwBlock + kt * 16 * 128, kSwBlock, 1024);
  };
  // Where this warp's o rows go (chunk c: + c kC rows).
  __nv_bfloat16* const out0 =
      static_cast<__nv_bfloat16*>(p.o) + seq.b * p.o_st[0] + seq.bos * p.o_st[1] + h * p.o_st[2] + v0 + 16 * wq;

  for (int c = c_begin; c < c_end; ++c) {
    const uint32_t parity = (c - c_begin) & 1;
    BarWait(bar_a, parity);
    if (!kEarly) BarWait(bar_b, parity);
    // ---- 1. P_w = S^T_w W^T over this warpgroup's d half -------------------------------------------
    uint32_t a[4][4];  // S^T_w as bf16 A fragments over its 4 steps of 16 d
#pragma unroll
    for (int ks = 0; ks < 4; ++ks)
      a[ks][0] = PackBf16(st[2 * ks][0], st[2 * ks][1]), a[ks][1] = PackBf16(st[2 * ks][2], st[2 * ks][3]),
      a[ks][2] = PackBf16(st[2 * ks + 1][0], st[2 * ks + 1][1]), a[ks][3] = PackBf16(st[2 * ks + 1][2], st[2 * ks + 1][3]);
    float pw[8][4];
    WgmmaFence();
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) Wgmma64x64Rs(pw, a[ks], w_desc(ks), ks);
    WgmmaCommit();
    WgmmaWait<0>();
    FenceOperands(pw);
    FenceOperands(a);
    // S^T_w (bf16) into W's block wg, which only this warpgroup read: step 3's S^T_w Qg^T reads it
    // from there, so that `a` (16 registers) is not held beside o, st and vb in flight (held, the
    // step spilled at 128 registers). Conflict-free: a register's 8 rows g land in 8 chunk columns.
#pragma unroll
    for (int ks = 0; ks < 4; ++ks)
#pragma unroll
      for (int x = 0; x < 4; ++x)
        *reinterpret_cast<uint32_t*>(w_half + SwOff(16 * wq + g + 8 * (x & 1), 16 * ks + 8 * (x >> 1) + 2 * t)) =
            a[ks][x];
    FenceProxyAsync();  // (for step 3's wgmma; the warpgroup's barrier is B1)
    if (kEarly) BarWait(bar_b, parity);  // Qg .. gamma
    // ---- 2. S^T W^T = P_0 + P_1 through X; V_new^T in this warpgroup's token order --------------
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) x_own[nt * 32] = make_float4(pw[nt][0], pw[nt][1], pw[nt][2], pw[nt][3]);
    __syncthreads();  // B1: P_0, P_1 in X, S^T_0, S^T_1 in W
    // Slot nt of this warpgroup's vb holds token n-tile nr = nt + 4 wg (mod 8): rotated by two token
    // blocks in warpgroup 1. Both partials are read back from X at nr (an address, where the own
    // partial's registers would need a warpgroup-dependent select), so vb is never selected, and both
    // warpgroups sum P_0 + P_1 in the same order: the same V_new^T.
    uint32_t vb[4][4];
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
      const int nr = nt < 4 ? nt + 4 * wg : nt - 4 * wg;
      const float4 x0 = x_wg0[nr * 32], x1 = x_wg1[nr * 32];
      const float2 u0 = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(ut + 8 * nr));
      const float2 u1 = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(ut + 8 * kLd64 + 8 * nr));
      vb[nt >> 1][2 * (nt & 1)] = PackBf16(u0.x - (x0.x + x1.x), u0.y - (x0.y + x1.y));
      vb[nt >> 1][2 * (nt & 1) + 1] = PackBf16(u1.x - (x0.z + x1.z), u1.y - (x0.w + x1.w));
    }
    // ---- 5. S^T_w = S^T_w Diag(gamma) + V_new^T Kg[:, d half]: vb[j] is token block j + 2 wg (mod 4) -
#pragma unroll
    for (int nt = 0; nt < 8; ++nt) {
      const float2 gm = *reinterpret_cast<const float2*>(gam + 8 * nt);
      st[nt][0] *= gm.x, st[nt][1] *= gm.y, st[nt][2] *= gm.x, st[nt][3] *= gm.y;
    }
    WgmmaFence();
#pragma unroll
    for (int j = 0; j < 4; ++j) Wgmma64x64RsMnB(st, vb[j], kg_desc(j < 2 ? j + 2 * wg : j - 2 * wg), 1);
    WgmmaCommit();
    WgmmaWait<0>();
    FenceOperands(st);
    // (vb[2], vb[3] are free from here: step 3 holds o, st and vb[0], vb[1].)
    // ---- 3. O_w = S^T_w Qg^T + V_new^T Aqk^T over token blocks 2 wg, 2 wg + 1 (vb[0], vb[1]) --------
    float o[8][4];
    WgmmaFence();
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) Wgmma64x64(o, w_desc(ks), qg_desc(ks), ks);
#pragma unroll
    for (int j = 0; j < 2; ++j) Wgmma64x64Rs(o, vb[j], aqk_desc(2 * wg + j), 1);
    WgmmaCommit();
    WgmmaWait<0>();
    FenceOperands(o);
    FenceOperands(st);
    FenceOperands(vb);
    // ---- 4. O = O_0 + O_1 in warpgroup 1, which writes o --------------------------------------------
    // B1b: warpgroup 1's step 2 reads P_1 from the slots O_0 is about to take; nothing else orders a
    // slow warpgroup 1 before them (steps 5 and 3 synchronise a warpgroup, not the CTA).
    __syncthreads();
    if (wg == 0)  // where this thread read P_1 (warpgroup 1 reads X_1 again only after B2)
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) x_wg1[nt * 32] = make_float4(o[nt][0], o[nt][1], o[nt][2], o[nt][3]);
    __syncthreads();  // B2: O_0 in X_1; every read of the stage (and of X_0) done
    if (tid == 0 && c + 1 < c_end) issue_a(c + 1), issue_b(c + 1);
    if (wg == 1) {
#pragma unroll
      for (int nt = 0; nt < 8; ++nt) {
        const float4 y = x_wg1[nt * 32];
        o[nt][0] += y.x, o[nt][1] += y.y, o[nt][2] += y.z, o[nt][3] += y.w;
      }
      __syncwarp();  // the warp's O_0 read: its part of X_1 takes the transposition
      auto* ot = reinterpret_cast<__nv_bfloat16*>(smem + L::kX + (4 + wq) * L::kXWarp);  // [kC tokens][kLdOt]
#pragma unroll
      for (int nt = 0; nt < 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          ot[(8 * nt + 2 * t + (e & 1)) * kLdOt + g + 8 * (e >> 1)] = __float2bfloat16_rn(o[nt][e]);
      __syncwarp();
      const int rows = min(kC, int(seq.len - int64_t(c) * kC));  // (ChunkOf's rows)
      __nv_bfloat16* const out = out0 + int64_t(c) * kC * p.o_st[1];
#pragma unroll
      for (int x = 0; x < 4; ++x) {
        const int pi = lane + 32 * x, r = pi >> 1, hf = pi & 1;
        if (r < rows)
          *reinterpret_cast<uint4*>(out + r * p.o_st[1] + 8 * hf) =
              *reinterpret_cast<const uint4*>(ot + r * kLdOt + 8 * hf);
      }
      __syncwarp();  // the transposition read before the next chunk's P_1 lands over it
    }
  }
  if (p.hT)
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh)
        *reinterpret_cast<float2*>(p.hT + hd + soff + 8 * hh * kK + 8 * nt) =
            make_float2(st[nt][2 * hh], st[nt][2 * hh + 1]);
}

}  // namespace
}  // namespace longhaul::kda::gpu

namespace {

using longhaul::kda::Variant;
namespace gpu = longhaul::kda::gpu;
using namespace longhaul::kernels;

constexpr int kK = 128, kV = 128;

// ctas CTAs of the step over windows of `window` chunks, `count` of them scanned (0: the state only).
template <bool kEarly>
void LaunchStep(const gpu::Params& gp, int ctas, int window, int count, cudaStream_t st) {
  static bool configured = false;
  const int bytes = gpu::StepLayout::kBytes + 1024;  // (1 KiB to align the swizzled tiles)
  if (!configured) {
    CK(cudaFuncSetAttribute(gpu::ScanStepKernel<kEarly>, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    configured = true;
  }
  gpu::ScanStepKernel<kEarly><<<ctas, 256, bytes, st>>>(gp, window, count);
  CK(cudaGetLastError());
}

// Milliseconds of the second of two back-to-back launches (the first warms L2 with the images), iters times.
template <typename Launch>
std::vector<float> TimeWarm(cudaStream_t st, int iters, Launch&& launch) {
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  std::vector<float> ms(iters);
  for (int i = 0; i < iters; ++i) {
    launch();
    CK(cudaEventRecord(e0, st));
    launch();
    CK(cudaEventRecord(e1, st));
    CK(cudaEventSynchronize(e1));
    CK(cudaEventElapsedTime(&ms[i], e0, e1));
  }
  CK(cudaEventDestroy(e0));
  CK(cudaEventDestroy(e1));
  return ms;
}

std::vector<float> Floats(const std::vector<uint16_t>& bf16) {
  std::vector<float> x(bf16.size());
  std::transform(bf16.begin(), bf16.end(), x.begin(), Bf16ToFloat);
  return x;
}

const char* VariantName(Variant v) {
  switch (v) {
    case Variant::kFused1: return "fused, 1 CTA a head";
    case Variant::kFused2: return "fused, 2 CTAs a head";
    case Variant::kPrepScan1: return "prep + scan, 1 CTA a head";
    case Variant::kPrepScan2: return "prep + scan, 2 CTAs a head";
    default: return "auto";
  }
}

}  // namespace

int main(int argc, char** argv) {
  RequireHopper("scan_step_probe");
  struct Shape {
    const char* name;
    int B, T, H;
  };
  const Shape shapes[] = {{"B1 T8192 H64", 1, 8192, 64}, {"B8 T8192 H16", 8, 8192, 16}};
  const int si = argc > 1 ? std::atoi(argv[1]) : 0;
  const int iters = argc > 2 ? std::atoi(argv[2]) : 20;  // 0: the check alone (for compute-sanitizer)
  if (si < 0 || si > 1 || (iters != 0 && iters < 3)) {
    std::fprintf(stderr, "usage: scan_step_probe [shape: 0 = B1 T8192 H64, 1 = B8 T8192 H16] "
                         "[iters >= 3, default 20; 0: the check only]\n");
    return 2;
  }
  const Shape& sh = shapes[si];
  const uint64_t seed = uint64_t(std::chrono::system_clock::now().time_since_epoch().count());
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const longhaul::kda::DeviceInfo device = longhaul::kda::CurrentDevice();
  std::printf("scan_step_probe: %s, %d SMs, L2 %d MB, DRAM peak %.2f TB/s; %s, seed %llu, median of %d\n", prop.name,
              prop.multiProcessorCount, prop.l2CacheSize >> 20, device.dram_bytes_per_s / 1e12, sh.name,
              (unsigned long long)seed, iters);

  // ---- inputs and kda_fwd, as bench.cu (plus STATE_V_FIRST) ----------------------------------------
  const int N = sh.B, nchunks = (sh.T + gpu::kC - 1) / gpu::kC;
  const size_t BT = size_t(sh.B) * sh.T, NK = BT * sh.H * kK, NV = BT * sh.H * kV, NS = size_t(N) * sh.H * kK * kV;
  __nv_bfloat16 *q, *k, *v, *g, *beta, *o, *o2;
  float *A_log, *dt_bias, *h0, *hT, *hT2;
  CK(cudaMalloc(&q, NK * 2));
  CK(cudaMalloc(&k, NK * 2));
  CK(cudaMalloc(&v, NV * 2));
  CK(cudaMalloc(&g, NK * 2));
  CK(cudaMalloc(&beta, BT * sh.H * 2));
  CK(cudaMalloc(&o, NV * 2));
  CK(cudaMalloc(&o2, NV * 2));
  CK(cudaMalloc(&A_log, sh.H * 4));
  CK(cudaMalloc(&dt_bias, sh.H * kK * 4));
  CK(cudaMalloc(&h0, NS * 4));
  CK(cudaMalloc(&hT, NS * 4));
  CK(cudaMalloc(&hT2, NS * 4));
  uint64_t s = seed;
  FillBf16<<<1024, 256>>>(q, NK, ++s, 1.f, 0.f);
  FillBf16<<<1024, 256>>>(k, NK, ++s, 1.f, 0.f);
  FillBf16<<<1024, 256>>>(v, NV, ++s, 1.f, 0.f);
  FillBf16<<<1024, 256>>>(g, NK, ++s, 1.f, 0.f);
  FillBf16<<<1024, 256>>>(beta, BT * sh.H, ++s, 1.f, 0.f);
  FillF32<<<64, 256>>>(A_log, sh.H, ++s, 0.3f, 0.5f);
  FillF32<<<64, 256>>>(dt_bias, sh.H * kK, ++s, 0.3f, 0.5f);
  FillF32<<<1024, 256>>>(h0, NS, ++s, 0.1f, 0.f);
  CK(cudaGetLastError());
  kda_fwd_params p;
  kda_fwd_params_init(&p);
  p.B = sh.B, p.T = sh.T, p.H = sh.H, p.K = kK, p.V = kV;
  kda_fwd_params_set_contiguous(&p);
  p.in_dtype = p.g_dtype = p.beta_dtype = p.out_dtype = KDA_DTYPE_BF16;
  p.q = q, p.k = k, p.v = v, p.g = g, p.beta = beta, p.o = o;
  p.A_log = A_log, p.dt_bias = dt_bias, p.initial_state = h0, p.final_state = hT;
  p.gate = KDA_GATE_LOWER_BOUND_SIGMOID, p.lower_bound = -5.0f;
  p.flags = KDA_FLAG_L2NORM_QK | KDA_FLAG_BETA_SIGMOID | KDA_FLAG_STATE_V_FIRST;
  p.scale = 1.0f / std::sqrt(float(kK));
  size_t ws_bytes = 0;
  if (kda_fwd_workspace_size(&p, &ws_bytes) != KDA_OK) return 2;
  void* ws;
  CK(cudaMalloc(&ws, ws_bytes));
  p.workspace = ws, p.workspace_bytes = ws_bytes;
  cudaStream_t st;
  CK(cudaStreamCreate(&st));

  // Only prep + scan writes the images (FusedKernel<kV, true> in fused.cu; the one-kernel variants
  // leave the workspace alone): where kda_fwd would pick the fused kernel, prep + scan runs anyway.
  const Variant pick = longhaul::kda::AutoVariant(N, sh.H, device);
  const Variant ran = pick == Variant::kPrepScan1 || pick == Variant::kPrepScan2 ? pick : Variant::kPrepScan1;
  CK(cudaMemsetAsync(o, 0xFF, NV * 2, st));  // NaN: rows never written show
  if (longhaul::kda::FwdVariant(&p, st, ran) != KDA_OK) {
    std::fprintf(stderr, "kda_fwd: %s\n", kda_last_error());
    return 2;
  }
  CK(cudaStreamSynchronize(st));
  std::printf("kda_fwd's pick: %s; ran %s (its images stay in the workspace)\n", VariantName(pick), VariantName(ran));

  // ---- the probe over every chunk, from the same h0 and the images ---------------------------------
  gpu::Params gp = gpu::ParamsOf(p);  // kda_fwd's, its images in the workspace; o and hT into o2, hT2
  gp.o = o2, gp.hT = hT2;
  const int all_ctas = N * sh.H * 2;
  std::vector<uint16_t> o_ref(NV), o_got(NV);
  std::vector<float> h_ref(NS), h_got(NS);
  CK(cudaMemcpy(o_ref.data(), o, NV * 2, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(h_ref.data(), hT, NS * 4, cudaMemcpyDeviceToHost));
  bool ok = true;
  auto check = [&](const char* form, auto launch_all) {
    CK(cudaMemsetAsync(o2, 0xFF, NV * 2, st));
    CK(cudaMemsetAsync(hT2, 0xFF, NS * 4, st));
    launch_all();
    CK(cudaStreamSynchronize(st));
    CK(cudaMemcpy(o_got.data(), o2, NV * 2, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(h_got.data(), hT2, NS * 4, cudaMemcpyDeviceToHost));
    const double eo = longhaul::kda::testing::RelRms(Floats(o_ref), Floats(o_got)),
                 eh = longhaul::kda::testing::RelRms(h_ref, h_got);
    const bool good = eo <= 2e-2 && eh <= 2e-2;  // (false on NaN)
    std::printf("probe (%s form) against prep + scan: o rel. RMS %.3e, hT rel. RMS %.3e  %s\n", form, eo, eh,
                good ? "ok" : "FAIL");
    ok = ok && good;
  };
  check("late", [&] { LaunchStep<false>(gp, all_ctas, nchunks, nchunks, st); });
  check("early", [&] { LaunchStep<true>(gp, all_ctas, nchunks, nchunks, st); });
  if (iters == 0) return ok ? 0 : 1;
  int occ_late = 0, occ_early = 0;
  const int dyn_bytes = gpu::StepLayout::kBytes + 1024;
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ_late, gpu::ScanStepKernel<false>, 256, dyn_bytes));
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ_early, gpu::ScanStepKernel<true>, 256, dyn_bytes));
  std::printf("shared memory %d bytes a CTA (+ 1 KiB to align); CTAs an SM: %d (late), %d (early)\n",
              gpu::StepLayout::kBytes, occ_late, occ_early);

  // ---- timings ---------------------------------------------------------------------------------------
  const L2Flush flush;
  const double step_bytes = gpu::StepLayout::Ring::kBytesIn;  // what a CTA copies in a chunk
  const double img_mb = double(gpu::kImgBytes) / 1e6;
  struct Row {
    char name[96];
    double us[2];  // late, early: microseconds a chunk step
    char note[96];
  };
  std::vector<Row> rows;
  auto time_both = [&](Row r, auto&& timer) {  // timer(early) -> us a chunk step
    r.us[0] = timer(false);
    r.us[1] = timer(true);
    rows.push_back(r);
  };
  auto launch = [&](bool early, int ctas, int window, int count) {
    if (early) LaunchStep<true>(gp, ctas, window, count, st);
    else LaunchStep<false>(gp, ctas, window, count, st);
  };
  for (int w = 0; w < 2; ++w) launch(w, all_ctas, nchunks, nchunks);  // warm-up
  CK(cudaStreamSynchronize(st));
  {
    Row r{};
    std::snprintf(r.name, sizeof r.name, "(a) all %d CTAs, DRAM, / %d chunks", all_ctas, nchunks);
    double ms_early = 0;
    time_both(r, [&](bool early) {
      const double ms = Median(TimeEach(st, iters, flush, [&] { launch(early, all_ctas, nchunks, nchunks); }));
      if (early) ms_early = ms;
      return ms * 1e3 / nchunks;
    });
    std::snprintf(rows.back().note, sizeof rows.back().note, "early: %.2f TB/s copied in, %.2f TB/s of distinct images",
                  all_ctas * nchunks * step_bytes / (ms_early * 1e-3) / 1e12,
                  double(N) * sh.H * nchunks * gpu::kImgBytes / (ms_early * 1e-3) / 1e12);
  }
  {
    Row r{};
    std::snprintf(r.name, sizeof r.name, "(b) 1 CTA, DRAM, / %d chunks", nchunks);
    time_both(r, [&](bool early) {
      return Median(TimeEach(st, iters, flush, [&] { launch(early, 1, nchunks, nchunks); })) * 1e3 / nchunks;
    });
  }
  {
    Row r{};
    std::snprintf(r.name, sizeof r.name, "(c) 1 CTA, 8 chunks in L2, / 8");
    time_both(r, [&](bool early) { return Median(TimeWarm(st, iters, [&] { launch(early, 1, 8, 8); })) * 1e3 / 8; });
  }
  const int slots = 2 * prop.multiProcessorCount;
  for (int wc : {8, 4, 2}) {
    if (int64_t(all_ctas) * ((nchunks + wc - 1) / wc) < slots) continue;  // not enough (head, window) pairs
    Row r{};
    std::snprintf(r.name, sizeof r.name, "(d) %d CTAs, windows of %d in L2, / %d", slots, wc, wc);
    std::snprintf(r.note, sizeof r.note, "images %.1f MB against L2 %d MB", slots / 2 * wc * img_mb,
                  prop.l2CacheSize >> 20);
    time_both(r, [&](bool early) {
      return Median(TimeWarm(st, iters, [&] { launch(early, slots, wc, wc); })) * 1e3 / wc;
    });
  }
  {
    Row r{};
    std::snprintf(r.name, sizeof r.name, "(e) 1 CTA, no chunk: launch + state");
    std::snprintf(r.note, sizeof r.note, "microseconds, not a chunk's");
    time_both(r, [&](bool early) { return Median(TimeWarm(st, iters, [&] { launch(early, 1, 8, 0); })) * 1e3; });
  }

  // ---- (f) the preparation beside steps: what step 13's model most depends on ---------------------
  // The preparation kernel (FusedKernel<kV, true>, this program's copy) launched with 2 CTAs an SM
  // (as kda_fwd), with 1 (the CTA scheduler spreads them, one an SM), and with 1 beside a stream of
  // step launches on a second stream that fill the other slot: microseconds a preparation item.
  gpu::Params pp = gp;
  pp.hT = nullptr;
  pp.prep_chunks = N * nchunks;  // (MaxChunks in kda_cuda.cu: every batch row's chunks)
  const double items = double(nchunks) * sh.H * N;
  auto prep = [&](int ctas, cudaStream_t s2) {
    pp.prep_ctas = ctas;
    const cudaError_t e =
        gpu::LaunchWithSmem<gpu::FusedKernel<kV, true>>(unsigned(ctas), gpu::kThreads, gpu::PrepLayout::kBytes, pp, s2);
    CK(e);
  };
  const int sms = prop.multiProcessorCount;
  prep(2 * sms, st);  // warm-up
  CK(cudaStreamSynchronize(st));
  const double prep_pair = Median(TimeEach(st, iters, flush, [&] { prep(2 * sms, st); })) * 1e3 * 2 * sms / items;
  const double prep_solo = Median(TimeEach(st, iters, flush, [&] { prep(sms, st); })) * 1e3 * sms / items;
  cudaStream_t side;
  CK(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking));
  cudaEvent_t go, p0, p1, s1, queued[2];
  for (cudaEvent_t* e : {&go, &p0, &p1, &s1, &queued[0], &queued[1]}) CK(cudaEventCreate(e));
  std::vector<float> beside_ms(iters), step_ms(iters);
  const int step_ctas = std::min(all_ctas, sms);
  for (int i = 0; i < iters; ++i) {
    flush(st, i);
    CK(cudaEventRecord(go, st));
    CK(cudaStreamWaitEvent(side, go));
    CK(cudaEventRecord(p0, st));
    prep(sms, st);  // enqueued first, so that its CTAs spread one an SM before the steps take the rest
    CK(cudaEventRecord(p1, st));
    // Steps over whole sequences, launched again while the preparation runs, one always queued
    // behind the running one, so that the other slot stays busy to its end (only the first is timed).
    LaunchStep<true>(gp, step_ctas, nchunks, nchunks, side);
    CK(cudaEventRecord(s1, side));
    CK(cudaEventRecord(queued[0], side));
    for (int r = 1; r < 64 && cudaEventQuery(p1) == cudaErrorNotReady; ++r) {
      LaunchStep<true>(gp, step_ctas, nchunks, nchunks, side);
      CK(cudaEventRecord(queued[r & 1], side));
      CK(cudaEventSynchronize(queued[(r - 1) & 1]));
    }
    CK(cudaStreamSynchronize(st));
    CK(cudaStreamSynchronize(side));
    CK(cudaEventElapsedTime(&beside_ms[i], p0, p1));
    CK(cudaEventElapsedTime(&step_ms[i], go, s1));
  }
  for (cudaEvent_t e : {go, p0, p1, s1, queued[0], queued[1]}) CK(cudaEventDestroy(e));
  CK(cudaStreamDestroy(side));
  const double prep_beside = Median(beside_ms) * 1e3 * sms / items, step_beside = Median(step_ms) * 1e3 / nchunks;
  std::printf("\n(f) the preparation, us an item (chunk of a head): %.2f with 2 CTAs an SM, %.2f with 1, %.2f with 1 "
              "beside %d step CTAs (whose first launch took %.2f us a chunk step)\n",
              prep_pair, prep_solo, prep_beside, step_ctas, step_beside);
  std::printf("\nus a chunk step (one V half of one chunk of one head), %s on %s:\n", sh.name, prop.name);
  std::printf("| measurement | late load | early load | note |\n|---|---|---|---|\n");
  for (const Row& r : rows) std::printf("| %s | %.2f | %.2f | %s |\n", r.name, r.us[0], r.us[1], r.note);
  for (void* ptr : {(void*)q, (void*)k, (void*)v, (void*)g, (void*)beta, (void*)o, (void*)o2, (void*)A_log,
                    (void*)dt_bias, (void*)h0, (void*)hT, (void*)hT2, ws})
    CK(cudaFree(ptr));
  CK(cudaStreamDestroy(st));
  if (!ok) std::fprintf(stderr, "scan_step_probe: the probe's o or state differ from prep + scan\n");
  return ok ? 0 : 1;
}
