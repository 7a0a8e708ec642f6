// mla/decode.cu: stage 1 of the MLA forward: the split-KV attention kernel (absorbed MLA = MQA over
// a 576-wide latent row per token, V = its first 512 columns).
//
// Grid (m_blocks, P, halves) per schedule.h: CTA (mb, part) runs query rows R in [64 mb, 64 mb + 64) of
// every entry b whose tokens meet the part's range, over the split's keys [t0, t1) of b. An entry
// with one split gets its bf16 o and LSE here; otherwise the split's partial (m, l and O / l in fp16)
// goes to workspace slot b + part for combine.cu. Inputs bf16, accumulation fp32.
//
// Tiles and why:
//   kBlockM = 64 rows (s-major (s, h) pairs of one entry): 4 row groups of 16 = one mma M each.
//   kBlockN = 64 tokens per KV tile: one page, so a tile's rows come from at most 2 pages when the
//     split starts mid-page (rows are fetched one by one through the block table anyway).
//   The KV tile (64 x 576 bf16, 72 KiB) is loaded into shared memory ONCE and serves both QK^T (all
//     576 columns) and PV (its first 512 columns as V, MN-major): V is never loaded again.
//   Shared memory (Layout below): Q 72 KiB + 2 KV buffers 144 KiB + P 8 KiB + 1 KiB of row
//     statistics = 230,400 B of the 232,448 B opt-in (one row group: Q in registers, 3 KV buffers),
//     so one CTA per SM, which is what the schedule assumes. No padding fits; Q, KV and P tiles are
//     in wgmma's 128-byte-swizzled layout (common/wgmma.cuh: nine 64-column blocks of 64 rows), which
//     wgmma reads as K-major (QK^T) and MN-major (V in PV), and ldmatrix without bank conflicts.
//   256 threads = 8 warps over G = 4 row groups of 16 (G = 2 when M <= 32, 1 when M <= 16, so that
//     H16 s_q1 puts every warp on its 16 real rows) and 8 / G column slices: warp w takes rows
//     16 (w % G) .. + 15 and slice c = w / G.
//     QK^T: the warp computes S[16 x 64G/8] for its slice of the tile's tokens (36 k-steps of 16).
//     PV:   the warp accumulates O[16 x 512G/8] for its slice of V's columns (G = 4: 128 fp32
//           registers a thread; the 64 x 512 fp32 output is 32K registers, so it must be split).
//     G = 4 is two warpgroups, c = the warpgroup, and runs both products as wgmma (QK^T m64n32k16,
//     PV m64n256k16, operands from shared memory; B128 H128 went from 1282 to 826 us, 228 -> 353
//     TFLOP/s); G = 2 and 1 use mma.sync (their 16 or 32 rows would waste most of wgmma's 64).
//     The slices of a row meet through shared memory: the probabilities P (sP, bf16, read back as
//     A fragments by every slice) each tile, the row max (sMax) only when a reference moves.
//     Where the parts are long (serving batches, prefill) G = 4 runs the seesaw schedule instead
//     (RunSeesaw below): each warpgroup computes S and P of every other tile, so one's softmax
//     overlaps the other's products (B128 H128 s_q1 541 -> 502 us, prefill 8.66 -> 7.89 ms).
//     Where a part would hold one tile (B1 s_q1), two CTAs share a part of two tiles, each PV over
//     half of V's columns (kHalves, schedule.h's HalvesFor): B1 s_q1 23.4-23.6 -> 22.0 us.
//
// Math per row and tile (the CPU model is split_reference.h; x in base 2: x_t = scale log2(e) q.K_t):
//   x_t = -inf outside [t0, the row's limit = min(t1, VisibleKeys)); M = max_t x_t
//   m' = M > m + 8 ? M : m (a stale reference is exact; it bounds P by 2^8 and spares O's rescale)
//   r = (m' == -inf ? 0 : m');  alpha = (m' == m ? 1 : 2^(m - r));  P_t = 2^(x_t - r)
//   l = alpha l + sum_t P_t;  O = alpha O + P V;  m = m'
//   end: one split: o = O / l, lse = (m + log2 l) ln 2 (l = 0: o = 0, lse = -inf); else (m, l, O / l).
// Rows of a tile past the split's (or the causal) end are zero-filled by cp.async, so NaN in unused
// pages or past S_b never meets a P = 0 (0 * NaN = NaN).
//
// Outside the seesaw, every warp issues, waits and computes, with per-tile __syncthreads.
// Where the time went before the seesaw (thread 0's phase clocks, -DMLA_PHASE_CLOCKS, 2026-12-03;
// the SM clock is 1.74-1.8 GHz at the compute-bound shapes, power-capped; kernels/mla/RESULTS.md):
// at B1 H64 s_q1, of ~21k cycles a CTA, Q's issue and the seqlens ~5k, the segment's prologue ~4.5k, the first
// tile's landing ~1.3k, QK^T ~1.6k, softmax ~1.4k, PV ~1.1k, the epilogue (the partial's store)
// ~5.8k. A tile at B128 H128 (wgmma, TMA): the previous PV and this QK^T ~2.4k on the tensor pipe
// (the barrier and the next tile's issue overlap them), then ~1.5k with it idle (S's swap, softmax,
// PV's issue); at B128 H16 (mma.sync, cp.async), which the loads bound: the next tile's issue ~1.4k,
// QK^T ~0.8k, softmax ~0.4k, PV ~0.8k, landing and barrier ~0.35k.
#include "common/tma.cuh"
#include "common/wgmma.cuh"
#include "mla/mla_gpu.cuh"

#include <type_traits>

// Tuning knobs, overridable by a longhaul search (tasks/mla writes mla_params.h): MLA_QK_UNROLL, the
// unrolling of QK^T's 36 k-steps in the two-row-group (mma.sync) path; MLA_QK_KSPLIT, how the two
// warpgroups of the four-row-group (wgmma) path share QK^T: 1 = by k-steps, then S's halves swap
// through shared memory (B128 H128 s_q1 826 -> 800 us, prefill 12.9 -> 12.3 ms); 0 = by tokens;
// MLA_KV_TMA, whether the wgmma path copies KV tiles by TMA (1) or cp.async (0); MLA_SEESAW, whether
// four row groups with TMA and long parts run the seesaw schedule (1) or the path above (0).
#if __has_include("mla_params.h")
#include "mla_params.h"
#endif
#ifndef MLA_QK_UNROLL
#define MLA_QK_UNROLL 4
#endif
#ifndef MLA_QK_KSPLIT
#define MLA_QK_KSPLIT 1
#endif
#ifndef MLA_KV_TMA
#define MLA_KV_TMA 1
#endif
#ifndef MLA_SEESAW
#define MLA_SEESAW 1
#endif

#define MLA_STR(x) #x
#define MLA_UNROLL(n) _Pragma(MLA_STR(unroll n))

namespace longhaul::mla::gpu {
namespace {
using namespace kernels;  // common/wgmma.cuh

constexpr int kThreads = 256;
constexpr int kChunks = kDimQK * 2 / 16;  // 72 16-byte chunks a row
constexpr int kRowBytes = kDimQK * 2;     // 1152
constexpr int kTileBytes = kBlockN * kRowBytes;  // 73,728
constexpr int kSmemMax = 232448 - 1024;  // sm_90's opt-in shared memory a block, less the 1 KiB alignment
// How far (log2 units) a tile's row max may pass the row's reference before the reference moves (and
// O is rescaled): P <= 2^8 is harmless in bf16 and in fp32 sums, and O's rescale (128 multiplies a
// thread at four row groups) then runs in a row's first tiles only. 0 rescaled whenever the max
// grew: B128 H128 s_q1 771 -> 755 us, prefill 12.1 -> 11.8 ms with 8.
constexpr float kRescaleSlack = 8.f;
constexpr int kBlockBytes = kBlockN * 128;  // a 64-column block of a 64-row tile (common/wgmma.cuh)
static_assert(kBlockM == kBlockN, "Q and KV tiles share one layout");

// Shared memory for G row groups. G = 4, 2: Q (64 rows, 72 KiB), two KV buffers (double buffering:
// tile j+1 loads while tile j computes), P, row statistics: 230,400 B. G = 1: Q (16 rows)
// lives in registers (each warp holds the A fragments of all 36 k-steps: 144 registers), which
// frees room for a third KV buffer: two tiles load while one computes (with it B128 H16 went from
// 431 to 372 us); Q is staged in the third buffer before the tiles need it.
template <int kRowGroups>
struct Layout {
  static constexpr bool kQInRegisters = kRowGroups == 1;
  static constexpr int kStages = kQInRegisters ? 3 : 2;
  static constexpr int kOffKV = kQInRegisters ? 0 : kBlockM * kRowBytes;
  static constexpr int kOffQ = kQInRegisters ? kOffKV + 2 * kTileBytes : 0;
  static constexpr int kOffP = kOffKV + kStages * kTileBytes;
  static constexpr int kOffMax = kOffP + 16 * kRowGroups * kBlockN * 2;
  static constexpr int kOffSum = kOffMax + 2 * kBlockM * 4;
  static constexpr int kBytes = kOffSum + 2 * kBlockM * 4;
  static_assert(kBytes <= kSmemMax, "over the sm_90 opt-in shared memory");
};

// The partial O / l leaves through shared memory (the KV buffers, free by then): rows padded to
// 1040 bytes so that the mma layout's 4-byte writes (8 rows x 4 lanes a warp) hit 32 banks, then one
// 1 KiB bulk copy a row (a CTA's rows are contiguous in the workspace). Direct 4-byte global stores
// took 64 store instructions a thread.
constexpr int kStageRow = kDimV * 2 + 16;
static_assert(kBlockM * kStageRow <= 2 * kTileBytes, "the staged partial must fit the KV buffers");

__device__ __forceinline__ uint32_t Off576(int row, int chunk) { return Sw128Offset(row, chunk, kBlockBytes); }
__device__ __forceinline__ uint32_t OffP(int row, int chunk) { return Sw128Offset(row, chunk, 0); }

// Who copies what (LoadTile, LoadQ): warp w copies rows w, w + 8, ..., lane l the 16-byte chunks
// l, l + 32 and l + 64 (< 72) of each. A warp instruction reads 512 contiguous bytes, and since the
// swizzle of a chunk depends on row % 8 = w only, a lane's offset from its row is fixed: the copies
// need almost no address arithmetic. (One chunk a thread at i = tid + 256 k, with a division and a
// swizzle per chunk, took ~20 instructions a copy, issued between a tile's barrier and its QK^T.)
__device__ __forceinline__ void CopyRow(uint32_t dst_row, const __nv_bfloat16* src_row, bool in, uint32_t lane_off) {
  const int lane = threadIdx.x & 31;
  const __nv_bfloat16* src = in ? src_row + 8 * lane : src_row;
  const int n = in ? 16 : 0;  // 0: zero-fill, read nothing
  CpAsync16(dst_row + lane_off, src, n);
  CpAsync16(dst_row + lane_off + 4 * kBlockBytes, src + (in ? 256 : 0), n);  // chunk + 32: 4 blocks on
  if (lane < kChunks - 64) CpAsync16(dst_row + lane_off + 8 * kBlockBytes, src + (in ? 512 : 0), n);
}
__device__ __forceinline__ uint32_t LaneOffset() {  // chunk `lane`'s offset from the start of a row w + 8 i
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  return Off576(warp, lane) - warp * 128;
}

// Tile [u, u + 64) of entry b into sKV (base address kv_s), rows t >= stop zero-filled. The tile's
// rows lie on at most two pages (u may start mid-page), looked up once: a block-table load per
// 16-byte copy put a dependent load in front of every cp.async.
__device__ __forceinline__ void LoadTile(const Params& p, uint32_t kv_s, int b, int u, int stop) {
  int64_t off0, off1;  // row r's token is at kv + (r < split ? off0 : off1) + r * kv_st[1]
  int split = kBlockN;
  if (p.block_table) {
    const int32_t* pages = p.block_table + b * p.bt_stride;
    const int pg = u / kPageSize;
    split = (pg + 1) * kPageSize - u;
    off0 = pages[pg] * p.kv_st[0] + int64_t(u % kPageSize) * p.kv_st[1];
    off1 = split < stop - u ? pages[pg + 1] * p.kv_st[0] - int64_t(split) * p.kv_st[1] : off0;
  } else {
    off0 = off1 = int64_t(b) * p.kv_st[0] + int64_t(u) * p.kv_st[1];
  }
  const int warp = threadIdx.x >> 5;
  const uint32_t lane_off = LaneOffset();
#pragma unroll
  for (int i = 0; i < kBlockN / 8; ++i) {
    const int row = warp + 8 * i;
    CopyRow(kv_s + row * 128, p.kv + (row < split ? off0 : off1) + row * p.kv_st[1], row < stop - u, lane_off);
  }
}

// Rows [R0, R0 + rows) of entry b's Q into sQ (not committed), rows past M zero-filled; rows is a
// multiple of 8.
__device__ __forceinline__ void LoadQ(const Params& p, uint32_t sQ, int b, int R0, int rows) {
  const int warp = threadIdx.x >> 5;
  const uint32_t lane_off = LaneOffset();
  for (int row = warp; row < rows; row += 8) {
    const int R = R0 + row;
    const bool in = R < p.M;
    CopyRow(sQ + row * 128, in ? p.q + b * p.q_st[0] + (R / p.H) * p.q_st[1] + (R % p.H) * p.q_st[2] : p.q,
            in, lane_off);
  }
}

// A tile into sKV (base address kv_s) by TMA: one box (mla_cuda.cu's map) at row y of z (paged:
// row 0 of page z; contiguous: token y of entry z), completing on bar; one thread issues. Rows past the
// cache arrive as zeros; rows past the split's end arrive as they are (ZeroRows).
__device__ __forceinline__ void LoadTileTma(const Params& p, uint32_t kv_s, uint32_t bar, int y, int z) {
  BarArriveExpectTx(bar, kTileBytes);
  TmaLoad4d(kv_s, &p.kv_map, 0, y, 0, z, bar);
}

// Rows [r0, 64) of a landed tile := 0, so that NaN in unused pages (or past S_b) never meets a P = 0.
// Done by `threads` threads, this one being thread `t` of them.
__device__ __forceinline__ void ZeroRows(uint32_t kv_s, int r0, int t = threadIdx.x, int threads = kThreads) {
  for (int i = t; i < (kBlockN - r0) * kChunks; i += threads) {
    const int row = r0 + i / kChunks;
    asm volatile("st.shared.v4.b32 [%0], {%1,%1,%1,%1};\n" ::"r"(kv_s + Off576(row, i % kChunks)), "r"(0));
  }
}

// Where part `part` starts: the cut of the token line (its total W, schedule.h's CutParts), the
// part's first entry b (the first with cum[b] <= PartStart < cum[b+1], so never an empty one) and
// c0 = cum[b]; b = B when none.
// Every CTA scans the seqlens itself (block scans over chunks of kThreads entries, twice: the
// parts' bounds depend on W), which costs O(B) loads from L2 and spares the pipeline a kernel of
// its own and its launch (~3 us at B1); CTA (0, 0) also writes cum[] for the combine kernel.
struct PartEntry {
  PartCut cut;
  int64_t c0;
  int b;
};

// Inclusive scan of x over the CTA; *total = the CTA's sum. Ends with a barrier, so `scratch` (one
// entry a warp) is free again on return.
__device__ __forceinline__ int64_t BlockScan(int64_t x, int64_t* scratch, int64_t* total) {
  constexpr int kWarps = kThreads / 32;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const int64_t y = __shfl_up_sync(0xffffffffu, x, d);
    if (lane >= d) x += y;
  }
  if (lane == 31) scratch[warp] = x;
  __syncthreads();
  int64_t before = 0, sum = 0;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    before += w < warp ? scratch[w] : 0;
    sum += scratch[w];
  }
  __syncthreads();
  *total = sum;
  return before + x;
}

// kWholeEntries: whether the kernel cuts whole entries where it can (M <= kWholeEntriesMaxRows,
// schedule.h's CutParts); it then publishes `equal` in cum[B + 1] for the combine. Without it the
// code is the page cut's alone (a test left in the wgmma kernels cost prefill 2%, schedule.h).
template <bool kWholeEntries>
__device__ PartEntry FindPartEntry(const Params& p, int part, bool write_cum) {
  if (p.B == 1) {  // no scan: one load (prefill: 8192 CTAs each paid ~5k cycles for the scans)
    const int64_t W = p.seqlens[0];
    if (write_cum && threadIdx.x == 0) p.cum[0] = 0, p.cum[1] = W;
    __syncthreads();  // as the scans' barriers: publishes the tile barriers' initialisation
    const PartCut cut = CutParts(W, p.parts, 1, 0);
    return {cut, 0, part < cut.parts ? 0 : 1};
  }
  __shared__ int64_t scratch[kThreads / 32];
  __shared__ int64_t found_c0;
  __shared__ int found_b;
  if (threadIdx.x == 0) found_c0 = 0, found_b = p.B;  // none; BlockScan's barriers order this first
  // Pass 1: W, and whether every entry has entry 0's length. The first chunk's scan is kept, so B
  // <= kThreads reads the seqlens once.
  const int64_t s0 = kWholeEntries ? p.seqlens[0] : 0;
  const int64_t x0 = int(threadIdx.x) < p.B ? p.seqlens[threadIdx.x] : 0;
  bool same = kWholeEntries && (int(threadIdx.x) >= p.B || x0 == s0);
  int64_t chunk0, W;
  const int64_t incl0 = BlockScan(x0, scratch, &chunk0);
  W = chunk0;
  for (int base = kThreads; base < p.B; base += kThreads) {
    const int b = base + int(threadIdx.x);
    const int64_t x = b < p.B ? p.seqlens[b] : 0;
    if (kWholeEntries) same = same && (b >= p.B || x == s0);
    int64_t chunk;
    BlockScan(x, scratch, &chunk);
    W += chunk;
  }
  const int64_t equal = kWholeEntries && __syncthreads_and(same) ? s0 : 0;
  if (write_cum && threadIdx.x == 0) {
    p.cum[0] = 0;
    if (kWholeEntries) p.cum[p.B + 1] = equal;
  }
  // Pass 2: the entry whose token range holds the part's start.
  const PartCut cut = CutParts(W, p.parts, p.B, equal);
  const int64_t start = PartStart(part, cut);
  int64_t carry = 0;
  for (int base = 0; base < p.B && (write_cum || carry <= start); base += kThreads) {
    const int b = base + int(threadIdx.x);
    int64_t x = x0, incl = incl0, chunk = chunk0;
    if (base > 0) {
      x = b < p.B ? p.seqlens[b] : 0;
      incl = BlockScan(x, scratch, &chunk);
    }
    incl += carry;
    if (b < p.B) {
      if (incl - x <= start && start < incl) found_c0 = incl - x, found_b = b;
      if (write_cum) p.cum[b + 1] = incl;
    }
    carry += chunk;
  }
  __syncthreads();
  return {cut, found_c0, found_b};
}

// Diagnostics, compiled in only with -DMLA_PHASE_CLOCKS (build_gpu.sh with NVCC_EXTRA; then bench
// with MLA_PROFILE=1 sets p.prof): even switched off at run time, the marks cost 2-3% at every
// shape (the compiler cannot schedule across them). Thread 0's clock at each boundary of
// mla_gpu.cuh's Phase list, summed in shared memory (no registers held for it), added to p.prof at
// exit. A segment's prologue is Q and the first tiles' issue; a tile's landing is thread 0's wait
// for its copies, the barrier after it the other warps; PV is its issue (thread 0 does not wait for
// its MMAs); the epilogue is the row sums, then o or the partial. Counts are thread 0's: its waits
// absorb the other warps' lag. The last counter of the shared array holds the previous clock.
constexpr int kTick = kCtas;
#ifdef MLA_PHASE_CLOCKS
constexpr bool kPhaseClocks = true;
#else
constexpr bool kPhaseClocks = false;
#endif
__device__ __forceinline__ void Mark(const Params& p, unsigned long long* prof, Phase phase) {
  if (kPhaseClocks && p.prof && threadIdx.x == 0) {
    const unsigned long long now = clock64();
    prof[phase] += now - prof[kTick];
    prof[kTick] = now;
  }
}
__device__ __forceinline__ void ReportProfile(const Params& p, unsigned long long* prof) {
  if (kPhaseClocks && p.prof && threadIdx.x == 0) {
    for (int i = 0; i < kCtas; ++i) atomicAdd(p.prof + i, prof[i]);
    atomicAdd(p.prof + kCtas, 1ull);
    for (int i = kSeesawClocks; i < kPhaseCounters; ++i) atomicAdd(p.prof + i, prof[i]);
  }
}

// The base-2 reference that P and O are taken against: m, or 0 for a row with no key yet.
__device__ __forceinline__ float Ref(float m) { return m == -INFINITY ? 0.f : m; }
// The rows' reference m := mn, O and l rescaled to it (O is not in flight); O's multiplies only
// where a row of the warp moved.
template <int N>
__device__ __forceinline__ void MoveReference(float (&o)[N][4], float (&m)[2], float (&l)[2], const float (&mn)[2]) {
  float alpha[2];
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    alpha[k] = mn[k] == m[k] ? 1.f : exp2f(m[k] - Ref(mn[k]));
    m[k] = mn[k];
    l[k] *= alpha[k];
  }
  if (__any_sync(0xffffffffu, alpha[0] != 1.f || alpha[1] != 1.f)) {
#pragma unroll
    for (int n = 0; n < N; ++n) o[n][0] *= alpha[0], o[n][1] *= alpha[0], o[n][2] *= alpha[1], o[n][3] *= alpha[1];
  }
}

// S of this lane's columns of n8 tiles [0, N) over tokens [u, u + 8N) to base 2, -inf outside
// [t0, lim[row]) (lim[0] for row lane / 4, lim[1] for row lane / 4 + 8), and the two rows' maxima
// over the quad.
template <int N>
__device__ __forceinline__ void ScaleMask(float (&s)[N][4], int u, int t0, const int (&lim)[2], float scale_log2,
                                          float (&mx)[2]) {
  const int lane = threadIdx.x & 31;
  mx[0] = mx[1] = -INFINITY;
  if (u >= t0 && u + 8 * N <= min(lim[0], lim[1])) {  // all of the lane's tokens
#pragma unroll
    for (int n = 0; n < N; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        s[n][e] *= scale_log2;
        mx[e >> 1] = fmaxf(mx[e >> 1], s[n][e]);
      }
  } else {
#pragma unroll
    for (int n = 0; n < N; ++n)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int t = u + 8 * n + 2 * (lane & 3) + (e & 1);
        const float x = t >= t0 && t < lim[e >> 1] ? s[n][e] * scale_log2 : -INFINITY;
        s[n][e] = x;
        mx[e >> 1] = fmaxf(mx[e >> 1], x);
      }
  }
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    mx[k] = fmaxf(mx[k], __shfl_xor_sync(0xffffffffu, mx[k], 1));
    mx[k] = fmaxf(mx[k], __shfl_xor_sync(0xffffffffu, mx[k], 2));
  }
}

// ---- the seesaw schedule (four row groups, TMA tiles) -------------------------------------------
// FlashMLA's idea (its deep-dive, 2025-04), our code: the warpgroups take turns on the tensor pipe.
// Tiles come in pairs, A = 2k in buffer 0 and B = 2k + 1 in buffer 1. Warpgroup 0 computes S and P
// of A, warpgroup 1 those of B; each accumulates its half of O's columns (0 keeps 0..255, 1 keeps
// 256..511) from both tiles:
//   WG0: S_A = Q K_A^T; softmax -> P_A (registers and A's rope block); O_L += P_A V_A,L;
//        then (P_B from sP) O_L += P_B V_B,L
//   WG1: S_B = Q K_B^T; softmax -> P_B (registers and sP);  O_R += P_A V_A,R;  O_R += P_B V_B,R
// so that one warpgroup's softmax runs while the other's products keep the tensor pipe busy. The
// rows' reference m passes between them through shared memory: WG0 sets it from A (m only moves
// past the slack, as in the other path), WG1 from B on top of that; WG0 catches up before P_B, and
// WG1 rescales P_A in place in the rare tile where it moved the reference past A's.
// Each buffer reloads in two halves, each as soon as its last reader is done, by a thread of that
// reader: blocks 0-3 (V's left half: only WG0's products read them after S) by WG0, blocks 4-8
// (V's right half and the rope block, which holds P_A) by WG1. Four mbarriers: (buffer, half).
// Named barriers: kBarM (WG0 -> WG1: m after A, published before P_A is made, so that B's softmax
// runs beside A's instead of after it: B128 H128 s_q1 505-510 -> 496-501 us), kBarA (WG0 -> WG1:
// P_A), kBarB (WG1 -> WG0: P_B and m after B), kBarQ (WG0 -> WG1: S_A is issued, so that S_A runs
// before S_B and WG0's softmax beside S_B: prefill 8.22 -> 7.89 ms), kBarWg + c (warpgroup c alone).
// Where a pair's time goes (phase clocks, B128 H128 s_q1, ~6.8k cycles a pair against ~4.35k of
// tensor work at the peak): WG1 waits ~2.2k cycles for the half of its tile that it issued itself
// ~0.5k before (the buffer frees only when the previous pair's PV is done), and each TMA issue costs
// its thread ~0.3k. Rejected, each measured: a box and a barrier a block (565 us: the issues cost
// more than the earlier start gains), an L2 prefetch of each half a pair ahead (522 us), WG1's
// PV_B before PV_A so that buffer 1 reloads sooner (520 us, 68 bytes spilled; WG0 becomes the
// chain), S_A issued before waiting for the previous PV_B (541 us; with the wait after S_A's issue,
// ptxas serialises the wgmmas, C7514), prefetch.tensormap (no change).
// compute-sanitizer racecheck flags the hand-offs of the references (and the epilogue's sSum) as
// races. The same sequence of barriers with plain shared-memory traffic in place of the tiles is
// clean, also with bulk copies waited for on mbarriers (common/racecheck_probe.cu, ways 5 and 6), so
// the reports come with something the probe lacks (wgmma's reads, the tensor copies, the proxy
// fences); unexplained (kernels/mla/RESULTS.md). memcheck and synccheck are clean, gpu_check passes.
enum : int { kBarA = 1, kBarB = 2, kBarWg = 3, kBarQ = 5, kBarM = 6 };
constexpr int64_t kSeesawMinTokens = 8 * kBlockN;
template <int kId, int kThreadCount>
__device__ __forceinline__ void NamedArrive() {
  asm volatile("bar.arrive %0, %1;\n" ::"n"(kId), "n"(kThreadCount) : "memory");
}
template <int kId, int kThreadCount>
__device__ __forceinline__ void NamedSync() {
  asm volatile("bar.sync %0, %1;\n" ::"n"(kId), "n"(kThreadCount) : "memory");
}
// A barrier over kThreadCount threads that also returns whether x held in any of them.
template <int kId, int kThreadCount>
__device__ __forceinline__ bool NamedSyncAny(bool x) {
  uint32_t r;
  asm volatile(
      "{\n.reg .pred p, q;\nsetp.ne.u32 p, %1, 0;\nbar.red.or.pred q, %2, %3, p;\nselp.u32 %0, 1, 0, q;\n}\n"
      : "=r"(r)
      : "r"(uint32_t(x)), "n"(kId), "n"(kThreadCount)
      : "memory");
  return r != 0;
}

struct SeesawSegment {
  uint32_t sQ, sKV, sP, bar0;  // bar0: the four tile barriers, (buffer, half) at 8 (2 buffer + half)
  float* sM;                   // [2][64] the rows' reference after warpgroup c's tile, at sM + 64 c
  unsigned long long* prof;    // the phase clocks (shared memory)
  const int32_t* pages;        // the page of each tile (paged), or null (contiguous)
  int b, tile0, n_tiles, stop, t0, lim[2];
};

// Hides x's value from the compiler: the operand descriptors, made from it, then stay inside the
// loop instead of ~150 registers of loop-invariant descriptors (which spilled).
__device__ __forceinline__ void Opaque(uint32_t& x) { asm volatile("" : "+r"(x)); }

// Tile i's half (0: blocks 0-3, 1: blocks 4-8) into buffer i % 2; one thread.
__device__ __forceinline__ void LoadHalf(const Params& p, const SeesawSegment& g, int i, int half, int page) {
  const uint32_t bar = g.bar0 + 8 * (2 * (i & 1) + half);
  BarArriveExpectTx(bar, (half ? 5 : 4) * kBlockBytes);
  TmaLoad4d(g.sKV + (i & 1) * kTileBytes + 4 * half * kBlockBytes, half ? &p.kv_map_hi : &p.kv_map_lo, 0,
            g.pages ? 0 : g.tile0 + i * kBlockN, 4 * half, g.pages ? page : g.b, bar);
}

// The pairs of one segment. o, m, l: this warpgroup's half of O, its rows' reference and row sums
// (over its own tiles; the epilogue adds the two warpgroups' sums, both at the final reference).
// A copy's issue holds its thread until the copy engine has taken the copies before it (phase
// clocks, 2026-12-07: WG1 issuing B's left half right after its right half waited ~2.5k cycles), so
// where an issue sits decides which product waits. kLeftAfterPv (one part: prefill, whose m-blocks
// all read one cache, so the tiles come from L2): WG0 issues the next A's left half after
// O_L += P_B V_B,L, not before it, and the product no longer waits: prefill -2 to -4% (H100, two
// calls). Where the tiles come from DRAM (serving batches), so issued the half lands late for the
// next S_A: B128 H128 s_q1 +4%, s_q2 +8%, so there the order stays. Also measured there and not kept:
// WG1 issuing B's left half (+12%: its issue waited behind its right half's) and WG0 issuing it after
// S_A (+10%: it landed ~0.6k cycles later for S_B); prefill gained 1-2% from the latter.
template <bool kLeftAfterPv>
__device__ __forceinline__ void RunSeesaw(const Params& p, const SeesawSegment& g, float (&o)[32][4], float (&m)[2],
                                          float (&l)[2], uint32_t& parities) {
  const int tid = threadIdx.x, lane = tid & 31, wt = tid & 127;
  // The warpgroup, through a shuffle so that the compiler sees it uniform across the warp: wgmma in
  // a branch it cannot prove uniform is serialised (ptxas C7520).
  const int c = __shfl_sync(0xffffffffu, tid >> 7, 0);
  const int r_[2] = {16 * (wt >> 5) + (lane >> 2), 16 * (wt >> 5) + (lane >> 2) + 8};
  const int n = g.n_tiles;
  const bool issuer = wt == 0;  // thread 0 loads the left halves, thread 128 the right ones
  int page_ahead = 0;           // (issuer, paged) the page of the next tile this thread loads
  // (Diagnostics, -DMLA_PHASE_CLOCKS: this warpgroup's clocks, its issuer's time since the last mark.)
  unsigned long long clock_prev = 0;
  const bool clocked = kPhaseClocks && p.prof && issuer;
  auto mark = [&](SeesawPhase phase) {
    if (clocked) {
      const unsigned long long now = clock64();
      g.prof[kSeesawClocks + kSwPhases * c + phase] += now - clock_prev;
      clock_prev = now;
    }
  };
  auto count_pair = [&] {
    if (clocked) ++g.prof[kSeesawClocks + kSwPhases * c + kSwPairs];
  };
  if (issuer) {
    for (int i = 0; i < 2 && i < n; ++i) LoadHalf(p, g, i, c, g.pages ? g.pages[i] : 0);
    if (g.pages && n > 2) page_ahead = g.pages[2];
  }
  CpAsyncWaitAll();  // Q, copied by every thread
  FenceProxyAsync();
  __syncthreads();
  auto load = [&](int i) {  // tiles in ascending order from 2, this warpgroup's half
    if (!issuer || i >= n) return;
    LoadHalf(p, g, i, c, page_ahead);
    if (g.pages && i + 1 < n) page_ahead = g.pages[i + 1];
  };
  auto wait = [&](int buffer, int half) {
    const int i = 2 * buffer + half;
    BarWait(g.bar0 + 8 * i, (parities >> i) & 1);
    parities ^= 1u << i;
  };
  // S = Q K^T of the tile in `buf`: k-steps of the first half to land first.
  auto qk = [&](float (&s)[8][4], uint32_t buf, int u, int buffer) {
    const int first_half = c, second_half = 1 - c;  // WG0 starts on blocks 0-3, WG1 on 4-8
    const bool tail = u + kBlockN > g.stop;
    wait(buffer, first_half);
    mark(kSwLand);
    if (tail) {  // rows past the split's end := 0 (NaN in unused pages must not meet P = 0)
      wait(buffer, second_half);
      ZeroRows(buf, g.stop - u, wt, 128);
      FenceProxyAsync();
      if (c == 0) NamedSync<kBarWg, 128>();
      else NamedSync<kBarWg + 1, 128>();
    }
    // WG0: k-steps 0-15 (blocks 0-3), then 16-35; WG1: 16-35 (blocks 4-8), then 0-15.
    uint32_t q_base = g.sQ, k_base = buf;
    Opaque(q_base), Opaque(k_base);
    auto steps = [&](int from, auto count, bool first) {
#pragma unroll
      for (int ks = 0; ks < decltype(count)::value; ++ks) {
        const uint32_t k_off = Sw128KStep(from + ks, kBlockBytes);
        Wgmma64x64(s, Sw128Desc(q_base + k_off, 16, 1024), Sw128Desc(k_base + k_off, 16, 1024), !first || ks > 0);
      }
    };
    using Steps16 = std::integral_constant<int, 16>;
    using Steps20 = std::integral_constant<int, 20>;
    WgmmaFence();
    if (c == 0) steps(0, Steps16{}, true);
    else steps(16, Steps20{}, true);
    mark(kSwQK);
    if (!tail) wait(buffer, second_half);
    mark(kSwLand2);
    WgmmaFence();  // (ptxas puts one here anyway, after the wait's branches, and says so: C7519)
    if (c == 0) steps(16, Steps20{}, false);
    else steps(0, Steps16{}, false);
    WgmmaCommit();
  };
  // P = 2^(x - m) into dst (a 64 x 64 Sw128 block) and pf (PV's A fragments), its sums into l.
  auto write_p = [&](const float (&s)[8][4], uint32_t dst, uint32_t (&pf)[4][4]) {
    const float ref0 = Ref(m[0]), ref1 = Ref(m[1]);
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      const float p0 = exp2f(s[i][0] - ref0), p1 = exp2f(s[i][1] - ref0);
      const float p2 = exp2f(s[i][2] - ref1), p3 = exp2f(s[i][3] - ref1);
      l[0] += p0 + p1, l[1] += p2 + p3;
      const uint32_t lo = PackBf16(p0, p1), hi = PackBf16(p2, p3), at = (lane & 3) * 4;
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(dst + OffP(r_[0], i) + at), "r"(lo));
      asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(dst + OffP(r_[1], i) + at), "r"(hi));
      pf[i / 2][2 * (i % 2)] = lo, pf[i / 2][2 * (i % 2) + 1] = hi;
    }
    FenceProxyAsync();  // st.shared -> the other warpgroup's wgmma reads
  };
  // The rows' new reference, for the other warpgroup. (One array a writer: in WG1 a lane rewrote the
  // row its quad had just read.)
  auto publish = [&](const float (&mn)[2]) {
    if ((lane & 3) == 0) g.sM[64 * c + r_[0]] = mn[0], g.sM[64 * c + r_[1]] = mn[1];
  };
  // V's half c of the tile in buf, k-step kk (16 tokens), MN-major.
  auto v_desc = [&](uint32_t buf, int kk) {
    Opaque(buf);
    return Sw128Desc(buf + 4 * c * kBlockBytes + kk * 16 * 128, kBlockBytes, 1024);
  };
  auto p_desc = [&](uint32_t base, int kk) {  // P (K-major, 64 x 64 in one block), k-step kk
    Opaque(base);
    return Sw128Desc(base + kk * 32, 16, 1024);
  };

  const uint32_t bufA = g.sKV, bufB = g.sKV + kTileBytes, ropeA = bufA + 8 * kBlockBytes;
  uint32_t pf[4][4];
  // (Each branch ends with its accumulators waited for: a merge of in-flight accumulators counts as
  // reading them, C7514.)
  if (clocked) clock_prev = clock64();
  if (c == 0) {
    for (int k = 0; 2 * k < n; ++k) {
      const int A = 2 * k, uA = g.tile0 + A * kBlockN;
      const bool hasB = A + 1 < n;
      float s[8][4];
      // O_L += P_B V_B,L of the previous pair is done: buffer 1's left half is free. (Waiting for it
      // after S_A's issue, with S_A in flight, made ptxas serialise every wgmma, C7514.)
      WgmmaWait<0>();
      FenceOperands(o);
      mark(kSwDrain);
      if (k > 0) load(A + 1);
      mark(kSwLoad);
      qk(s, bufA, uA, 0);
      mark(kSwQK);
      NamedArrive<kBarQ, 256>();
      WgmmaWait<0>();
      FenceOperands(s);
      mark(kSwSWait);
      float mx[2], mn[2];
      ScaleMask(s, uA, g.t0, g.lim, p.scale_log2, mx);
#pragma unroll
      for (int k2 = 0; k2 < 2; ++k2) mn[k2] = mx[k2] > m[k2] + kRescaleSlack ? mx[k2] : m[k2];
      publish(mn);
      NamedArrive<kBarM, 256>();  // B's softmax needs A's reference, not P_A
      MoveReference(o, m, l, mn);
      write_p(s, ropeA, pf);
      NamedArrive<kBarA, 256>();
      mark(kSwSoftmax);
      WgmmaFence();
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) Wgmma64x256RsMnB(o, pf[kk], v_desc(bufA, kk), 1);
      WgmmaCommit();
      mark(kSwPV);
      if (!hasB) break;
      NamedSync<kBarB, 256>();
      mark(kSwBarrier);
      wait(1, 0);  // (this thread's view of B's left half)
      // O_L += P_A V_A,L ran beside B's softmax: done by now, and buffer 0's left half is free.
      WgmmaWait<0>();
      FenceOperands(o);
      FenceOperands(pf);
      mark(kSwPVWait);
      if (!kLeftAfterPv) load(A + 2);
      const float mB[2] = {g.sM[64 + r_[0]], g.sM[64 + r_[1]]};
      MoveReference(o, m, l, mB);  // (where WG1 moved a reference past A's: rare)
      mark(kSwLoad);
      WgmmaFence();
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) Wgmma64x256MnB(o, p_desc(g.sP, kk), v_desc(bufB, kk), 1);
      WgmmaCommit();
      mark(kSwPV);
      if (kLeftAfterPv) load(A + 2);  // (its issue holds the thread while O_L += P_B V_B,L runs)
      count_pair();
    }
    WgmmaWait<0>();
    FenceOperands(o);
    FenceOperands(pf);
  } else {
    for (int k = 0; 2 * k < n; ++k) {
      const int A = 2 * k, uB = g.tile0 + (A + 1) * kBlockN;
      const bool hasB = A + 1 < n;
      float s[8][4];
      WgmmaWait<0>();  // O_R += P_B V_B,R of the previous pair is done: buffer 1's right half is free
      FenceOperands(o);
      FenceOperands(pf);
      mark(kSwDrain);
      if (k > 0) load(A + 1);
      mark(kSwLoad);
      NamedSync<kBarQ, 256>();
      mark(kSwBarrier);
      if (hasB) qk(s, bufB, uB, 1);
      mark(kSwQK);
      WgmmaWait<0>();
      FenceOperands(s);
      mark(kSwSWait);
      float mx[2];
      if (hasB) ScaleMask(s, uB, g.t0, g.lim, p.scale_log2, mx);
      NamedSync<kBarM, 256>();
      mark(kSwBarrier);
      const float mA[2] = {g.sM[r_[0]], g.sM[r_[1]]};
      float mn[2] = {mA[0], mA[1]};
      if (hasB) {
#pragma unroll
        for (int k2 = 0; k2 < 2; ++k2) mn[k2] = mx[k2] > mA[k2] + kRescaleSlack ? mx[k2] : mA[k2];
        publish(mn);
      }
      MoveReference(o, m, l, mn);
      if (hasB) {
        write_p(s, g.sP, pf);
        NamedArrive<kBarB, 256>();
      }
      NamedSync<kBarA, 256>();  // P_A is in A's rope block
      wait(0, 1);  // (this thread's view of A's right half)
      // P_A was made with A's reference; where B moved it, P_A *= 2^(ref_A - ref) in place (rare).
      const bool fix = mn[0] != mA[0] || mn[1] != mA[1];
      if (NamedSyncAny<kBarWg + 1, 128>(fix)) {
        if (fix) {
#pragma unroll
          for (int k2 = 0; k2 < 2; ++k2) {
            const float f = exp2f(Ref(mA[k2]) - Ref(mn[k2]));
#pragma unroll
            for (int i = 0; i < 8; ++i) {
              const uint32_t at = ropeA + OffP(r_[k2], i) + (lane & 3) * 4;
              uint32_t v;
              asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(at));
              const float2 x = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&v));
              asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(at), "r"(PackBf16(x.x * f, x.y * f)));
            }
          }
        }
        FenceProxyAsync();
        NamedSync<kBarWg + 1, 128>();
      }
      mark(kSwSoftmax);
      WgmmaFence();
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) Wgmma64x256MnB(o, p_desc(ropeA, kk), v_desc(bufA, kk), 1);
      WgmmaCommit();
      if (hasB) {
        WgmmaFence();  // (pf)
#pragma unroll
        for (int kk = 0; kk < 4; ++kk) Wgmma64x256RsMnB(o, pf[kk], v_desc(bufB, kk), 1);
        WgmmaCommit();
      }
      mark(kSwPV);
      WgmmaWait<1>();  // O_R += P_A V_A,R is done (or, without B, the last pair: nothing to load)
      mark(kSwPVWait);
      load(A + 2);  // buffer 0's right half is free
      mark(kSwLoad);
      count_pair();
    }
    WgmmaWait<0>();
    FenceOperands(o);
    FenceOperands(pf);
  }
}

// kRowGroups: the 16-row groups a CTA computes (1, 2 or 4; fewer than 4 only when M <= 16 *
// kRowGroups, so there is one m-block). The 8 warps split the rows into kRowGroups and the tokens (QK^T) and V
// columns (PV) into 8 / kRowGroups: at H16 s_q1 every warp works on the 16 real rows, where the
// 64-row layout left 6 of 8 warps idle and put the other two on one scheduler.
// kSeesaw (four row groups, the cache's TMA maps valid): every segment runs the seesaw schedule,
// and the other paths are compiled out (with them in the same kernel the registers spilled).
// kHalves (2: four row groups, not the seesaw; schedule.h's HalvesFor says where): the CTA computes
// PV and writes only V columns [256 z, 256 z + 256) of its rows, z = blockIdx.z, beside the CTA
// that has the other half; both compute the same S, P, m and l (the one with z = 0 writes m and l,
// or the LSE, and the combine's cum), so the combine sees whole partials as without halves.
template <int kRowGroups, bool kSeesaw, int kHalves = 1, bool kLeftAfterPv = false, bool kQPairs = false>
__global__ void __launch_bounds__(kThreads, 1) DecodeKernel(const __grid_constant__ Params p) {
  constexpr int kRows = 16 * kRowGroups;
  constexpr int kSplit = 8 / kRowGroups;     // warps sharing a row group
  constexpr int kTokTiles = 8 / kSplit;      // n8 tiles of tokens a warp computes in QK^T (64 / kSplit tokens)
  constexpr int kOutTiles = 64 / kSplit / kHalves;  // n8 tiles of V columns a warp accumulates
  constexpr int kCols = kDimV / kHalves;     // the CTA's V columns
  static_assert(kRowGroups == 1 || kRowGroups == 2 || kRowGroups == 4, "1, 2 or 4 row groups");
  static_assert(kHalves == 1 || (kHalves == 2 && kRowGroups == 4 && !kSeesaw), "halves: the plain wgmma path");
  static_assert(kSplit * kRows * 4 <= 2 * kBlockM * 4, "sMax / sSum hold kSplit x kRows floats");
  using L = Layout<kRowGroups>;
  constexpr int kStages = L::kStages;
  // Four row groups (64 rows): the two warpgroups run QK^T and PV as wgmma (warpgroup c = warp / 4
  // holds the same rows, tokens and columns as the mma.sync layout's slice c).
  constexpr bool kWgmma = kRowGroups == 4;
  static_assert(!kSeesaw || kWgmma, "the seesaw is for four row groups");
  __shared__ unsigned long long prof[kPhaseCounters];
  // TMA tiles land on tile_bars[i % kStages] (the seesaw: on (buffer, half), four)
  constexpr int kBars = 4;
  static_assert(kStages <= kBars, "a barrier a stage");
  __shared__ __align__(8) uint64_t tile_bars[kBars];
  const uint32_t bar0 = SmemAddr(tile_bars);
  if (threadIdx.x == 0) {
    for (int i = 0; i < kBars; ++i) BarInit(bar0 + 8 * i, 1);
    BarInitFence();  // FindPartEntry's barriers publish it
  }
  uint32_t parities = 0;  // bit i: the phase of tile_bars[i] to wait for next
  if (kPhaseClocks && p.prof && threadIdx.x == 0) {
    for (int i = 0; i < kPhaseCounters; ++i) prof[i] = 0;
    prof[kTick] = clock64();
  }
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  uint8_t* smem = smem_raw + ((1024 - SmemAddr(smem_raw) % 1024) % 1024);  // the swizzle's alignment
  const uint32_t s_base = SmemAddr(smem);
  const uint32_t sQ = s_base + L::kOffQ, sP = s_base + L::kOffP, sKV = s_base + L::kOffKV;
  float* sMax = reinterpret_cast<float*>(smem + L::kOffMax);  // [kSplit][kRows]
  float* sSum = reinterpret_cast<float*>(smem + L::kOffSum);  // [kSplit][kRows]
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = warp % kRowGroups, c = warp / kRowGroups;
  // m-blocks last to first: with causal s_q > 1 the last rows see the most keys, so the longest CTAs
  // start first and the grid's tail is short ones (prefill: 1 to 128 tiles a CTA).
  const int mb = gridDim.x - 1 - blockIdx.x, part = blockIdx.y, half = kHalves > 1 ? blockIdx.z : 0;

  // With one entry, every part starts in entry 0: its Q rows load while the CTA reads the seqlens.
  // kQPairs (launched where p.q_pairs: B = 1), two CTAs that read the same Q rows (the halves of a
  // part, else two parts of an m-block) are a cluster, and each copies half of Q into both
  // (multicast): all parts read their m-block's Q, ~74 KB, and L2 then serves it half as often. A
  // template argument, so that the kernels without pairs carry none of its code (a build with the
  // test at run time was 0.8 us slower at B1 s_q4, which pairs nothing).
  const int R0 = mb * kBlockM;
  static_assert(!kQPairs || (kWgmma && !kSeesaw), "Q's pairs: the plain wgmma path");
  constexpr int kQBar = kStages;  // Q's barrier (kQPairs), after the tiles'
  static_assert(!kQPairs || kQBar < kBars, "a barrier for Q");
  if constexpr (kQPairs) {
    ClusterSync();  // the peer's barriers are initialised before its half of Q reaches them
    if (threadIdx.x == 0) {
      const int rank = kHalves == 2 ? half : int(blockIdx.y & 1);  // in the cluster
      BarArriveExpectTx(bar0 + 8 * kQBar, kBlockM * kRowBytes);
      TmaLoad4dMulticast(sQ + 4 * rank * kBlockBytes, rank ? &p.q_map_hi : &p.q_map_lo, 0, R0, 4 * rank, 0,
                         bar0 + 8 * kQBar, 0b11);
    }
  } else if (p.B == 1) {
    LoadQ(p, sQ, 0, R0, kRows);
  }
  // With one entry, the part's pages are read from the block table's row once the seqlens have
  // arrived: the row's lines go to L2 now (a line a CTA, the grid covering up to 64 of them, none
  // past the row's max_pages entries, where the allocation may end), so that that read waits for L2
  // and not for DRAM after the seqlens' own wait (H100, with the tile below: B1 s_q1 22.66 -> 22.29
  // us, means of eight runs; s_q2 and s_q4 unchanged).
  if (p.B == 1 && p.block_table && threadIdx.x == 0) {
    const int64_t row_lines = (int64_t(p.max_pages) * 4 + 127) / 128, lines = row_lines < 64 ? row_lines : 64;
    const int64_t cta = blockIdx.x + int64_t(gridDim.x) * (blockIdx.y + int64_t(gridDim.y) * blockIdx.z);
    asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p.block_table + (cta % lines) * 32));
  }
  constexpr bool kWholeEntries = kRows <= kWholeEntriesMaxRows;
  const PartEntry first = FindPartEntry<kWholeEntries>(p, part, mb == 0 && part == 0 && half == 0);
  Mark(p, prof, kScan);
  const PartCut& cut = first.cut;
  if (part >= cut.parts) {
    CpAsyncCommit();
    CpAsyncWaitAll();  // no copy into shared memory outlives the CTA
    if constexpr (kQPairs) BarWait(bar0 + 8 * kQBar, 0);
    ReportProfile(p, prof);
    return;
  }
  const int64_t start = PartStart(part, cut), end = PartStart(part + 1, cut);

  const int rows_valid = min(kBlockM, p.M - R0);
  const bool active = 16 * g < rows_valid;  // the warp's rows hold real queries
  const int r_[2] = {16 * g + (lane >> 2), 16 * g + (lane >> 2) + 8};

  int64_t c1 = first.c0;
  for (int b = first.b; b < p.B; ++b) {
    const int64_t c0 = c1;
    c1 = c0 + p.seqlens[b];
    if (c0 >= end) break;
    if (c1 == c0) continue;
    const int S_b = int(c1 - c0);
    const int t0 = int(max(start, c0) - c0), t1 = int(min(end, c1) - c0);
    const int nsplit = SplitsOf(c0, c1, cut);
    // The rows' key limits; the CTA's last useful key (the last row sees the most: s ascends in R).
    int lim[2];
    for (int j = 0; j < 2; ++j) {
      const int R = R0 + r_[j];
      lim[j] = R < p.M ? min(t1, VisibleKeys(S_b, p.s_q, R / p.H, p.causal)) : t0;
    }
    const int stop = min(t1, VisibleKeys(S_b, p.s_q, (R0 + rows_valid - 1) / p.H, p.causal));
    // Tiles [tile0 + 64 i, + 64). The wgmma path copies them by TMA (one thread issues one box
    // copy a tile, where cp.async takes 18 instructions from every thread: B128 H128 789 -> 755 us
    // with nine boxes a tile, prefill 12.0 -> 11.8 ms); the mma.sync paths keep cp.async, since at
    // B128 H16, which the loads bound, the boxes land later than cp.async's copies (316 -> 341 us
    // with nine boxes, 337-341 with one). A paged TMA tile must start on a page: a segment that
    // starts mid-page then computes from its page's start, the rows before t0 masked, which is
    // worth it when that adds no tile or the segment is long (serving shapes: ~124 tiles).
    int tile0 = t0;
    int n_tiles = stop > t0 ? (stop - t0 + kBlockN - 1) / kBlockN : 0;
    bool tma = kWgmma && MLA_KV_TMA && p.kv_tma && n_tiles > 0;
    if (tma && p.block_table) {
      const int aligned0 = t0 / kPageSize * kPageSize;
      const int aligned_tiles = (stop - aligned0 + kBlockN - 1) / kBlockN;
      // (The seesaw always starts on the page: its pair of tiles runs side by side.)
      if (kSeesaw || aligned_tiles == n_tiles || n_tiles >= 8) tile0 = aligned0, n_tiles = aligned_tiles;
      else tma = false;
    }

    __syncthreads();  // the previous segment is done with every buffer
    if (p.B > 1) LoadQ(p, sQ, b, R0, kRows);  // (B = 1: issued above)
    if (L::kQInRegisters || tma || kSeesaw) CpAsyncCommit();  // Q's own group (else it joins tile 0's)
    const int32_t* pages = p.block_table ? p.block_table + b * p.bt_stride + tile0 / kPageSize : nullptr;
    float m[2] = {-INFINITY, -INFINITY}, l[2] = {0.f, 0.f};
    float o[kOutTiles][4];
#pragma unroll
    for (int n = 0; n < kOutTiles; ++n) o[n][0] = o[n][1] = o[n][2] = o[n][3] = 0.f;
    // (wgmma) The warpgroup's own P (its 32 tokens, two k-steps) as PV's A operand in registers: PV
    // over its own tokens goes out before the barrier that completes sP with the peer's.
    uint32_t pf[kWgmma ? 2 : 1][4];
    if constexpr (kSeesaw) {
      const SeesawSegment sg{sQ, sKV, sP, bar0, sMax, prof, pages, b, tile0, n_tiles, stop, t0, {lim[0], lim[1]}};
      RunSeesaw<kLeftAfterPv>(p, sg, o, m, l, parities);
    } else {
      // The issuing thread reads a tile's page a tile ahead: read when issuing, its latency (~0.6k
      // cycles) held up warp 0 and with it every warp at the next barrier.
      int page_ahead = tma && pages && tid == 0 ? pages[0] : 0;
      auto load = [&](int i) {  // tile i into its buffer: cp.async, one group a tile, empty past the last
        const int stage = i % kStages;
        if (tma) {
          if (i < n_tiles && tid == 0) {
            const int page = page_ahead;
            if (pages && i + 1 < n_tiles) page_ahead = pages[i + 1];
            LoadTileTma(p, sKV + stage * kTileBytes, bar0 + 8 * stage, pages ? 0 : tile0 + i * kBlockN, pages ? page : b);
          }
        } else {
          if (i < n_tiles) LoadTile(p, sKV + stage * kTileBytes, b, tile0 + i * kBlockN, stop);
          CpAsyncCommit();
        }
      };
      auto wait = [&](int j) {  // until tile j landed (cp.async: and Q, with tile 0), for this thread
        const int stage = j % kStages;
        if (tma) {
          BarWait(bar0 + 8 * stage, (parities >> stage) & 1);
          parities ^= 1u << stage;
        } else {
          CpAsyncWaitGroup<kStages - 2>();
        }
      };
      for (int i = 0; i + 1 < kStages; ++i) load(i);
      // TMA: the last buffer is free too before the first tile, so its tile need not wait for tile 0's
      // QK^T (release_previous below) to be issued (H100: B1 s_q1 23.21 -> 22.66 us, means of eight
      // runs; s_q2 and s_q4 unchanged). (cp.async counts its groups: not there.)
      if (tma) load(kStages - 1);
      uint32_t qf[L::kQInRegisters ? kDimQK / 16 : 1][4];  // Q's A fragments (G = 1)
      if constexpr (L::kQInRegisters) {
        CpAsyncWaitGroup<kStages - 1>();  // Q landed (its tiles are cp.async copies); the first tiles may not have
        __syncthreads();
#pragma unroll
        for (int ks = 0; ks < kDimQK / 16; ++ks) Ldsm4(qf[ks], sQ + Off576(lane & 15, 2 * ks + (lane >> 4)));
        // The loop's first barrier orders these reads before tile kStages - 1 overwrites Q.
      }

      if constexpr (kQPairs) BarWait(bar0 + 8 * kQBar, 0);  // (copied once: parity 0 stays complete)
      Mark(p, prof, kPrologue);
      for (int j = 0; j < n_tiles; ++j) {
        const int u = tile0 + j * kBlockN;
        const uint32_t sK = sKV + (j % kStages) * kTileBytes;
        if (tma) {
          // No barrier here: QK^T's MMAs queue behind the previous tile's PV, and the barrier that
          // frees tile j - 1's buffer (for tile j + 1) and sP comes after they are issued
          // (release_previous), so that it and the next tile's issue overlap them (B128 H128 s_q1
          // 664 -> 647 us, prefill 10.5 -> 10.1-10.3 ms).
          if (j == 0) CpAsyncWaitAll(), FenceProxyAsync(), __syncthreads();  // Q, copied by every thread
          Mark(p, prof, kLand);
          wait(j);
          if (u + kBlockN > stop) {  // rows past the split's end := 0 (cp.async zero-fills them)
            ZeroRows(sK, stop - u);
            FenceProxyAsync();  // before wgmma reads them, or a later TMA copy overwrites them
            __syncthreads();
          }
        } else {
          wait(j);
          if constexpr (kWgmma) FenceProxyAsync();  // the tile's cp.async writes -> wgmma's reads
          Mark(p, prof, kLand);
          __syncthreads();  // tile j (and Q) landed; everyone is done with tile j-1's buffer and sP
          Mark(p, prof, kBarrier);
          if constexpr (!kWgmma) load(j + kStages - 1), Mark(p, prof, kIssue);  // (wgmma: while QK^T runs)
        }
        if (kPhaseClocks && p.prof && tid == 0) ++prof[kTiles];

        // ---- S = Q K^T for this warp's 16 rows x 8 kTokTiles tokens -------------------------------
        float s[kTokTiles][4];
#pragma unroll
        for (int n = 0; n < kTokTiles; ++n) s[n][0] = s[n][1] = s[n][2] = s[n][3] = 0.f;
        // (wgmma) Once the previous tile's PV is done in both warpgroups, its buffer and sP are free:
        // tile j + 1 goes into that buffer (cp.async: its PV was waited for, and the barrier passed,
        // before this tile).
        auto release_previous = [&] {
          if (tma) {
            WgmmaWait<1>();  // this tile's QK^T may still run
            FenceOperands(pf);
            if (j > 0) __syncthreads();
            Mark(p, prof, kBarrier);
          }
          if (j > 0 || !tma) load(j + kStages - 1);  // (TMA: tile kStages - 1 went out above)
          Mark(p, prof, kIssue);
        };
        const int tok0 = 8 * kTokTiles * c;  // the warp's first token in the tile
        if constexpr (kWgmma && MLA_QK_KSPLIT) {
          // Warpgroup c: S over all 64 tokens and k-steps [18 c, 18 c + 18) (m64n64k16), then the
          // halves meet: c keeps tokens 32 c .. + 31 and sends the other 32 (8 KiB a warpgroup) to its
          // peer. Reads 144 KiB of shared memory a tile where 36 steps of m64n32k16 over half the
          // tokens read 216 KiB (Q twice). Warpgroup 0 sends through sP (free until the softmax),
          // warpgroup 1 through the tile's rope block, which only its own k-steps read.
          float sf[8][4];
          WgmmaFence();
#pragma unroll
          for (int i = 0; i < kDimQK / 32; ++i) {
            const int ks = kDimQK / 32 * c + i;
            const uint32_t k_off = Sw128KStep(ks, kBlockBytes);
            Wgmma64x64(sf, Sw128Desc(sQ + k_off, 16, 1024), Sw128Desc(sK + k_off, 16, 1024), i > 0);
          }
          WgmmaCommit();
          release_previous();
          WgmmaWait<0>();
          FenceOperands(o);  // the previous PV's O is final here
          const uint32_t rope = sK + 8 * kBlockBytes, slot = (tid % 128) * 16;
          const uint32_t x_out = c == 0 ? sP : rope, x_in = c == 0 ? rope : sP;
#pragma unroll
          for (int n = 0; n < 4; ++n) {
            float v[4];
#pragma unroll
            for (int e = 0; e < 4; ++e) v[e] = c == 0 ? sf[n + 4][e] : sf[n][e];
            asm volatile("st.shared.v4.f32 [%0], {%1,%2,%3,%4};\n" ::"r"(x_out + n * 2048 + slot), "f"(v[0]),
                         "f"(v[1]), "f"(v[2]), "f"(v[3]));
          }
          __syncthreads();
#pragma unroll
          for (int n = 0; n < 4; ++n) {
            float v[4];
            asm volatile("ld.shared.v4.f32 {%0,%1,%2,%3}, [%4];\n"
                         : "=f"(v[0]), "=f"(v[1]), "=f"(v[2]), "=f"(v[3])
                         : "r"(x_in + n * 2048 + slot));
#pragma unroll
            for (int e = 0; e < 4; ++e) s[n][e] = (c == 0 ? sf[n][e] : sf[n + 4][e]) + v[e];
          }
        } else if constexpr (kWgmma) {
          // 36 k-steps of m64n32k16, Q and K both K-major from shared memory; the next tile's copies
          // are issued while they run.
          WgmmaFence();
#pragma unroll
          for (int ks = 0; ks < kDimQK / 16; ++ks) {
            const uint32_t k_off = Sw128KStep(ks, kBlockBytes);
            Wgmma64x32(s, Sw128Desc(sQ + k_off, 16, 1024), Sw128Desc(sK + tok0 * 128 + k_off, 16, 1024), ks > 0);
          }
          WgmmaCommit();
          release_previous();
          WgmmaWait<0>();
          FenceOperands(o);  // the previous PV's O is final here
        } else if constexpr (L::kQInRegisters) {
          // One n8 tile (G = 1, every warp active): one ldmatrix.x4 holds its B for two k-steps; two
          // accumulators halve the chain of dependent MMAs (36 deep with one; four gained nothing).
          float s1[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
          for (int ks = 0; ks < kDimQK / 16; ks += 2) {
            uint32_t bb[4];
            Ldsm4(bb, sK + Off576(tok0 + (lane & 7), 2 * ks + (lane >> 3)));
            Mma(s[0], qf[ks], bb[0], bb[1]);
            Mma(s1, qf[ks + 1], bb[2], bb[3]);
          }
#pragma unroll
          for (int e = 0; e < 4; ++e) s[0][e] += s1[e];
        } else if (active) {
          MLA_UNROLL(MLA_QK_UNROLL)
          for (int ks = 0; ks < kDimQK / 16; ++ks) {
            uint32_t a[4];
            Ldsm4(a, sQ + Off576(16 * g + (lane & 15), 2 * ks + (lane >> 4)));
#pragma unroll
            for (int pr = 0; pr < kTokTiles / 2; ++pr) {
              uint32_t bb[4];  // tokens +0..7 and +8..15, k halves lo / hi
              Ldsm4(bb, sK + Off576(tok0 + 16 * pr + (lane & 7) + ((lane >> 4) << 3), 2 * ks + ((lane >> 3) & 1)));
              Mma(s[2 * pr], a, bb[0], bb[1]);
              Mma(s[2 * pr + 1], a, bb[2], bb[3]);
            }
          }
        }
        Mark(p, prof, kQK);
        // ---- scale to base 2, mask, row max over the kSplit warps of the row group ---------------
        float mx[2];
        ScaleMask(s, u + tok0, t0, lim, p.scale_log2, mx);
        // A row's reference m moves only when the tile's row max passes it by more than the slack
        // (P <= 2^slack otherwise), which after a row's first tiles is rare. So P is computed with the
        // current references first, and the barrier that publishes sP also asks whether any row needs
        // a new one; only then do the slices exchange their maxima (sMax), move the references,
        // rescale O and write P again: one barrier a tile where the exchange always took two.
        const bool over = mx[0] > m[0] + kRescaleSlack || mx[1] > m[1] + kRescaleSlack;
        float l_add[2];
        auto write_p = [&] {  // P = 2^(x - m) into sP, its row sums into l_add
          const float ref0 = Ref(m[0]), ref1 = Ref(m[1]);
          l_add[0] = l_add[1] = 0.f;
#pragma unroll
          for (int n = 0; n < kTokTiles; ++n) {
            const float p0 = exp2f(s[n][0] - ref0), p1 = exp2f(s[n][1] - ref0);
            const float p2 = exp2f(s[n][2] - ref1), p3 = exp2f(s[n][3] - ref1);
            l_add[0] += p0 + p1, l_add[1] += p2 + p3;
            const uint32_t at = (lane & 3) * 4;
            const uint32_t lo = PackBf16(p0, p1), hi = PackBf16(p2, p3);
            asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(sP + OffP(r_[0], kTokTiles * c + n) + at), "r"(lo));
            asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(sP + OffP(r_[1], kTokTiles * c + n) + at), "r"(hi));
            if constexpr (kWgmma) pf[n / 2][2 * (n % 2)] = lo, pf[n / 2][2 * (n % 2) + 1] = hi;
          }
          if constexpr (kWgmma) FenceProxyAsync();  // st.shared -> wgmma's reads of sP
        };
        auto move_references = [&] {  // every thread: the rows' maxima over the slices, new m, O rescaled
          if ((lane & 3) == 0) sMax[c * kRows + r_[0]] = mx[0], sMax[c * kRows + r_[1]] = mx[1];
          __syncthreads();
          float mn[2];
#pragma unroll
          for (int k = 0; k < 2; ++k) {
            float mx_row = -INFINITY;
#pragma unroll
            for (int w = 0; w < kSplit; ++w) mx_row = fmaxf(mx_row, sMax[w * kRows + r_[k]]);
            mn[k] = mx_row > m[k] + kRescaleSlack ? mx_row : m[k];
          }
          MoveReference(o, m, l, mn);
        };
        if constexpr (kWgmma && MLA_QK_KSPLIT) {
          // sP still holds half of S for the peer warpgroup until every thread has read it.
          if (__syncthreads_or(over)) move_references();
          write_p();  // (the barrier that completes sP is PV's)
        } else {
          write_p();
          if (__syncthreads_or(over)) {  // sP complete, unless a reference moves
            move_references();
            write_p();
            __syncthreads();
          }
        }
#pragma unroll
        for (int k = 0; k < 2; ++k) l[k] += l_add[k];

        Mark(p, prof, kSoftmax);
        // ---- O[16 x 8 kOutTiles] += P[16 x 64] V[64 x 8 kOutTiles] (the warp's V columns) ---------
        if constexpr (kWgmma) {
          // 4 k-steps of m64n256k16, V (the tile's rows, 256 columns from block 4 c) MN-major: the
          // warpgroup's own tokens with P from registers, then (sP complete) the peer's from sP.
          // Halves: m64n128k16 over 128 columns from block 4 half + 2 c.
          constexpr int kWgBlocks = kCols / 128;  // 64-column blocks of V a warpgroup accumulates
          const uint32_t v_cols = sK + (2 * kWgBlocks * half + kWgBlocks * c) * kBlockBytes;
          auto v_desc = [&](int kk) { return Sw128Desc(v_cols + kk * 16 * 128, kBlockBytes, 1024); };
          WgmmaFence();
#pragma unroll
          for (int i = 0; i < 2; ++i) {
            if constexpr (kHalves == 1) Wgmma64x256RsMnB(o, pf[i], v_desc(2 * c + i), 1);
            else Wgmma64x128RsMnB(o, pf[i], v_desc(2 * c + i), 1);
          }
          WgmmaCommit();
          if constexpr (MLA_QK_KSPLIT) __syncthreads();  // sP complete (else: the softmax's vote)
          WgmmaFence();
#pragma unroll
          for (int i = 0; i < 2; ++i) {
            const int kk = 2 * (1 - c) + i;
            if constexpr (kHalves == 1) Wgmma64x256MnB(o, Sw128Desc(sP + kk * 32, 16, 1024), v_desc(kk), 1);
            else Wgmma64x128MnB(o, Sw128Desc(sP + kk * 32, 16, 1024), v_desc(kk), 1);
          }
          WgmmaCommit();
          if (!tma) WgmmaWait<0>(), FenceOperands(pf);  // (TMA: at the next tile's QK^T, or after the loop)
        } else if (active) {
#pragma unroll
          for (int kk = 0; kk < kBlockN / 16; ++kk) {
            uint32_t a[4];
            Ldsm4(a, sP + OffP(16 * g + (lane & 15), 2 * kk + (lane >> 4)));
#pragma unroll
            for (int np = 0; np < kOutTiles / 2; ++np) {
              uint32_t bb[4];
              Ldsm4T(bb, sK + Off576(16 * kk + (lane & 7) + (((lane >> 3) & 1) << 3),
                                     kOutTiles * c + 2 * np + (lane >> 4)));
              Mma(o[2 * np], a, bb[0], bb[1]);
              Mma(o[2 * np + 1], a, bb[2], bb[3]);
            }
          }
        }
        Mark(p, prof, kPV);
      }
    }
    CpAsyncWaitAll();  // n_tiles = 0: the Q group is still outstanding
    if constexpr (kWgmma) WgmmaWait<0>(), FenceOperands(o), FenceOperands(pf);  // the last PV

    // ---- the row sums over the kSplit warps, then the output or the partial ---------------------
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      l[k] += __shfl_xor_sync(0xffffffffu, l[k], 1);
      l[k] += __shfl_xor_sync(0xffffffffu, l[k], 2);
      if ((lane & 3) == 0) sSum[c * kRows + r_[k]] = l[k];
    }
    __syncthreads();
    // The rows leave through shared memory, then one bulk copy each (a row is 1 KiB, contiguous) when
    // the destination rows are 16-byte aligned, as the partials always are (o: 64 4-byte stores a
    // thread took ~9k cycles a CTA at prefill, whose 8192 CTAs each write o); else by 4-byte copies.
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const int R = R0 + r_[k];
      if (R >= p.M) continue;
      float lt = 0.f;
#pragma unroll
      for (int w = 0; w < kSplit; ++w) lt += sSum[w * kRows + r_[k]];
      const float inv = lt > 0.f ? 1.f / lt : 0.f;
      const uint32_t dst = sKV + r_[k] * kStageRow + (8 * kOutTiles * c + 2 * (lane & 3)) * 2;
      if (nsplit > 1) {
#pragma unroll
        for (int n = 0; n < kOutTiles; ++n)
          asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(dst + 16 * n), "r"(PackHalf(o[n][2 * k] * inv, o[n][2 * k + 1] * inv)));
        if (c == 0 && half == 0 && (lane & 3) == 0)
          *reinterpret_cast<float2*>(p.ml + (int64_t(SlotOf(b, part)) * p.M + R) * 2) = make_float2(m[k], lt);
      } else {
#pragma unroll
        for (int n = 0; n < kOutTiles; ++n)
          asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(dst + 16 * n), "r"(PackBf16(o[n][2 * k] * inv, o[n][2 * k + 1] * inv)));
        if (c == 0 && half == 0 && (lane & 3) == 0 && p.lse)
          p.lse[b * p.lse_st[0] + (R / p.H) * p.lse_st[1] + (R % p.H) * p.lse_st[2]] =
              lt > 0.f ? (m[k] + log2f(lt)) * kLn2 : -INFINITY;
      }
    }
    FenceProxyAsync();  // st.shared -> the bulk copy
    __syncthreads();
    auto row_dst = [&](int R) -> void* {  // the CTA's first column of row R
      return nsplit > 1 ? static_cast<void*>(p.opart + (int64_t(SlotOf(b, part)) * p.M + R) * kDimV + kCols * half)
                        : p.o + b * p.o_st[0] + (R / p.H) * p.o_st[1] + (R % p.H) * p.o_st[2] + kCols * half;
    };
    if (nsplit > 1 || (reinterpret_cast<uintptr_t>(p.o) % 16 == 0 && p.o_st[0] % 8 == 0 && p.o_st[1] % 8 == 0 &&
                       p.o_st[2] % 8 == 0)) {
      if (tid < rows_valid) {
        asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;\n"
                     "cp.async.bulk.commit_group;\n"
                     "cp.async.bulk.wait_group 0;\n" ::"l"(row_dst(R0 + tid)),
                     "r"(sKV + tid * kStageRow), "n"(kCols * 2)
                     : "memory");
      }
    } else {
      for (int row = warp; row < rows_valid; row += kThreads / 32) {
        uint32_t* dst = static_cast<uint32_t*>(row_dst(R0 + row));
        for (int word = lane; word < kCols / 2; word += 32) {
          uint32_t v;
          asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(sKV + row * kStageRow + word * 4));
          dst[word] = v;
        }
      }
      __syncthreads();  // before the next segment's copies overwrite the staging
    }
    Mark(p, prof, kEpilogue);
  }
  if constexpr (kQPairs) BarWait(bar0 + 8 * kQBar, 0);  // (an empty entry: no copy into shared memory outlives the CTA)
  ReportProfile(p, prof);
}

template <int kRowGroups, bool kSeesaw = false, int kHalves = 1, bool kLeftAfterPv = false, bool kQPairs = false>
cudaError_t Launch(const Params& p, cudaStream_t stream) {
  constexpr auto kernel = DecodeKernel<kRowGroups, kSeesaw, kHalves, kLeftAfterPv, kQPairs>;
  static bool configured = false;  // the attribute is per function and process
  if (!configured) {
    if (cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             Layout<kRowGroups>::kBytes + 1024);
        e != cudaSuccess)
      return e;
    configured = true;
  }
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(p.m_blocks, p.parts, kHalves);
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = Layout<kRowGroups>::kBytes + 1024;
  config.stream = stream;
  // With kQPairs, pairs of CTAs are clusters (Q's multicast above): the halves of a part, else two
  // parts of an m-block.
  cudaLaunchAttribute cluster = {};
  cluster.id = cudaLaunchAttributeClusterDimension;
  cluster.val.clusterDim.x = 1, cluster.val.clusterDim.y = kHalves == 2 ? 1 : 2, cluster.val.clusterDim.z = kHalves;
  config.attrs = &cluster, config.numAttrs = kQPairs ? 1 : 0;
  return cudaLaunchKernelEx(&config, kernel, p);
}
}  // namespace

cudaError_t LaunchDecode(const Params& p, cudaStream_t stream) {
  if (p.M <= 16) return Launch<1>(p, stream);
  if (p.M <= 32) return Launch<2>(p, stream);
  if (p.halves == 2)  // (schedule.h's HalvesFor)
    return p.q_pairs ? Launch<4, false, 2, false, true>(p, stream) : Launch<4, false, 2>(p, stream);
  // The seesaw where parts are long (serving batches, prefill); with a tile or two a part (B1), the
  // extra tile of its page-aligned start cost more than it gained (24 -> 27.6 us).
  if (MLA_SEESAW && MLA_KV_TMA && p.kv_tma && p.part_tokens >= kSeesawMinTokens)
    return p.parts == 1 ? Launch<4, true, 1, true>(p, stream) : Launch<4, true>(p, stream);
  return p.q_pairs ? Launch<4, false, 1, false, true>(p, stream) : Launch<4>(p, stream);
}

}  // namespace longhaul::mla::gpu
