// kda/fused.cu: the KDA forward's kernels. FusedKernel: one CTA per (sequence, head, slice of BV
// value columns) walks its sequence chunk after chunk; for each 64-token chunk it first prepares the
// chunk's matrices in shared memory, then advances the state. Nothing goes through global memory but
// the inputs, o and the states. (A first two-stage design, a prepare kernel and a scan kernel over a
// workspace on mma.sync, was deleted on 2026-12-04: prep + scan below replaced it at every shape.)
//
// One kernel costs the preparation's ~17k cycles a chunk on the sequential path of every head, and
// where N*H heads leave SMs idle, those SMs idle. The prep + scan variant instead runs the same
// preparation chunk-parallel on every SM (FusedKernel<kV, true>), storing each chunk's scan operands
// as the fused kernel's shared memory holds them (76 KB, the chunk's "image"), and then ScanKernel
// walks the images with the state on chip (one or two CTAs a head). The images cost ~1.25 GB of
// traffic at B1 T8192 H64 (0.26 ms at 4.8 TB/s) and buy 64 heads the whole GPU: 0.78 against 1.38 ms.
// The preparation alone has a layout of its own (PrepLayout, ~112 KB) so that two of its CTAs share
// an SM: with one (the fused kernel's ~220 KB) it was latency-bound at two warps a scheduler (0.86 ms
// at H64 against 0.78). kda_fwd picks between the variants by measurement (AutoVariant in kda_gpu.cuh).
//
// Tiles and why:
//   - 256 threads (8 warps), one CTA per SM (~220 KB of shared memory, BV = 128), up to 255
//     registers a thread: the scan keeps a 16 x 128 fp32 slice of the state per warp (64 registers).
//     The preparation alone: two CTAs an SM, 128 registers a thread (32 bytes spilled).
//   - The scan is TRANSPOSED so that every warpgroup owns 64 rows v of S^T [V][K] and needs no
//     other: V_new^T = U^T - S^T W^T, O^T = S^T Qg^T + V_new^T Aqk^T, S^T = S^T Diag(gamma) +
//     V_new^T Kg, on wgmma. S^T is the register A operand of the first two products straight from
//     its accumulators, V_new^T that of the last two, both bf16 as FLA's h and v_new (splitting the
//     state into bf16 hi + lo cost 20% of the scan and moved no check's error by more than 2%); the
//     state accumulates in fp32. W, Qg, Aqk (K-major) and Kg (MN-major) are 128-byte-swizzled
//     tiles; on mma.sync with ldmatrix the scan took 6.4k cycles a chunk, on wgmma 4.3k.
//   - Every exponential and conversion happens once per element (P1b): with anchors a_r (G of block
//     r's first row) and z_r (its last row), Qa = q^ 2^{G-a_r}, Ka = k^ 2^{G-a_r} and Kb = k^ 2^{z_r-G}
//     (tf32, q^ and k^ the l2-normalised rows in fp32) give every tile of Aqk and L (the 10 lower
//     16x16 tiles, tf32 mma.sync as in FLA) as Qa (resp. Ka) times F_rc = 2^{a_r - z_c} times Kb,
//     and the scan's Qg, Kg, K 2^G are the same products times a per-block constant. Off the diagonal
//     the three factors are <= 1 and each covers a sub-range of (j, i], so one underflows only when
//     the true product is smaller still. On the diagonal F_rr <= 2^{span}, span = max_d (a_r - z_r);
//     a chunk where some span passes 110 (an unbounded gate: fp32's normal range ends near 126) keeps
//     G and computes its diagonal tiles exactly (one exp2 a term) and the others from per-tile
//     exponentials of G. Before this (one exp2 per tile operand, tf32 conversions by cvt.rna, the
//     normalised q, k rounded back to bf16): 40.7k warp-instructions a chunk; after: 32.1k.
//     The sum over d is order-free, so MMA k-index t maps to d = 4t (t+4 to 4t+1) and the second
//     MMA of a 16-wide step to 4t+2, 4t+3: each lane reads four consecutive d with one vector load.
//   - (I + L)^{-1}: 16x16 diagonal blocks by forward substitution (fp32), then the 32x32 block
//     formula in three stages of 16x16 tf32 products. L lives in the lower triangle of one fp32
//     [64][68] buffer and the inverse, transposed, in its upper triangle; each block of the inverse
//     is written straight into Ab = Akk diag(beta) (bf16 hi + lo) as well.
//   - W = Akk diag(beta) (K Gamma) and U^T = V^T (Akk diag(beta))^T: bf16 MMAs, Akk diag(beta)
//     split hi + lo.
//   - Inputs arrive by cp.async, zero-filled past the sequence: q, k and g of chunk c+1 as soon as
//     chunk c's tiles are built, v as soon as W and U are.
//
// Math per chunk (log2 units, G_i[d] = sum_{s<=i} log2(e) g_s[d], restarting at each chunk):
//   Aqk[i,j] = scale sum_d q_i k_j 2^{G_i-G_j} (j <= i);  L[i,j] = beta_i sum_d k_i k_j 2^{G_i-G_j}
//   (j < i);  Akk = (I+L)^{-1};  W = Akk diag(beta) (K 2^G);  U = Akk diag(beta) V;
//   Qg = scale Q 2^G;  Kg = K 2^{G_last-G};  gamma = 2^{G_last};
//   V_new = U - W S;  O = Qg S + Aqk V_new;  S = Diag(gamma) S + Kg^T V_new.
#include "kda/kda.h"
#include "kda/kda_gpu.cuh"
#include "common/wgmma.cuh"

// Tuning knobs (loop unrolling), overridable by a longhaul search (tasks/kda writes kda_params.h).
#if __has_include("kda_params.h")
#include "kda_params.h"
#endif
#ifndef KDA_TILE_UNROLL
#define KDA_TILE_UNROLL 4  // the fused kernel's tiles' 8 steps of 16 channels (4 against 2 on 2026-12-04: P2 -4%)
#endif
#ifndef KDA_PREP_TILE_UNROLL
#define KDA_PREP_TILE_UNROLL 2  // the same for prep alone, two CTAs an SM (2 against 4: 1% at H96, 2026-12-06)
#endif
#ifndef KDA_PHASE_CLOCKS
#define KDA_PHASE_CLOCKS 0
#endif

namespace longhaul::kda::gpu {
namespace {
using kernels::BarArriveExpectTx;
using kernels::BarInit;
using kernels::BarInitFence;
using kernels::BarWait;
using kernels::BulkCommit;
using kernels::BulkLoad;
using kernels::BulkStore;
using kernels::BulkWait;
using kernels::BulkWaitRead;
using kernels::FenceOperands;
using kernels::FenceProxyAsync;
using kernels::Sw128Desc;
using kernels::Sw128KStep;
using kernels::Sw128Offset;
using kernels::Wgmma64x128RsMnB;
using kernels::Wgmma64x64Rs;
using kernels::WgmmaCommit;
using kernels::WgmmaFence;
using kernels::WgmmaWait;

constexpr int kThreads = 256;
constexpr bool kPhaseClocks = KDA_PHASE_CLOCKS;
constexpr int kLdQK = 144;  // bf16 raw q, k rows: 72 words, four rows fill the 32 banks (8-byte reads)
constexpr int kLdF = 144;   // fp32 [64][128] rows: 144 words, two rows fill the banks (16-byte reads)
constexpr int kLdB = 136;   // bf16 [64][128] operands read by ldmatrix (272 B rows)
constexpr int kLd64 = 72;   // bf16 [.][64] operands read by ldmatrix (144 B rows)
constexpr int kLdLA = 68;   // fp32 L (lower) / Akk^T (upper); Invert says why 68
constexpr int kLdX = 24;    // fp32 [16][24] scratch blocks of the inverse
constexpr int kLdOt = 24;   // bf16 per-warp [64 tokens][16 v] output transposition
constexpr int kTiles = 10;  // the lower 16x16 tiles of a 64x64 chunk matrix
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kExactSpan = 110.f;  // lower_bound >= -5 spans at most 15 x 7.21 = 108.2

// Shared memory, by phase (a region is reused once what it held is dead):
//   R1  Qa (P1b; G in an exact chunk) -> Ab hi, Ab lo and W (P3, P4)
//   R2  raw g -> Ka (P1b)            R3  raw q, k -> Kb (P1b); both refilled for the next chunk after P2
//   Aqk region: anchors and row norms (P1) before Aqk (P2);  Ut region: F (P1b, P2), X (P3), U^T (P4)
//   LA and K 2^G together: Ot (the scan's output transposition)
// The scan's wgmma operands W, Qg, Kg and Aqk are bf16 tiles in the 128-byte-swizzled layout
// (common/wgmma.cuh), on 1 KiB boundaries: 64 rows of 128 bytes a 64-column block.
constexpr int kSwBlock = kC * 128;  // bytes of a 64 x 64 bf16 block
__device__ __forceinline__ uint32_t SwOff(int row, int col) {  // byte offset of element (row, col)
  return Sw128Offset(row, col >> 3, kSwBlock) + (col & 7) * 2;
}
constexpr int Align1k(int x) { return (x + 1023) / 1024 * 1024; }
template <int BV>
struct Layout {
  static constexpr int kLdV = BV + 8;
  static constexpr int kR = kC * kLdF * 4;
  static constexpr int kR1 = 0;
  static constexpr int kR2 = kR1 + kR;
  static constexpr int kR3 = kR2 + kR;
  static constexpr int kV = kR3 + kR;                   // v slice [64][BV+8] bf16
  static constexpr int kLA = kV + kC * kLdV * 2;        // fp32 [64][kLdLA]
  static constexpr int kKgam = kLA + kC * kLdLA * 4;    // K 2^G bf16 [64][136]
  static constexpr int kQg = Align1k(kKgam + kC * kLdB * 2);  // the scan's operands from here on
  static constexpr int kKg = kQg + 2 * kSwBlock;
  static constexpr int kAqk = kKg + 2 * kSwBlock;       // [64][64]
  static constexpr int kUt = kAqk + kSwBlock;           // U^T [BV][72]
  static constexpr int kBeta = kUt + BV * kLd64 * 2;    // fp32 [64]
  static constexpr int kGam = kBeta + kC * 4;           // fp32 [128]
  static constexpr int kBytes = kGam + 128 * 4;
  static constexpr int kQraw = kR3, kKraw = kR3 + kC * kLdQK * 2;
  static constexpr int kAbh = kR1, kAbl = kR1 + kC * kLd64 * 2, kW = kR1 + 2 * kC * kLd64 * 2;
  static constexpr int kAnc = kAqk;                     // fp32 [8][128]: G of each block's first row, then last row
  static constexpr int kRn = kAnc + 8 * 128 * 4;        // fp32 [128]: 1/|q_i|, then 1/|k_i|
  static constexpr int kF = kUt;                        // fp32 [10][128]: 2^{a_r - z_c} of tile (r, c)
  static constexpr int kX = kUt;                        // the inverse's scratch [6][16][kLdX] fp32
  static constexpr int kOt = kLA;
  static constexpr int kTot = kLA;  // fp32 [8][128]: each warp's G increase (P1)
  static constexpr int kGrawBf16 = kR2;
  static constexpr int kLP = kLA;   // where P2 writes L (at LOff)
  // Element (row, d) of an fp32 [64][128] region R1..R3; byte b of raw q's or k's row; L(i, j).
  __device__ static int F32(int row, int d) { return row * kLdF + d; }
  static constexpr int kRowF = kLdF, kOddFlip = 0;  // (F32 for P2's strength-reduced reads)
  static constexpr int kTileUnroll = KDA_TILE_UNROLL;
  __device__ static int Raw(int row, int b) { return row * kLdQK * 2 + b; }
  __device__ static int LOff(int i, int j) { return i * kLdLA + j; }
  static_assert(kBytes + 1024 <= 232448, "over the sm_90 opt-in shared memory (with 1 KiB to align)");
  static_assert((kQg | kKg | kAqk | kW) % 1024 == 0, "swizzled tiles on 1 KiB");
  static_assert((kR2 | kR3 | kV | kLA | kKgam | kQg | kKg | kAqk | kUt | kBeta | kGam | kKraw | kAbl | kW | kRn) % 16 == 0,
                "every region 16-byte aligned (cp.async, ldmatrix, vector loads)");
  static_assert(kC * 128 * 4 <= kR && 2 * kC * kLdQK * 2 <= kR, "raw g, raw q and k fit in a region");
  static_assert(2 * kC * kLd64 * 2 + kC * kLdB * 2 <= kR, "Ab hi, lo and W fit in R1");
  static_assert(kRn + 128 * 4 <= kUt, "anchors and norms fit in Aqk");
  static_assert(kTiles * 128 * 4 <= BV * kLd64 * 2 && 6 * 16 * kLdX * 4 <= BV * kLd64 * 2, "F and X fit in U^T");
  static_assert(8 * kC * kLdOt * 2 <= kC * kLdLA * 4 + kC * kLdB * 2, "Ot fits in LA and K 2^G");
  // The prep + scan variant's image (kda_gpu.cuh) is W, then [Qg, Kg, Aqk, U^T] as they lie here.
  static_assert(kImgQg == 2 * kSwBlock && kKg == kQg + 2 * kSwBlock && kAqk == kKg + 2 * kSwBlock &&
                    kImgUt - kImgQg == kUt - kQg && kImgGam - kImgUt == gpu::kV * kLd64 * 2,
                "the chunk image mirrors this layout");
};

// Prep alone's shared memory: under 113 KB, so that two CTAs share an SM (one CTA an SM left the
// preparation latency-bound at two warps a scheduler). A region is reused once what it held is dead:
//   R1  Qa (P1b, P2; G in an exact chunk)  -> Akk^T (P3) -> W, U^T's first rows (P4, then the image)
//   R2  raw g -> Ka (q^ exact)             -> U^T's last rows, K 2^G, v's first rows (P2c .. P4)
//   R3  raw q, k -> Kb (k^ exact)          -> v's last rows, Ab hi + lo, X (P3, P4)
//   F   2^{a_r - z_c} (P1b, P2)            LP  the warps' totals, anchors and norms (P1), L (P2, P3)
// Aqk, Qg, Kg and gamma go from registers to the chunk's image (kda_gpu.cuh); W and U^T by bulk
// copies (stored from fragments, 4 bytes to a row, they cost ~0.1 ms at H64). The next chunk's
// inputs load after P4 (the other CTA on the SM has work meanwhile), raw g once the copies have
// read U^T (bf16 g sits past it).
// R1..R3 are rows of 512 bytes without padding: odd rows XOR their 16-byte groups with 4, so that
// P2's fragment reads (rows g and g + 1 of a quarter warp, groups t) fill the banks as padded rows
// did; raw q and k rows (256 bytes) XOR their 16-byte pieces with 2 for the row norms' reads.
struct PrepLayout {
  static constexpr int kR = kC * 128 * 4;
  static constexpr int kR1 = 0, kR2 = kR, kR3 = 2 * kR;
  static constexpr int kQraw = kR3, kKraw = kR3 + kC * 256;
  static constexpr int kF = 3 * kR;
  static constexpr int kLP = kF + kTiles * 128 * 4;
  static constexpr int kLdTile = 17;                  // L's tiles [16][17] fp32
  static constexpr int kTot = kLP, kAnc = kTot + 8 * 128 * 4, kRn = kAnc + 8 * 128 * 4;
  static constexpr int kBeta = kLP + kTiles * 16 * kLdTile * 4;
  static constexpr int kBytes = kBeta + kC * 4;
  static constexpr int kGam = kBeta;                  // (gamma goes to the image)
  static constexpr int kLA = kR1;                     // Akk^T (P3)
  static constexpr int kW = kR1, kUt = kW + 2 * kSwBlock;   // P4
  static constexpr int kKgam = kUt + gpu::kV * kLd64 * 2;
  static constexpr int kGrawBf16 = kKgam;             // raw bf16 g: clear of U^T's copy
  static constexpr int kLdV = gpu::kV + 8;
  static constexpr int kV = kKgam + kC * kLdB * 2;
  static constexpr int kAbh = kV + kC * kLdV * 2, kAbl = kAbh + kC * kLd64 * 2;
  static constexpr int kX = kAbl + kC * kLd64 * 2;
  __device__ static int F32(int row, int d) { return row * 128 + ((((d >> 2) ^ ((row & 1) << 2)) << 2) | (d & 3)); }
  static constexpr int kRowF = 128, kOddFlip = 16;  // F32 for d = 16 s + 4 t: row * 128 + 16 (s ^ (row & 1)) + 4 t
  static constexpr int kTileUnroll = KDA_PREP_TILE_UNROLL;
  __device__ static int Raw(int row, int b) { return row * 256 + (b ^ ((row & 1) << 5)); }
  __device__ static int LOff(int i, int j) {
    const int r = i >> 4, c = j >> 4;
    return (r * (r + 1) / 2 + c) * 16 * kLdTile + (i & 15) * kLdTile + (j & 15);
  }
  static_assert(kPrepCtasPerSm * (kBytes + 1024 + 1024) <= 233472, "two CTAs an SM (each with 1 KiB to align, 1 KiB reserved)");
  static_assert(kRn + kC * 2 * 4 <= kBeta && kX + 6 * 16 * kLdX * 4 <= kF && kC * kLdLA * 4 <= kR2 &&
                    kGrawBf16 + kC * 256 <= kR3,
                "the norms in LP, X before F, LA in R1, bf16 g in R2");
  static_assert((kR2 | kR3 | kKraw | kF | kLP | kAnc | kRn | kBeta | kUt | kKgam | kV | kAbh | kAbl | kX) % 16 == 0,
                "every region 16-byte aligned (cp.async, ldmatrix, vector loads)");
};

__device__ __forceinline__ void CpAsync16Z(void* smem, const void* gmem, bool in) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(SmemAddr(smem)), "l"(gmem),
               "r"(in ? 16 : 0));
}
// 64 rows of kRowBytes (a multiple of 16) from src (row r at src + r src_stride) to dst (row r at
// dst + r dst_stride, its 16-byte pieces XOR odd_xor on odd rows) by cp.async; rows >= rows are zero-filled.
// A warp's copy covers R = 512 / kRowBytes rows, spaced 8 apart: every padded stride here is 16 or 32
// bytes over a multiple of 128, so rows 8 apart start on the same bank and the warp's pieces meet no
// conflict (adjacent rows, as before, cost ~3.3M excess shared wavefronts a B1 T8192 H64 run, ncu).
template <int kRowBytes>
__device__ __forceinline__ void LoadRows(unsigned char* dst, int dst_stride, const unsigned char* src,
                                         int64_t src_stride, int rows, int tid, int odd_xor = 0) {
  constexpr int kPieces = kRowBytes / 16, kR = 32 / kPieces;
  static_assert(kC * kPieces % kThreads == 0 && 32 % kPieces == 0, "whole rounds of 16-byte pieces");
  const int warp = tid >> 5, lane = tid & 31, c = (lane % kPieces) * 16;
#pragma unroll
  for (int x = 0; x < kC * kPieces / kThreads; ++x) {
    const int grp = x * (kThreads / 32) + warp, r = 8 * kR * (grp / 8) + grp % 8 + 8 * (lane / kPieces);
    const bool in = r < rows;
    CpAsync16Z(dst + r * dst_stride + (c ^ ((r & 1) * odd_xor)), src + (in ? r : 0) * src_stride + c, in);
  }
}
// D[16x8] += A[16x8] B[8x8], tf32: a0 (g, t) a1 (g+8, t) a2 (g, t+4) a3 (g+8, t+4); b0 (k t, n g),
// b1 (k t+4, n g); d as for bf16.
__device__ __forceinline__ void MmaTf32(float* d, uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                        uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}
// B fragments of two n-tiles (n0, n0+8) over k0..k0+15 from a row-major [n][k] bf16 matrix:
// b[0], b[1] for n-tile n0; b[2], b[3] for n0+8.
__device__ __forceinline__ void LoadBNK(uint32_t* b, const __nv_bfloat16* base, int ld, int n0, int k0,
                                        int lane) {
  const int mi = lane >> 3;
  Ldsm4(b, base + (n0 + 8 * (mi >> 1) + (lane & 7)) * ld + k0 + 8 * (mi & 1));
}
// A fragment of the 16x16 tile (m0, k0) of A where A^T is stored row-major [k][m].
__device__ __forceinline__ void LoadAT(uint32_t* a, const __nv_bfloat16* base, int ld, int m0, int k0,
                                       int lane) {
  const int mi = lane >> 3;
  Ldsm4T(a, base + (k0 + 8 * (mi >> 1) + (lane & 7)) * ld + m0 + 8 * (mi & 1));
}
__device__ __forceinline__ float4 Bf16x4(uint2 u) {
  const float2 a = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.x));
  const float2 b = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&u.y));
  return make_float4(a.x, a.y, b.x, b.y);
}
__device__ __forceinline__ void Unpack8(uint4 u, float* x) {
  const uint32_t w[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float2 f = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&w[i]));
    x[2 * i] = f.x, x[2 * i + 1] = f.y;
  }
}
// 2^x in one MUFU op (relative error ~2^-22; results below 2^-126 flush to 0, which only ever
// happens to factors whose true product is smaller still).
__device__ __forceinline__ float Ex2(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}
__device__ __forceinline__ float Sigmoid(float x) { return __fdividef(1.f, 1.f + __expf(-x)); }
__device__ __forceinline__ float Softplus(float x) {
  return x > 20.f ? x : (x < -15.f ? __expf(x) : __logf(1.f + __expf(x)));
}

// ---- P2: the lower 16x16 tiles of Aqk and L ------------------------------------------------------
// Tile t = r (r + 1) / 2 + c is (r, c), c <= r. Rows i = 16r + g (+8) and columns j = 16c + 8nt + g
// of the tile, as the MMA fragments lay them out.
__device__ __forceinline__ void TileOf(int t, int& r, int& c) {
  r = t < 1 ? 0 : t < 3 ? 1 : t < 6 ? 2 : 3;
  c = t - r * (r + 1) / 2;
}
// fp32 -> tf32, rounded to nearest (ties away): the MMA ignores the low 13 bits. One add where
// cvt.rna.tf32.f32 costs a compare and a predicated add (inputs are finite).
__device__ __forceinline__ uint32_t RoundTf32(float x) { return __float_as_uint(x) + 0x1000u; }

// Scale, mask (diagonal tiles) and store n-tile nt (8 columns) of tile (r, c) of Aqk (bf16) and L
// (fp32, strictly lower).
template <class Ly>
__device__ __forceinline__ void StoreTile(unsigned char* smem, unsigned char* aqk, const float* aq, const float* ak, int r,
                                          int c, int nt, int lane, float scale) {
  const float* sBeta = reinterpret_cast<const float*>(smem + Ly::kBeta);
  float* sL = reinterpret_cast<float*>(smem + Ly::kLP);
  const int g = lane >> 2, t = lane & 3;
  const bool diag = c == r;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int i = 16 * r + g + 8 * h, j = 16 * c + 8 * nt + 2 * t;
    float q0 = scale * aq[2 * h], q1 = scale * aq[2 * h + 1];
    const float bi = sBeta[i];
    const float l0 = bi * ak[2 * h], l1 = bi * ak[2 * h + 1];
    if (diag) {  // select, never multiply: the masked half may be huge
      q0 = j <= i ? q0 : 0.f, q1 = j + 1 <= i ? q1 : 0.f;
    }
    *reinterpret_cast<uint32_t*>(aqk + SwOff(i, j)) = PackBf16(q0, q1);
    if (!diag || j < i) sL[Ly::LOff(i, j)] = l0;
    if (!diag || j + 1 < i) sL[Ly::LOff(i, j + 1)] = l1;
  }
}

// Tile t from the factored operands P1b built (anchors a_r = G of block r's first row, z_c = G of
// block c's last row):  2^{G_i - G_j} = 2^{G_i - a_r} 2^{a_r - z_c} 2^{z_c - G_j}, i.e.
// Qa_i (resp. Ka_i) times F_t = 2^{a_r - z_c} times Kb_j. Off the diagonal all three factors are <= 1
// and each covers a sub-range of (j, i], so one underflows only when the true product is smaller
// still; on it F_t <= 2^{span} (<= 2^110: exact chunks take GatedTile / ExactTile instead).
// The sum over d is order-free, so MMA k-index t maps to d = 4t (t+4 to 4t+1) and the second MMA
// of a 16-wide step to 4t+2, 4t+3: each lane reads four consecutive d with one vector load.
template <class Ly, int NH>
__device__ __forceinline__ void FactoredHalves(unsigned char* smem, unsigned char* aqk, int r, int u0, int lane,
                                               float scale) {
  // Every row this lane reads (16 r + g, + 8, 8 u + g) has g's parity, so one offset a step serves
  // all of them: step s's four channels sit at 16 (s ^ odd) + 4 t of the row (Ly::F32), the rows at
  // constant distances. (Written so, with prep alone unrolled by 2: -1.1%; ncu counted P2's 9.4k
  // warp-instructions a chunk, two thirds integer, the same before and after: ptxas had already
  // reduced the per-load addresses, and P2 waits on latency, not on issue.)
  const int g = lane >> 2, t = lane & 3, flip = (g & 1) * Ly::kOddFlip;
  const float* base = reinterpret_cast<const float*>(smem);
  const float* qa = base + Ly::kR1 / 4 + (16 * r + g) * Ly::kRowF + 4 * t;  // Qa row 16 r + g; Ka, Kb alike
  const float* kb = base + Ly::kR3 / 4 + (8 * u0 + g) * Ly::kRowF + 4 * t;
  const float* fr = base + Ly::kF / 4 + r * (r + 1) / 2 * kK + 4 * t;  // F of tile (r, 0)
  constexpr int kKa = (Ly::kR2 - Ly::kR1) / 4, kRow8 = 8 * Ly::kRowF;
  float aq[NH][4] = {}, ak[NH][4] = {};  // [half-tile][fragment]
#pragma unroll Ly::kTileUnroll
  for (int s = 0; s < 8; ++s) {
    const int o = (16 * s) ^ flip;
    const uint4 q0 = *reinterpret_cast<const uint4*>(qa + o);
    const uint4 q1 = *reinterpret_cast<const uint4*>(qa + kRow8 + o);
    const uint4 k0 = *reinterpret_cast<const uint4*>(qa + kKa + o);
    const uint4 k1 = *reinterpret_cast<const uint4*>(qa + kKa + kRow8 + o);
#pragma unroll
    for (int x = 0; x < NH; ++x) {
      const int u = u0 + x;  // tile column u / 2, n-tile u % 2: key row 8 u + g
      const float4 f = *reinterpret_cast<const float4*>(fr + (u >> 1) * kK + 16 * s);
      const float4 kv = *reinterpret_cast<const float4*>(kb + x * kRow8 + o);
      const uint32_t b0 = RoundTf32(kv.x * f.x), b1 = RoundTf32(kv.y * f.y);
      const uint32_t b2 = RoundTf32(kv.z * f.z), b3 = RoundTf32(kv.w * f.w);
      // k-index t <-> d, t+4 <-> d+1 (first MMA); t <-> d+2, t+4 <-> d+3 (second)
      MmaTf32(aq[x], q0.x, q1.x, q0.y, q1.y, b0, b1);
      MmaTf32(aq[x], q0.z, q1.z, q0.w, q1.w, b2, b3);
      MmaTf32(ak[x], k0.x, k1.x, k0.y, k1.y, b0, b1);
      MmaTf32(ak[x], k0.z, k1.z, k0.w, k1.w, b2, b3);
    }
  }
#pragma unroll
  for (int x = 0; x < NH; ++x) StoreTile<Ly>(smem, aqk, aq[x], ak[x], r, (u0 + x) >> 1, (u0 + x) & 1, lane, scale);
}

// Exact chunks (some block's span passes 110, which only an unbounded gate reaches): R1 keeps G,
// R2 and R3 hold the normalised q and k in fp32. Off-diagonal tile (r, c) with the exponentials
// taken per tile from the anchor a = 16r, both factors <= 1.
template <class Ly>
__device__ __forceinline__ void GatedTile(unsigned char* smem, unsigned char* aqk, int r, int c, int lane, float scale) {
  const float* sG = reinterpret_cast<const float*>(smem + Ly::kR1);
  const float* sQ = reinterpret_cast<const float*>(smem + Ly::kR2);
  const float* sK = reinterpret_cast<const float*>(smem + Ly::kR3);
  const int g = lane >> 2, t = lane & 3, a = 16 * r;
  float aq[2][4] = {}, ak[2][4] = {};
  for (int s = 0; s < 8; ++s) {
    const int d = 16 * s + 4 * t;
    const float4 ga = *reinterpret_cast<const float4*>(sG + Ly::F32(a, d));
    uint32_t qt[2][4], kt[2][4];  // A side, rows g and g+8
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int i = a + g + 8 * h;
      const float4 gi = *reinterpret_cast<const float4*>(sG + Ly::F32(i, d));
      const float4 q4 = *reinterpret_cast<const float4*>(sQ + Ly::F32(i, d));
      const float4 k4 = *reinterpret_cast<const float4*>(sK + Ly::F32(i, d));
      const float f[4] = {Ex2(gi.x - ga.x), Ex2(gi.y - ga.y), Ex2(gi.z - ga.z), Ex2(gi.w - ga.w)};
      qt[h][0] = RoundTf32(q4.x * f[0]), qt[h][1] = RoundTf32(q4.y * f[1]);
      qt[h][2] = RoundTf32(q4.z * f[2]), qt[h][3] = RoundTf32(q4.w * f[3]);
      kt[h][0] = RoundTf32(k4.x * f[0]), kt[h][1] = RoundTf32(k4.y * f[1]);
      kt[h][2] = RoundTf32(k4.z * f[2]), kt[h][3] = RoundTf32(k4.w * f[3]);
    }
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      const int j = 16 * c + 8 * nt + g;
      const float4 gj = *reinterpret_cast<const float4*>(sG + Ly::F32(j, d));
      const float4 k4 = *reinterpret_cast<const float4*>(sK + Ly::F32(j, d));
      const uint32_t b0 = RoundTf32(k4.x * Ex2(ga.x - gj.x)), b1 = RoundTf32(k4.y * Ex2(ga.y - gj.y));
      const uint32_t b2 = RoundTf32(k4.z * Ex2(ga.z - gj.z)), b3 = RoundTf32(k4.w * Ex2(ga.w - gj.w));
      MmaTf32(aq[nt], qt[0][0], qt[1][0], qt[0][1], qt[1][1], b0, b1);
      MmaTf32(aq[nt], qt[0][2], qt[1][2], qt[0][3], qt[1][3], b2, b3);
      MmaTf32(ak[nt], kt[0][0], kt[1][0], kt[0][1], kt[1][1], b0, b1);
      MmaTf32(ak[nt], kt[0][2], kt[1][2], kt[0][3], kt[1][3], b2, b3);
    }
  }
  StoreTile<Ly>(smem, aqk, aq[0], ak[0], r, c, 0, lane, scale);
  StoreTile<Ly>(smem, aqk, aq[1], ak[1], r, c, 1, lane, scale);
}
// Exact chunks: diagonal tile (r, r), one exp2 per term (each <= 1).
template <class Ly>
__device__ __forceinline__ void ExactTile(unsigned char* smem, unsigned char* aqk, int r, int lane, float scale) {
  const float* sG = reinterpret_cast<const float*>(smem + Ly::kR1);
  const float* sQ = reinterpret_cast<const float*>(smem + Ly::kR2);
  const float* sK = reinterpret_cast<const float*>(smem + Ly::kR3);
  const float* sBeta = reinterpret_cast<const float*>(smem + Ly::kBeta);
  float* sL = reinterpret_cast<float*>(smem + Ly::kLP);
  const int a = 16 * r;
  for (int pi = lane; pi < 256; pi += 32) {
    const int i = a + (pi >> 4), j = a + (pi & 15);
    float sqk = 0.f, skk = 0.f;
    if (j <= i) {
      for (int d = 0; d < 128; ++d) {
        const float kj = sK[Ly::F32(j, d)] * Ex2(sG[Ly::F32(i, d)] - sG[Ly::F32(j, d)]);
        sqk += sQ[Ly::F32(i, d)] * kj;
        skk += sK[Ly::F32(i, d)] * kj;
      }
    }
    *reinterpret_cast<__nv_bfloat16*>(aqk + SwOff(i, j)) = __float2bfloat16_rn(scale * sqk);
    if (j < i) sL[Ly::LOff(i, j)] = sBeta[i] * skk;
  }
}
// Exact chunks (rare: an unbounded gate): warp w builds tiles (r, c0 .. c0 + nc - 1) of one row block.
struct TileJob {
  int r, c0, nc;
};
__device__ __forceinline__ TileJob JobOf(int warp) {
  switch (warp) {
    case 0: return {0, 0, 1};
    case 2: return {1, 0, 1};
    case 3: return {1, 1, 1};
    case 4: return {2, 0, 2};
    case 5: return {2, 2, 1};
    case 6: return {3, 0, 2};
    case 7: return {3, 2, 2};
    default: return {0, 0, 0};
  }
}
// Exact chunks are rare (an unbounded gate): out of line, so that their registers do not weigh on
// the factored path's.
template <class Ly>
__device__ __noinline__ void ExactTiles(unsigned char* smem, unsigned char* aqk, TileJob job, int lane, float scale) {
  for (int c = job.c0; c < job.c0 + job.nc; ++c) {
    if (c == job.r) ExactTile<Ly>(smem, aqk, c, lane, scale);
    else GatedTile<Ly>(smem, aqk, job.r, c, lane, scale);
  }
}
// The factored path splits the 20 half-tiles (8 columns each) of the 10 tiles into jobs of two or
// three consecutive half-tiles of one row block, u0 .. u0 + n - 1 (half-tile u of row r: tile column
// u / 2, n-tile u % 2), so that every warp works and each scheduler (warps w and w + 4) gets five.
// (Whole tiles left warp 1 idle and three warps with two tiles: P2 9.2-9.3k -> 7.8k cycles a chunk
// for prep alone, every shape ~1.2% faster, 2026-12-06. Twenty jobs of one n-tile, each reloading
// its A side, were slower than whole tiles: the A loads are shared within a job.)
struct HalfJob {
  int r, u0, n;
};
__device__ __forceinline__ HalfJob HalfJobOf(int warp) {
  switch (warp) {
    case 0: return {0, 0, 2};
    case 1: return {1, 0, 2};
    case 2: return {1, 2, 2};
    case 3: return {3, 6, 2};
    case 4: return {2, 0, 3};
    case 5: return {2, 3, 3};
    case 6: return {3, 0, 3};
    default: return {3, 3, 3};
  }
}
template <class Ly>
__device__ void BuildTiles(unsigned char* smem, unsigned char* aqk, bool exact, int warp, int lane, float scale) {
  // The scan's wgmma reads all of Aqk: the six tiles above the diagonal are zeros (the region held
  // the anchors during P1), 16 bytes a thread.
  if (const int x = 32 * warp + lane; x < 6 * 32) {
    const int u = x >> 5, r = u < 3 ? 0 : u < 5 ? 1 : 2, c = u < 3 ? u + 1 : u < 5 ? u - 1 : 3;
    *reinterpret_cast<uint4*>(aqk + SwOff(16 * r + ((x & 31) >> 1), 16 * c + 8 * (x & 1))) =
        make_uint4(0, 0, 0, 0);
  }
  if (!exact) {
    const HalfJob job = HalfJobOf(warp);
    if (job.n == 3) FactoredHalves<Ly, 3>(smem, aqk, job.r, job.u0, lane, scale);
    else FactoredHalves<Ly, 2>(smem, aqk, job.r, job.u0, lane, scale);
    return;
  }
  ExactTiles<Ly>(smem, aqk, JobOf(warp), lane, scale);
}

// ---- P3: the inverse ----------------------------------------------------------------------------
// L(i, j) (i > j) at Ly::LOff(i, j) from Ly::kLP; Ai(i, j) = 1 on the diagonal, sLA[j][i] below it
// (the inverse is kept transposed in the upper triangle of sLA, which holds L's lower one in the
// fused kernel's layout).
__device__ __forceinline__ float AiAt(const float* sLA, int i, int j) {
  return i == j ? 1.f : (i > j ? sLA[j * kLdLA + i] : 0.f);
}
// Operands of the 16x16 block products: element (i, j) of block (r, c) of L, of the inverse, or of
// a 16x16 fp32 scratch block X ([16][kLdX]).
template <class Ly>
struct LBlk {
  const float* s;  // at Ly::kLP
  int r, c;
  __device__ float operator()(int i, int j) const { return s[Ly::LOff(16 * r + i, 16 * c + j)]; }
};
struct AiBlk {
  const float* s;
  int r, c;
  __device__ float operator()(int i, int j) const { return AiAt(s, 16 * r + i, 16 * c + j); }
};
struct XBlk {
  const float* x;
  __device__ float operator()(int i, int j) const { return x[i * kLdX + j]; }
};
// acc += A B for 16x16 blocks, tf32 m16n8k8; acc[nt] is the n-tile of columns 8 nt .. 8 nt + 7.
template <class A, class B>
__device__ __forceinline__ void BlockMma(float (*acc)[4], const A& a, const B& bm, int lane) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int ks = 0; ks < 2; ++ks) {
    const int k = 8 * ks + t;
    const uint32_t a0 = RoundTf32(a(g, k)), a1 = RoundTf32(a(g + 8, k));
    const uint32_t a2 = RoundTf32(a(g, k + 4)), a3 = RoundTf32(a(g + 8, k + 4));
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
      MmaTf32(acc[nt], a0, a1, a2, a3, RoundTf32(bm(k, 8 * nt + g)), RoundTf32(bm(k + 4, 8 * nt + g)));
  }
}
__device__ __forceinline__ void StoreX(float* x, const float (*acc)[4], int lane) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int nt = 0; nt < 2; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) x[(g + 8 * (e >> 1)) * kLdX + 8 * nt + 2 * t + (e & 1)] = acc[nt][e];
}
// Ai block (r, c) = -acc: into Ab = Ai diag(beta) as bf16 hi + lo (what P4 reads) and, where a later
// stage reads it, transposed into the upper triangle of sLA.
struct AbOut {
  __nv_bfloat16 *hi, *lo;
  const float* beta;
  __device__ void Put(int i, int j, float x0, float x1) const {  // Ai(i, j), Ai(i, j + 1)
    uint32_t h, l;
    SplitBf16(x0 * beta[j], x1 * beta[j + 1], h, l);
    *reinterpret_cast<uint32_t*>(hi + i * kLd64 + j) = h;
    *reinterpret_cast<uint32_t*>(lo + i * kLd64 + j) = l;
  }
};
__device__ __forceinline__ void StoreAiBlock(float* sLA, const AbOut& ab, const float (*acc)[4], int r, int c,
                                             bool keep, int lane) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int nt = 0; nt < 2; ++nt)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int i = 16 * r + g + 8 * h, j = 16 * c + 8 * nt + 2 * t;
      ab.Put(i, j, -acc[nt][2 * h], -acc[nt][2 * h + 1]);
      if (keep) sLA[j * kLdLA + i] = -acc[nt][2 * h], sLA[(j + 1) * kLdLA + i] = -acc[nt][2 * h + 1];
    }
}

// Akk = (I + L)^{-1}: the four 16x16 diagonal blocks by forward substitution (fp32), then the 32x32
// block formula [[A, 0], [C, D]]^{-1} = [[A^-1, 0], [-D^-1 C A^-1, D^-1]] in three stages of 16x16
// tf32 products (FLA's solve_tril precision), four warps, scratch blocks X in sX.
// Warps 0-3 compute, every warp takes the barriers (the others have nothing to do meanwhile; a
// named barrier over warps 0-3 alone made compute-sanitizer's racecheck report the inverse's Ab
// writes against P4's reads, across the __syncthreads between them). Writes Ab (P4's operand)
// block by block.
// Strides: an MMA fragment reads element (g, t) (g = lane / 4, t = lane % 4) at bank g ld + t from a
// row-major block and t ld + g from a transposed one. ld = 68 (4 mod 32) makes the first
// conflict-free and the second two-way; 65 made both up to four-way (ncu: ~6M excess wavefronts a
// launch at H64). X blocks, read only as row-major B operands (bank t ld + g), take ld = 24
// (24 t + g: all 32 banks). Both: P3 3.67k -> 3.39k cycles a chunk, H64 0.868-0.871 -> 0.858-0.860 ms.
template <class Ly>
__device__ void Invert(unsigned char* smem, int tid) {
  float* sLA = reinterpret_cast<float*>(smem + Ly::kLA);
  const float* sL = reinterpret_cast<const float*>(smem + Ly::kLP);
  const AbOut ab{reinterpret_cast<__nv_bfloat16*>(smem + Ly::kAbh), reinterpret_cast<__nv_bfloat16*>(smem + Ly::kAbl),
                 reinterpret_cast<const float*>(smem + Ly::kBeta)};
  float* sX = reinterpret_cast<float*>(smem + Ly::kX);  // [6][16][kLdX]
  const int warp = tid >> 5, lane = tid & 31;
  if (tid < 64) {  // diagonal block b, column col: x_i = [i == col] - sum_{u<i} L_iu x_u
    const int b = tid >> 4, col = tid & 15, o = 16 * b;
    float x[16];
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      float acc = i == col ? 1.f : 0.f;
#pragma unroll
      for (int u = 0; u < i; ++u) acc -= sL[Ly::LOff(o + i, o + u)] * x[u];
      x[i] = acc;
    }
    const float bc = ab.beta[o + col];
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      if (i > col) sLA[(o + col) * kLdLA + o + i] = x[i];
      const __nv_bfloat16 hi = __float2bfloat16_rn(x[i] * bc);
      ab.hi[(o + i) * kLd64 + o + col] = hi;
      ab.lo[(o + i) * kLd64 + o + col] = __float2bfloat16_rn(x[i] * bc - __bfloat162float(hi));
    }
  }
  __syncthreads();
  float* X = sX;  // X[0] = X_20, X[1] = X_21, X[2] = X_30, X[3] = X_31 (X = C A^-1); 4, 5 scratch
  auto Xb = [&](int i) { return X + i * 16 * kLdX; };
  float acc[2][4] = {};
  if (warp < 2) {  // Ai_10 = -Ai_11 (L_10 Ai_00);  Ai_32 = -Ai_33 (L_32 Ai_22)
    const int r = warp == 0 ? 1 : 3;
    BlockMma(acc, LBlk<Ly>{sL, r, r - 1}, AiBlk{sLA, r - 1, r - 1}, lane);
    StoreX(Xb(4 + warp), acc, lane);
    __syncwarp();
    float res[2][4] = {};
    BlockMma(res, AiBlk{sLA, r, r}, XBlk{Xb(4 + warp)}, lane);
    StoreAiBlock(sLA, ab, res, r, r - 1, true, lane);
  } else if (warp < 4) {  // X_21 = L_21 Ai_11;  X_31 = L_31 Ai_11
    BlockMma(acc, LBlk<Ly>{sL, warp, 1}, AiBlk{sLA, 1, 1}, lane);
    StoreX(Xb(warp == 2 ? 1 : 3), acc, lane);
  }
  __syncthreads();
  if (warp < 2) {  // X_r0 = L_r0 Ai_00 + L_r1 Ai_10  (r = 2, 3)
    const int r = 2 + warp;
    float x0[2][4] = {};
    BlockMma(x0, LBlk<Ly>{sL, r, 0}, AiBlk{sLA, 0, 0}, lane);
    BlockMma(x0, LBlk<Ly>{sL, r, 1}, AiBlk{sLA, 1, 0}, lane);
    StoreX(Xb(2 * warp), x0, lane);
  }
  __syncthreads();
  if (warp < 4) {  // Ai_2c = -Ai_22 X_2c;  Ai_3c = -(Ai_32 X_2c + Ai_33 X_3c)  (c = 0, 1)
    const int r = warp < 2 ? 2 : 3, c = warp & 1;
    float res[2][4] = {};
    BlockMma(res, AiBlk{sLA, r, 2}, XBlk{Xb(c)}, lane);
    if (r == 3) BlockMma(res, AiBlk{sLA, 3, 3}, XBlk{Xb(2 + c)}, lane);
    StoreAiBlock(sLA, ab, res, r, c, false, lane);
  }
}

// The workspace image of global chunk gc, head h (kda_gpu.cuh).
__device__ __forceinline__ unsigned char* ChunkImage(const Params& p, int gc, int h) {
  return p.img + (size_t(gc) * p.H + h) * kImgBytes;
}

// Where one chunk's scan operands live in shared memory (the fused kernel's regions, or one stage of
// ScanKernel's ring).
struct ScanOps {
  const unsigned char *w, *qg, *kg, *aqk;  // 128-byte-swizzled bf16 tiles
  const __nv_bfloat16* ut;                  // U^T [BV][kLd64]
  const float* gam;                         // 2^{G_last} [128]
  __nv_bfloat16* ot;                        // [8 warps][64][kLdOt]: the output's transposition
};

// ---- the scan of one chunk: V_new^T = U^T - S^T W^T;  O^T = S^T Qg^T + V_new^T Aqk^T;
//      S^T = S^T Diag(gamma) + V_new^T Kg --------------------------------------------------------
// wgmma, a warpgroup per 64 rows of S^T: S^T and V_new^T are the A operands from registers
// (mma.sync's fragment layout, which wgmma's register A shares), W, Qg, Aqk (K-major) and Kg
// (MN-major) the B operands from the swizzled tiles. Warps 0 .. BV/16 - 1; st is the warp's state
// slice (see FusedKernel), o rows [t0, t0 + rows) of the sequence's batch row b.
template <int BV>
__device__ __forceinline__ void ScanChunk(const Params& p, const ScanOps& ops, float (&st)[16][4], int b, int h, int v0,
                                          int64_t t0, int rows, int warp, int lane) {
  const int g = lane >> 2, t = lane & 3;
  const int vl = 16 * warp;
  auto desc_k = [&](const unsigned char* tile, int ks) { return Sw128Desc(SmemAddr(tile) + Sw128KStep(ks, kSwBlock), 16, 1024); };
  uint32_t a[8][4];  // S^T as bf16 A fragments over the 8 steps of 16 d
#pragma unroll
  for (int ks = 0; ks < 8; ++ks)
    a[ks][0] = PackBf16(st[2 * ks][0], st[2 * ks][1]), a[ks][1] = PackBf16(st[2 * ks][2], st[2 * ks][3]),
    a[ks][2] = PackBf16(st[2 * ks + 1][0], st[2 * ks + 1][1]), a[ks][3] = PackBf16(st[2 * ks + 1][2], st[2 * ks + 1][3]);
  float pw[8][4], o[8][4];
  WgmmaFence();
#pragma unroll
  for (int ks = 0; ks < 8; ++ks) Wgmma64x64Rs(pw, a[ks], desc_k(ops.w, ks), ks);
#pragma unroll
  for (int ks = 0; ks < 8; ++ks) Wgmma64x64Rs(o, a[ks], desc_k(ops.qg, ks), ks);
  WgmmaCommit();
  WgmmaWait<0>();
  FenceOperands(pw);
  FenceOperands(o);
  FenceOperands(a);
  uint32_t vb[4][4];  // V_new^T as bf16 A fragments over the 4 token blocks
#pragma unroll
  for (int nt = 0; nt < 8; ++nt) {
    const float2 u0 = __bfloat1622float2(
        *reinterpret_cast<const __nv_bfloat162*>(ops.ut + (vl + g) * kLd64 + 8 * nt + 2 * t));
    const float2 u1 = __bfloat1622float2(
        *reinterpret_cast<const __nv_bfloat162*>(ops.ut + (vl + g + 8) * kLd64 + 8 * nt + 2 * t));
    vb[nt >> 1][2 * (nt & 1)] = PackBf16(u0.x - pw[nt][0], u0.y - pw[nt][1]);
    vb[nt >> 1][2 * (nt & 1) + 1] = PackBf16(u1.x - pw[nt][2], u1.y - pw[nt][3]);
  }
  WgmmaFence();
#pragma unroll
  for (int kt = 0; kt < 4; ++kt) Wgmma64x64Rs(o, vb[kt], desc_k(ops.aqk, kt), 1);
  WgmmaCommit();
#pragma unroll
  for (int nt = 0; nt < 16; ++nt) {
    const float2 gm = *reinterpret_cast<const float2*>(ops.gam + 8 * nt + 2 * t);
    st[nt][0] *= gm.x, st[nt][1] *= gm.y, st[nt][2] *= gm.x, st[nt][3] *= gm.y;
  }
  WgmmaFence();
#pragma unroll
  for (int kt = 0; kt < 4; ++kt)
    Wgmma64x128RsMnB(st, vb[kt], Sw128Desc(SmemAddr(ops.kg) + kt * 16 * 128, kSwBlock, 1024), 1);
  WgmmaCommit();
  WgmmaWait<1>();
  FenceOperands(o);
  // o rows (tokens) of this chunk, through a per-warp transposition for 16-byte stores
  const int64_t obase = b * p.o_st[0] + t0 * p.o_st[1] + h * p.o_st[2] + v0 + vl;
  if (p.out_bf16) {
    __nv_bfloat16* ot = ops.ot + warp * kC * kLdOt;
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        ot[(8 * nt + 2 * t + (e & 1)) * kLdOt + g + 8 * (e >> 1)] = __float2bfloat16_rn(o[nt][e]);
    __syncwarp();
    auto* out = static_cast<__nv_bfloat16*>(p.o);
#pragma unroll
    for (int x = 0; x < 4; ++x) {
      const int pi = lane + 32 * x, r = pi >> 1, hf = pi & 1;
      if (r < rows)
        *reinterpret_cast<uint4*>(out + obase + r * p.o_st[1] + 8 * hf) =
            *reinterpret_cast<const uint4*>(ot + r * kLdOt + 8 * hf);
    }
  } else {
    auto* out = static_cast<float*>(p.o);
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int r = 8 * nt + 2 * t + (e & 1);
        if (r < rows) out[obase + r * p.o_st[1] + g + 8 * (e >> 1)] = o[nt][e];
      }
  }
  WgmmaWait<0>();
  FenceOperands(st);
  FenceOperands(vb);
}

__device__ __forceinline__ float Rcp(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

// The state slice S^T [16 v][128 d] of one scan warp, rows v0 .. v0 + 15 of (sequence n, head h):
// st[nt] holds rows v = v0 + g (+8), columns d = 8 nt + 2t (+1), as mma accumulators. The state in
// memory is [N][H][K][V], or [N][H][V][K] with p.v_first. Zero without h0 or where !active.
__device__ __forceinline__ size_t StateAt(const Params& p, int n, int h, int v, int d) {
  return (size_t(n) * p.H + h) * kK * kV + (p.v_first ? size_t(v) * kK + d : size_t(d) * kV + v);
}
__device__ __forceinline__ void LoadState(const Params& p, int n, int h, int v0, int lane, bool active, float (&st)[16][4]) {
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int nt = 0; nt < 16; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      st[nt][e] = active && p.h0 ? p.h0[StateAt(p, n, h, v0 + g + 8 * (e >> 1), 8 * nt + 2 * t + (e & 1))] : 0.f;
}
__device__ __forceinline__ void StoreState(const Params& p, int n, int h, int v0, int lane, const float (&st)[16][4]) {
  if (!p.hT) return;
  const int g = lane >> 2, t = lane & 3;
#pragma unroll
  for (int nt = 0; nt < 16; ++nt)
#pragma unroll
    for (int e = 0; e < 4; ++e) p.hT[StateAt(p, n, h, v0 + g + 8 * (e >> 1), 8 * nt + 2 * t + (e & 1))] = st[nt][e];
}

// A chunk of one head, as FusedKernel walks it.
struct ChunkAt {
  int h, b;    // head, batch row
  int64_t t0;  // its first token (a row of the [B, T, H, .] tensors)
  int rows;    // its tokens, 1 .. kC
  int gc;      // its global chunk: with h, the index of its image (prep alone)
};

// Chunk c (from 0) of a sequence of len tokens from bos, in batch row b, head h.
__device__ __forceinline__ ChunkAt ChunkOf(int h, int b, int64_t bos, int64_t len, int64_t c, int gc) {
  const int64_t left = len - c * kC;
  return ChunkAt{h, b, bos + c * kC, int(left < kC ? left : kC), gc};
}

// Prep alone walks (head, global chunk) pairs, item h * p.prep_chunks + gc, each CTA an equal share
// of them across heads and sequences (parts of sequences, one a CTA, left the last wave's SMs idle:
// H96 ran 99 chunk-times of work that fills 93). A CTA's items ascend, so the sequence that holds a
// chunk is a cursor that moves forward (and restarts at each new head, a few times a CTA at most).
struct PrepCursor {
  int64_t item;                   // h * p.prep_chunks + gc
  int h, gc, n, chunk0, nch;      // sequence n holds global chunks [chunk0, chunk0 + nch)
  int64_t bos, len;
  __device__ void Sequence(const Params& p, int m) {
    n = m;
    SeqSpan(p, m, bos, len);
    nch = int((len + kC - 1) / kC);
  }
  __device__ PrepCursor(const Params& p, int64_t first)
      : item(first), h(0), gc(0), chunk0(0) {
    if (p.prep_chunks > 0) h = int(first / p.prep_chunks), gc = int(first % p.prep_chunks);
    Sequence(p, 0);
  }
  // The chunk at `item`, stepping over the chunks that a bound counted and no sequence holds (varlen
  // without a host copy of cu_seqlens), or false once past `end`.
  __device__ bool Get(const Params& p, int64_t end, ChunkAt& out) {
    for (;;) {
      if (item >= end) return false;
      while (gc >= chunk0 + nch && n + 1 < p.N) chunk0 += nch, Sequence(p, n + 1);
      if (gc < chunk0 + nch) break;
      item += p.prep_chunks - gc, ++h, gc = 0, chunk0 = 0;  // past the last sequence: the next head
      Sequence(p, 0);
    }
    out = ChunkOf(h, p.cu ? 0 : n, bos, len, gc - chunk0, gc);
    return true;
  }
  __device__ void Advance() { ++item, ++gc; }
};

// The gate's per-head constants for raw x, channels 4 lane .. + 3 (A_log as loaded: the exponential
// waits for its use, a chunk later, so that the load's latency is not waited for where it is issued).
struct GateOf {
  float A_log, dtb[4];
  __device__ GateOf(const Params& p, int h, int lane) {
    A_log = p.gate != KDA_GATE_LOG_DECAY && p.A_log ? p.A_log[h] : 0.f;
#pragma unroll
    for (int e = 0; e < 4; ++e) dtb[e] = p.gate != KDA_GATE_LOG_DECAY && p.dt_bias ? p.dt_bias[h * kK + 4 * lane + e] : 0.f;
  }
  GateOf() = default;
};

// kPrep: only the chunk-parallel preparation (BV = 128), over a share of the (chunk, head) pairs
// (PrepCursor), storing each chunk's scan operands to its image in the workspace, for ScanKernel.
template <int BV, bool kPrep>
__global__ void __launch_bounds__(kThreads, kPrep ? kPrepCtasPerSm : 1) FusedKernel(const Params p) {
  using Ly = std::conditional_t<kPrep, PrepLayout, Layout<BV>>;
  constexpr int kNV = kV / BV;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024 - SmemAddr(smem_raw) % 1024) % 1024);  // the swizzle's alignment
  float* sG = reinterpret_cast<float*>(smem + Ly::kR1);
  float* sQa = reinterpret_cast<float*>(smem + Ly::kR1);
  float* sKa = reinterpret_cast<float*>(smem + Ly::kR2);
  float* sKb = reinterpret_cast<float*>(smem + Ly::kR3);
  unsigned char* sGraw = smem + (p.g_bf16 ? Ly::kGrawBf16 : Ly::kR2);
  auto* sAbh = reinterpret_cast<__nv_bfloat16*>(smem + Ly::kAbh);
  auto* sAbl = reinterpret_cast<__nv_bfloat16*>(smem + Ly::kAbl);
  auto* sKgam = reinterpret_cast<__nv_bfloat16*>(smem + Ly::kKgam);
  auto* sV = reinterpret_cast<__nv_bfloat16*>(smem + Ly::kV);
  float* sBeta = reinterpret_cast<float*>(smem + Ly::kBeta);
  float* sAnc = reinterpret_cast<float*>(smem + Ly::kAnc);
  float* sRn = reinterpret_cast<float*>(smem + Ly::kRn);
  float* sTot = reinterpret_cast<float*>(smem + Ly::kTot);  // [8][128]: each warp's G increase (P1)
  float* sF = reinterpret_cast<float*>(smem + Ly::kF);
  float* sGam = reinterpret_cast<float*>(smem + Ly::kGam);

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5, g = lane >> 2, t = lane & 3;
  static_assert(!kPrep || BV == kV, "the preparation builds U^T for every V column");
  // The fused kernel's CTA: (sequence n, head h, V slice vs), walking chunks 0 .. of n.
  const int vs = blockIdx.x % kNV, h = (blockIdx.x / kNV) % p.H, n = blockIdx.x / (kNV * p.H);
  const int v0 = vs * BV;
  int64_t bos = 0, len = 0;
  if (!kPrep) SeqSpan(p, n, bos, len);
  const int64_t items = kPrep ? p.prep_chunks * p.H : 0;
  const int64_t item_end = kPrep ? int64_t(blockIdx.x + 1) * items / gridDim.x : (len + kC - 1) / kC;
  PrepCursor cursor(p, kPrep ? int64_t(blockIdx.x) * items / gridDim.x : 0);
  int64_t fused_next = 0;
  // The next chunk this CTA works on, or false when it is done.
  auto next_chunk = [&](ChunkAt& out) {
    if constexpr (kPrep) {
      if (!cursor.Get(p, item_end, out)) return false;
      cursor.Advance();
      return true;
    } else {
      const int64_t i = fused_next++;
      if (i >= item_end) return false;
      out = ChunkOf(h, p.cu ? 0 : n, bos, len, i, 0);
      return true;
    }
  };

  // The chunk's first row of a [B, T, H, .] tensor, as bytes.
  auto row0 = [&](const void* base, const int64_t* st, const ChunkAt& ch, int bytes) {
    return static_cast<const unsigned char*>(base) + (ch.b * st[0] + ch.t0 * st[1] + ch.h * st[2]) * bytes;
  };
  auto issue_qkg = [&](const ChunkAt& ch) {
    constexpr int kRawLd = kPrep ? 256 : kLdQK * 2, kRawXor = kPrep ? 32 : 0;  // (Ly::Raw)
    LoadRows<256>(smem + Ly::kQraw, kRawLd, row0(p.q, p.q_st, ch, 2), p.q_st[1] * 2, ch.rows, tid, kRawXor);
    LoadRows<256>(smem + Ly::kKraw, kRawLd, row0(p.k, p.k_st, ch, 2), p.k_st[1] * 2, ch.rows, tid, kRawXor);
    if (p.g_bf16)
      LoadRows<256>(sGraw, 256, row0(p.g, p.g_st, ch, 2), p.g_st[1] * 2, ch.rows, tid);
    else
      LoadRows<512>(sGraw, 512, row0(p.g, p.g_st, ch, 4), p.g_st[1] * 4, ch.rows, tid);
  };
  auto issue_v = [&](const ChunkAt& ch) {
    LoadRows<BV * 2>(smem + Ly::kV, Ly::kLdV * 2, row0(p.v, p.v_st, ch, 2) + v0 * 2, p.v_st[1] * 2, ch.rows, tid);
  };

  constexpr int kScanWarps = BV / 16;
  float st[16][4];
  LoadState(p, n, h, v0 + 16 * warp, lane, !kPrep && warp < kScanWarps, st);

  const float lbl = p.lower_bound * kLog2e;

  // Diagnostics (built with -DKDA_PHASE_CLOCKS, bench with KDA_PROFILE=1): thread 0's clock at each
  // phase boundary, summed over the chunks: [0] waiting for inputs and the other warps, [1] P1, [2]
  // P2, [3] P3, [4] P4, [5] scan (prep alone: the next chunk's loads and W's and U^T's copies; [0]
  // then includes the loads' wait). Compiled out otherwise: switched off at run time, the counters
  // still cost 1-2% (they spilled, and every warp waited on their loads; ncu, 2026-12-06).
  long long prof[6] = {}, tick = kPhaseClocks ? clock64() : 0;
  auto mark = [&](int phase) {
    if (kPhaseClocks && p.prof && tid == 0) {
      const long long now = clock64();
      prof[phase] += now - tick, tick = now;
    }
  };
  // beta (one value a thread, tid < 64) and the gate's constants, loaded a chunk ahead into registers.
  auto load_beta = [&](const ChunkAt& ch) {
    if (tid >= ch.rows) return 0.f;
    const int64_t off = ch.b * p.beta_st[0] + (ch.t0 + tid) * p.beta_st[1] + ch.h * p.beta_st[2];
    return p.beta_bf16 ? __bfloat162float(static_cast<const __nv_bfloat16*>(p.beta)[off])
                       : static_cast<const float*>(p.beta)[off];
  };
  float beta_next = 0.f;
  GateOf gate_next;
  ChunkAt next;
  bool has_next = next_chunk(next);
  if (has_next) {  // (an empty sequence only passes h0 to hT)
    issue_qkg(next);
    CpAsyncCommit();
    if (!kPrep) issue_v(next);
    CpAsyncCommit();
    if (tid < kC) beta_next = load_beta(next);
    gate_next = GateOf(p, next.h, lane);
  }
  int chunks_done = 0;
  while (has_next) {
    const ChunkAt ch = next;
    has_next = next_chunk(next);
    const int64_t t0 = ch.t0;
    const int rows = ch.rows;
    unsigned char* const img = kPrep ? ChunkImage(p, ch.gc, ch.h) : nullptr;  // prep alone: the chunk's image
    // The gate's increment of G (log2 units) for raw x, with the constants folded:
    // lower_bound sigmoid(a (x + dtb)) log2e = lbl / (1 + 2^{c1 x + c0}).
    const float a_log = p.gate != KDA_GATE_LOG_DECAY && p.A_log ? __expf(gate_next.A_log) : 1.f, c1 = -a_log * kLog2e;
    float dtb[4], c0[4];
#pragma unroll
    for (int e = 0; e < 4; ++e) dtb[e] = gate_next.dtb[e], c0[e] = c1 * dtb[e];
    if (kPrep) mark(5);  // (prep alone: [5] issues the image's stores)
    // The cp.async groups in flight are q, k, g of chunk c and v of chunk c, in that order: P1 needs
    // the first, P4 the second, so v's load overlaps P1 to P3 (when prep alone issued it right
    // after P4, every chunk waited ~3.4k cycles for it here).
    if (kPrep) CpAsyncWait<0>();  // (nothing else in flight: v loads in P2c)
    else CpAsyncWait<1>();
    __syncthreads();  // chunk c's q, k, g landed; the previous chunk's scan is done with everything
    mark(0);

    // ---- P1: the gate and its cumsum G (log2 units), the block anchors, the row norms of q and k,
    //      beta (P1a); then (P1b), per element once: Qa = q^ 2^{G - a_r}, Ka = k^ 2^{G - a_r}, Kb = k^ 2^{z_r - G}
    //      (tf32, for P2; q^ and k^ the normalised rows) and the scan's Qg = scale q^ 2^G,
    //      Kg = k^ 2^{G_last - G}, K 2^G (bf16). Warp w: block r = w / 2, rows 16r + 8(w % 2) + it,
    //      channels 4 lane .. +3; G stays in registers, the warps' totals meet in sTot. -------------
    const int r = warp >> 1, i0 = 16 * r + 8 * (warp & 1), d4 = 4 * lane;
    float Gv[8][4];  // the gate's increments, then G
    uint2 qr[8], kr[8];
    {
#pragma unroll
      for (int it = 0; it < 8; ++it) {
        float4 x;
        if (p.g_bf16) x = Bf16x4(*reinterpret_cast<const uint2*>(reinterpret_cast<const __nv_bfloat16*>(sGraw) + (i0 + it) * 128 + d4));
        else x = *reinterpret_cast<const float4*>(reinterpret_cast<const float*>(sGraw) + (i0 + it) * 128 + d4);
        Gv[it][0] = x.x, Gv[it][1] = x.y, Gv[it][2] = x.z, Gv[it][3] = x.w;
      }
      auto cumsum = [&](auto increment) {
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          float run = 0.f;
#pragma unroll
          for (int it = 0; it < 8; ++it) {
            run += i0 + it < rows ? increment(Gv[it][e], e) : 0.f;
            Gv[it][e] = run;
          }
        }
      };
      if (p.gate == KDA_GATE_LOWER_BOUND_SIGMOID)
        cumsum([&](float x, int e) { return lbl * Rcp(1.f + Ex2(fmaf(x, c1, c0[e]))); });
      else if (p.gate == KDA_GATE_SOFTPLUS)
        cumsum([&](float x, int e) { return -a_log * kLog2e * Softplus(x + dtb[e]); });
      else
        cumsum([](float x, int) { return x * kLog2e; });
      *reinterpret_cast<float4*>(sTot + warp * 128 + d4) = make_float4(Gv[7][0], Gv[7][1], Gv[7][2], Gv[7][3]);
#pragma unroll
      for (int it = 0; it < 8; ++it) {  // R3 is overwritten by Kb after the next barrier but one
        qr[it] = *reinterpret_cast<const uint2*>(smem + Ly::kQraw + Ly::Raw(i0 + it, 2 * d4));
        kr[it] = *reinterpret_cast<const uint2*>(smem + Ly::kKraw + Ly::Raw(i0 + it, 2 * d4));
      }
    }
    if (p.l2norm) {  // row (tid >> 2) of q (tid & 1 == 0) or k, channels in eight 8-wide groups of
                     // parity (tid >> 1) & 1; k starts two groups later, so a quarter warp's reads
                     // cover all 32 banks
      const int row = tid >> 2, qk = tid & 1, par = (tid >> 1) & 1;
      const unsigned char* src = smem + (qk ? Ly::kKraw : Ly::kQraw);
      uint4 raw[8];
#pragma unroll
      for (int m = 0; m < 8; ++m)
        raw[m] = *reinterpret_cast<const uint4*>(src + Ly::Raw(row, 16 * (2 * ((m + 2 * qk) & 7) + par)));
      float part[4] = {};  // four independent chains of 16 FMAs, not one of 64
#pragma unroll
      for (int m = 0; m < 8; ++m) {
        float x[8];
        Unpack8(raw[m], x);
#pragma unroll
        for (int e = 0; e < 8; ++e) part[e & 3] = fmaf(x[e], x[e], part[e & 3]);
      }
      float ss = (part[0] + part[1]) + (part[2] + part[3]);
      ss += __shfl_xor_sync(0xffffffffu, ss, 2);
      if (!par) sRn[qk * kC + row] = rsqrtf(ss + 1e-6f);
    }
    if (tid < kC) {
      float bt = beta_next;
      if (p.beta_sigmoid) bt = (p.neg_eigval ? 2.f : 1.f) * Sigmoid(bt);
      sBeta[tid] = tid < rows ? bt : 0.f;
      if (has_next) beta_next = load_beta(next);  // consumed a chunk from now
    }
    if (has_next && next.h != ch.h) gate_next = GateOf(p, next.h, lane);
    __syncthreads();
    // G = this warp's prefix plus the totals of the warps before it; z_r and G_last from the totals.
    float Av[4], Zv[4], Lv[4];
    bool exact;
    {
      float off[4] = {}, run[4] = {};
#pragma unroll
      for (int w = 0; w < 8; ++w) {
        const float4 x = *reinterpret_cast<const float4*>(sTot + w * 128 + d4);
        run[0] += x.x, run[1] += x.y, run[2] += x.z, run[3] += x.w;
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          if (w == warp - 1) off[e] = run[e];
          if (w == 2 * r + 1) Zv[e] = run[e];
        }
      }
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        Lv[e] = run[e];
#pragma unroll
        for (int it = 0; it < 8; ++it) Gv[it][e] += off[e];
      }
      bool steep = false;
      if (!(warp & 1)) {  // the block's first row is ours: a_r
#pragma unroll
        for (int e = 0; e < 4; ++e) Av[e] = Gv[0][e], steep = steep || Av[e] - Zv[e] > kExactSpan;
        *reinterpret_cast<float4*>(sAnc + r * 128 + d4) = make_float4(Av[0], Av[1], Av[2], Av[3]);
        *reinterpret_cast<float4*>(sAnc + (4 + r) * 128 + d4) = make_float4(Zv[0], Zv[1], Zv[2], Zv[3]);
      }
      if (warp == 7) {
        const float4 gam = make_float4(Ex2(Lv[0]), Ex2(Lv[1]), Ex2(Lv[2]), Ex2(Lv[3]));
        if constexpr (kPrep)
          *reinterpret_cast<float4*>(img + kImgGam + 4 * d4) = gam;
        else
          *reinterpret_cast<float4*>(sGam + d4) = gam;
      }
      if (kPrep && tid == 0) BulkWaitRead<0>();  // the previous chunk's W and U^T: P1b overwrites them
      exact = __syncthreads_or(steep);
      if (warp & 1) {
        const float4 x = *reinterpret_cast<const float4*>(sAnc + r * 128 + d4);
        Av[0] = x.x, Av[1] = x.y, Av[2] = x.z, Av[3] = x.w;
      }
    }
    {  // P1b
      for (int x = tid; x < kTiles * 128; x += kThreads) {  // F of tile (rr, cc): 2^{a_rr - z_cc}
        int rr, cc;
        TileOf(x >> 7, rr, cc);
        sF[x] = Ex2(sAnc[rr * 128 + (x & 127)] - sAnc[(4 + cc) * 128 + (x & 127)]);
      }
      float pq[4], pk[4], pe[4];  // scale 2^{a_r}, 2^{a_r}, 2^{G_last - z_r}
#pragma unroll
      for (int e = 0; e < 4; ++e) pk[e] = Ex2(Av[e]), pq[e] = p.scale * pk[e], pe[e] = Ex2(Lv[e] - Zv[e]);
#pragma unroll
      for (int it = 0; it < 8; ++it) {
        const int i = i0 + it;
        const float rq = p.l2norm ? sRn[i] : 1.f, rk = p.l2norm ? sRn[kC + i] : 1.f;
        const float4 q4 = Bf16x4(qr[it]), k4 = Bf16x4(kr[it]);
        const float qv[4] = {q4.x * rq, q4.y * rq, q4.z * rq, q4.w * rq};
        const float kv[4] = {k4.x * rk, k4.y * rk, k4.z * rk, k4.w * rk};
        float qg[4], k2g[4], kg[4];
        if (!exact) {
          uint32_t qa[4], ka[4], kb[4];
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const float e1 = Ex2(Gv[it][e] - Av[e]), e2 = Ex2(Zv[e] - Gv[it][e]);  // both <= 1
            const float fq = qv[e] * e1, fk = kv[e] * e1, fb = kv[e] * e2;
            qa[e] = RoundTf32(fq), ka[e] = RoundTf32(fk), kb[e] = RoundTf32(fb);
            qg[e] = fq * pq[e], k2g[e] = fk * pk[e], kg[e] = fb * pe[e];
          }
          *reinterpret_cast<uint4*>(sQa + Ly::F32(i, d4)) = make_uint4(qa[0], qa[1], qa[2], qa[3]);
          *reinterpret_cast<uint4*>(sKa + Ly::F32(i, d4)) = make_uint4(ka[0], ka[1], ka[2], ka[3]);
          *reinterpret_cast<uint4*>(sKb + Ly::F32(i, d4)) = make_uint4(kb[0], kb[1], kb[2], kb[3]);
        } else {  // G, q^ and k^ in fp32 for GatedTile and ExactTile
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const float e0 = Ex2(Gv[it][e]), e3 = Ex2(Lv[e] - Gv[it][e]);  // both <= 1
            qg[e] = p.scale * qv[e] * e0, k2g[e] = kv[e] * e0, kg[e] = kv[e] * e3;
          }
          *reinterpret_cast<float4*>(sG + Ly::F32(i, d4)) = make_float4(Gv[it][0], Gv[it][1], Gv[it][2], Gv[it][3]);
          *reinterpret_cast<float4*>(sKa + Ly::F32(i, d4)) = make_float4(qv[0], qv[1], qv[2], qv[3]);
          *reinterpret_cast<float4*>(sKb + Ly::F32(i, d4)) = make_float4(kv[0], kv[1], kv[2], kv[3]);
        }
        const uint2 qg2 = make_uint2(PackBf16(qg[0], qg[1]), PackBf16(qg[2], qg[3]));
        const uint2 kg2 = make_uint2(PackBf16(kg[0], kg[1]), PackBf16(kg[2], kg[3]));
        if constexpr (kPrep) {  // straight to the image: the bulk engine has the rest to copy
          *reinterpret_cast<uint2*>(img + kImgQg + SwOff(i, d4)) = qg2;
          *reinterpret_cast<uint2*>(img + kImgQg + 2 * kSwBlock + SwOff(i, d4)) = kg2;
        } else {
          *reinterpret_cast<uint2*>(smem + Ly::kQg + SwOff(i, d4)) = qg2;
          *reinterpret_cast<uint2*>(smem + Ly::kKg + SwOff(i, d4)) = kg2;
        }
        if constexpr (!kPrep)  // (prep alone: from Ka in P2c)
          *reinterpret_cast<uint2*>(sKgam + i * kLdB + d4) = make_uint2(PackBf16(k2g[0], k2g[1]), PackBf16(k2g[2], k2g[3]));
      }
    }
    __syncthreads();
    mark(1);
    // ---- P2: the Aqk and L tiles (prep alone: Aqk straight to the image) ------------------------
    BuildTiles<Ly>(smem, kPrep ? img + kImgQg + 4 * kSwBlock : smem + Layout<BV>::kAqk, exact, warp, lane, p.scale);
    uint2 k2g[8];
    if constexpr (kPrep) {
      // ---- P2c (prep alone): K 2^G from Ka (tf32 as stored, times 2^{a_r}; exact chunks: k^ 2^G),
      //      read before P2's barrier and written after it over Ka; then v's load, under P3. --------
      float pk[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) pk[e] = Ex2(Av[e]);
#pragma unroll
      for (int it = 0; it < 8; ++it) {
        const int i = i0 + it;
        float x[4];
        if (!exact) {
          const uint4 ka = *reinterpret_cast<const uint4*>(sKa + Ly::F32(i, d4));
          const uint32_t u[4] = {ka.x, ka.y, ka.z, ka.w};
#pragma unroll
          for (int e = 0; e < 4; ++e) x[e] = __uint_as_float(u[e] & 0xffffe000u) * pk[e];
        } else {
          const float4 gi = *reinterpret_cast<const float4*>(sG + Ly::F32(i, d4));
          const float4 ki = *reinterpret_cast<const float4*>(sKb + Ly::F32(i, d4));
          x[0] = ki.x * Ex2(gi.x), x[1] = ki.y * Ex2(gi.y), x[2] = ki.z * Ex2(gi.z), x[3] = ki.w * Ex2(gi.w);
        }
        k2g[it] = make_uint2(PackBf16(x[0], x[1]), PackBf16(x[2], x[3]));
      }
    }
    __syncthreads();
    if constexpr (kPrep) {
#pragma unroll
      for (int it = 0; it < 8; ++it) *reinterpret_cast<uint2*>(sKgam + (i0 + it) * kLdB + d4) = k2g[it];
      issue_v(ch);
      CpAsyncCommit();
    }
    mark(2);
    if (!kPrep && has_next) issue_qkg(next);  // R2 and R3 are dead until the next chunk
    if (!kPrep) CpAsyncCommit();

    // ---- P3: Ab = Akk diag(beta) split into bf16 hi + lo, Akk = (I + L)^{-1} (warps 0-3) ---------
    Invert<Ly>(smem, tid);
    if (kPrep) CpAsyncWait<0>();  // v of chunk c
    else CpAsyncWait<1>();        // v of chunk c (q, k, g of chunk c + 1 may be in flight)
    __syncthreads();
    mark(3);

    // ---- P4: W = Ab (K 2^G) [64][128];  U^T = V^T Ab^T [BV][64] (prep alone: to the image) -------
    unsigned char* const w_out = smem + Ly::kW;
    __nv_bfloat16* const ut_out = reinterpret_cast<__nv_bfloat16*>(smem + Ly::kUt);
    {
      const int mt = warp & 3, nh = warp >> 2;
      float acc[8][4] = {};
#pragma unroll
      for (int kb = 0; kb < 4; ++kb) {
        if (kb > mt) break;  // Ab is lower triangular
        uint32_t ah[4], al[4];
        LoadA(ah, sAbh, kLd64, 16 * mt, 16 * kb, lane);
        LoadA(al, sAbl, kLd64, 16 * mt, 16 * kb, lane);
#pragma unroll
        for (int np = 0; np < 4; ++np) {
          uint32_t bb[4];
          LoadBKN(bb, sKgam, kLdB, 16 * kb, 64 * nh + 16 * np, lane);
          Mma(acc[2 * np], ah, bb[0], bb[1]);
          Mma(acc[2 * np], al, bb[0], bb[1]);
          Mma(acc[2 * np + 1], ah, bb[2], bb[3]);
          Mma(acc[2 * np + 1], al, bb[2], bb[3]);
        }
      }
#pragma unroll
      for (int nt = 0; nt < 8; ++nt)
#pragma unroll
        for (int hh = 0; hh < 2; ++hh)
          *reinterpret_cast<uint32_t*>(w_out + SwOff(16 * mt + g + 8 * hh, 64 * nh + 8 * nt + 2 * t)) =
              PackBf16(acc[nt][2 * hh], acc[nt][2 * hh + 1]);
    }
    {
      constexpr int kSplit = 8 / kScanWarps;  // warps per 16-row block of U^T
      const int vb = warp % kScanWarps, part = warp / kScanWarps;
      float acc[4][2][4] = {};
#pragma unroll
      for (int np = 0; np < 4; ++np) {
        if (np % kSplit != part) continue;
#pragma unroll
        for (int kb = 0; kb <= np; ++kb) {
          uint32_t a[4], bh[4], bl[4];
          LoadAT(a, sV, Ly::kLdV, 16 * vb, 16 * kb, lane);
          LoadBNK(bh, sAbh, kLd64, 16 * np, 16 * kb, lane);
          LoadBNK(bl, sAbl, kLd64, 16 * np, 16 * kb, lane);
          Mma(acc[np][0], a, bh[0], bh[1]);
          Mma(acc[np][0], a, bl[0], bl[1]);
          Mma(acc[np][1], a, bh[2], bh[3]);
          Mma(acc[np][1], a, bl[2], bl[3]);
        }
#pragma unroll
        for (int hf = 0; hf < 2; ++hf)
#pragma unroll
          for (int hh = 0; hh < 2; ++hh)
            *reinterpret_cast<uint32_t*>(ut_out + (16 * vb + g + 8 * hh) * kLd64 + 16 * np + 8 * hf + 2 * t) =
                PackBf16(acc[np][hf][2 * hh], acc[np][hf][2 * hh + 1]);
      }
    }
    FenceProxyAsync();  // W, Qg, Kg, Aqk (st.shared) -> the scan's wgmma reads, or the bulk copies
    __syncthreads();
    mark(4);
    if constexpr (kPrep) {  // every region but W's and U^T's is dead until the next chunk
      if (tid == 0) {
        BulkStore(img + kImgW, SmemAddr(smem + Ly::kW), 2 * kSwBlock);
        BulkStore(img + kImgUt, SmemAddr(smem + Ly::kUt), kV * kLd64 * 2);
        BulkCommit();
        if (has_next && !p.g_bf16) BulkWaitRead<0>();  // fp32 g lands over U^T's last rows
      }
      if (!p.g_bf16) __syncthreads();
      if (has_next) issue_qkg(next);
    } else if (has_next) {
      issue_v(next);
    }
    CpAsyncCommit();

    if constexpr (!kPrep) {
      if (warp < kScanWarps) {
        using L = Layout<BV>;
        const ScanOps ops{smem + L::kW, smem + L::kQg, smem + L::kKg, smem + L::kAqk, ut_out, sGam,
                          reinterpret_cast<__nv_bfloat16*>(smem + L::kOt)};
        ScanChunk<BV>(p, ops, st, ch.b, h, v0, t0, rows, warp, lane);
      }
    }
    mark(5);
    ++chunks_done;
  }
  CpAsyncWait<0>();
  if (kPrep && tid == 0) BulkWait<0>();
  if (kPhaseClocks && p.prof && tid == 0) {
    for (int i = 0; i < 6; ++i) atomicAdd(p.prof + i, (unsigned long long)prof[i]);
    atomicAdd(p.prof + 6, (unsigned long long)chunks_done);
  }
  if (!kPrep && warp < kScanWarps) StoreState(p, n, h, v0 + 16 * warp, lane, st);
}

// The scan alone (the prep + scan variant): CTA (sequence, head, V slice) walks its sequence's chunk
// images (written by FusedKernel<kV, true>) through a ring of stages in shared memory, one bulk copy
// each of W..Aqk, its U^T rows and gamma, and applies ScanChunk. BV / 16 warps, all of them scan warps.
template <int BV>
struct ScanRing {
  static constexpr int kGam = kImgUt + BV * kLd64 * 2;      // the stage's U^T holds this slice's rows
  static constexpr int kBytesIn = kGam + kK * 4;            // what lands a chunk
  static constexpr int kStage = Align1k(kBytesIn);
  static constexpr int kStages = BV == 64 ? 3 : 2;
  static constexpr int kOt = kStages * kStage;
  static constexpr int kBar = kOt + (BV / 16) * kC * kLdOt * 2;
  static constexpr int kBytes = kBar + kStages * 8;
  static_assert(kBytes + 1024 <= 232448, "over the sm_90 opt-in shared memory (with 1 KiB to align)");
};

// The sequence that the CTAs of rank `slot` scan: the slot-th longest (ties by index) in a varlen
// batch of up to kSortedSeqs sequences, slot itself otherwise. Why: the CTAs go out in index order, so
// a long sequence placed last started in the last wave and alone set the end (the bench's varlen
// batch of 6 x 96 heads, one scan CTA an SM: 107 chunk-times in the given order, 99 longest first,
// 95 the bound). Past kSortedSeqs the many short jobs even out by themselves. `scratch` holds
// kSortedSeqs ints of shared memory, free again on return.
constexpr int kSortedSeqs = 64;
__device__ int LongestFirst(const Params& p, int slot, int* scratch) {
  if (!p.cu || p.N < 2 || p.N > kSortedSeqs) return slot;
  for (int m = threadIdx.x; m < p.N; m += blockDim.x) {
    int64_t bos, len;
    SeqSpan(p, m, bos, len);
    scratch[m] = int(len);
  }
  __syncthreads();
  __shared__ int chosen;
  for (int m = threadIdx.x; m < p.N; m += blockDim.x) {
    int rank = 0;
    for (int j = 0; j < p.N; ++j) rank += scratch[j] > scratch[m] || (scratch[j] == scratch[m] && j < m);
    if (rank == slot) chosen = m;
  }
  __syncthreads();
  return chosen;
}

template <int BV>
__global__ void __launch_bounds__(BV * 2, 1) ScanKernel(const Params p) {
  using Ring = ScanRing<BV>;
  constexpr int kNV = kV / BV;
  extern __shared__ __align__(1024) unsigned char smem_raw[];
  unsigned char* smem = smem_raw + ((1024 - SmemAddr(smem_raw) % 1024) % 1024);  // the swizzle's alignment
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int vs = blockIdx.x % kNV, h = (blockIdx.x / kNV) % p.H;
  const int n = LongestFirst(p, blockIdx.x / (kNV * p.H), reinterpret_cast<int*>(smem));
  const int v0 = vs * BV;
  const SeqInfo seq = GetSeq(p, n);
  const int nchunks = int((seq.len + kC - 1) / kC);
  float st[16][4];
  LoadState(p, n, h, v0 + 16 * warp, lane, true, st);

  const uint32_t bar0 = SmemAddr(smem + Ring::kBar);
  if (tid == 0) {
    for (int s = 0; s < Ring::kStages; ++s) BarInit(bar0 + 8 * s, 1);
    BarInitFence();
  }
  __syncthreads();
  auto issue = [&](int c) {  // chunk c's operands into stage c % kStages (thread 0)
    if (c >= nchunks) return;
    const unsigned char* rec = ChunkImage(p, seq.chunk0 + c, h);
    const uint32_t dst = SmemAddr(smem + (c % Ring::kStages) * Ring::kStage), bar = bar0 + 8 * (c % Ring::kStages);
    BarArriveExpectTx(bar, Ring::kBytesIn);
    BulkLoad(dst, rec, kImgUt, bar);
    BulkLoad(dst + kImgUt, rec + kImgUt + v0 * kLd64 * 2, BV * kLd64 * 2, bar);
    BulkLoad(dst + Ring::kGam, rec + kImgGam, kK * 4, bar);
  };
  if (tid == 0)
    for (int c = 0; c < Ring::kStages; ++c) issue(c);
  for (int c = 0; c < nchunks; ++c) {
    BarWait(bar0 + 8 * (c % Ring::kStages), (c / Ring::kStages) & 1);
    const unsigned char* base = smem + (c % Ring::kStages) * Ring::kStage;
    const ScanOps ops{base + kImgW, base + kImgQg, base + kImgQg + 2 * kSwBlock, base + kImgQg + 4 * kSwBlock,
                      reinterpret_cast<const __nv_bfloat16*>(base + kImgUt), reinterpret_cast<const float*>(base + Ring::kGam),
                      reinterpret_cast<__nv_bfloat16*>(smem + Ring::kOt)};
    const ChunkAt ch = ChunkOf(h, seq.b, seq.bos, seq.len, c, 0);
    ScanChunk<BV>(p, ops, st, ch.b, h, v0, ch.t0, ch.rows, warp, lane);
    __syncthreads();  // every warp is done with the stage (ScanChunk waits for its wgmma)
    if (tid == 0) issue(c + Ring::kStages);
  }
  StoreState(p, n, h, v0 + 16 * warp, lane, st);
}

// kernel<<<ctas, threads, bytes + 1 KiB (to align the swizzled tiles)>>>(p), raising the kernel's
// shared-memory limit on its first launch (the attribute is per function and process).
template <auto kernel>
cudaError_t LaunchWithSmem(unsigned ctas, int threads, int bytes, const Params& p, cudaStream_t stream) {
  static bool configured = false;
  if (!configured) {
    if (cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes + 1024);
        e != cudaSuccess)
      return e;
    configured = true;
  }
  kernel<<<ctas, threads, bytes + 1024, stream>>>(p);
  return cudaGetLastError();
}

template <int BV>
cudaError_t Launch(const Params& p, cudaStream_t stream) {
  return LaunchWithSmem<FusedKernel<BV, false>>(unsigned(p.N) * p.H * (kV / BV), kThreads, Layout<BV>::kBytes, p, stream);
}

template <int BV>
cudaError_t LaunchPrepScan(const Params& p, cudaStream_t stream) {
  if (p.prep_ctas > 0)  // (no chunks at all: the scan only passes h0 to hT)
    if (cudaError_t e = LaunchWithSmem<FusedKernel<kV, true>>(unsigned(p.prep_ctas), kThreads,
                                       PrepLayout::kBytes, p, stream);
        e != cudaSuccess)
      return e;
  return LaunchWithSmem<ScanKernel<BV>>(unsigned(p.N) * p.H * (kV / BV), BV * 2, ScanRing<BV>::kBytes, p, stream);
}

}  // namespace

cudaError_t LaunchFused(const Params& p, int slices, cudaStream_t stream) {
  return slices == 2 ? Launch<64>(p, stream) : Launch<128>(p, stream);
}

cudaError_t LaunchPrepScan(const Params& p, int slices, cudaStream_t stream) {
  return slices == 2 ? LaunchPrepScan<64>(p, stream) : LaunchPrepScan<128>(p, stream);
}

}  // namespace longhaul::kda::gpu
