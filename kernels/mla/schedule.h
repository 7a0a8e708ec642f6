// mla/schedule.h: the split-KV schedule of the MLA decode, as pure integer functions that the host
// (split_reference.cc, the tests, the launcher's workspace size) and the GPU kernels (decode.cu,
// combine.cu) share, so that both sides agree on every split by construction. Plain C++, no CUDA
// headers: under nvcc the functions are __host__ __device__.
//
// Uses: split_reference.{h,cc} (MakeSchedule, the CPU model of the two kernels), mla_cuda.cu (the
// grid and the workspace), decode.cu (which also finds each part's entries), combine.cu.
//
// ---- The rule ---------------------------------------------------------------------------------
// Rows. The s_q * H query rows of one batch entry are packed s-major (row R = s * H + h, FlashMLA's
// q_seq_per_hk) and cut into m-blocks of kBlockM = 64 rows: m_blocks = ceil(s_q H / 64). Every
// m-block reads the whole KV range of its split (the KV tile is shared by all 64 rows: MQA).
//
// Parts. The grid is (m_blocks, P) CTAs with P = max(1, floor(num_sms / m_blocks)): one CTA per SM
// when m_blocks divides num_sms (132 = 1*132 = 2*66 = 4*33 = 3*44 ...). The KV work of the whole
// batch is the concatenation of the entries' token ranges, W = sum_b S_b tokens (cum[b] = its
// prefix sums). Parts are whole 64-token pages of that line: with U = ceil(W / 64) pages and
// T = 64 ceil(U / P) tokens a part, part p owns [p T, min((p+1) T, W)), and P' = ceil(U / ceil(U /
// P)) <= P parts get work (parts p >= P' exit at once). Every part but the last has T tokens, the
// last 1 to T; no part is empty, and none has more tiles than the fewest the longest part of any
// cut into P can have. Where the entries' lengths are multiples of 64 every split starts on a page
// (the TMA path, no masked rows), and P' may leave a few SMs idle: at B=1 H64 S8192 s_q1 P' = 128
// parts of one page (4 of 132 SMs idle), where token-exact parts (132 of 62-63 tokens, as this rule
// was until 2026-12-06) took 23.9-24.1 us against 23.4-23.6 on an H200, and s_q2 and s_q4 gained
// 0.4 and 1.5 us; on an H100 it was a wash (+0.2, +0.5, -0.25 us; BENCHMARKS.md). FlashMLA's
// 64-token granularity and fixed overhead give 64 splits, half the machine. (That shape now runs
// in halves, HalvesFor below: 64 parts of two pages, each in two CTAs, so the grid is (m_blocks,
// P / 2, 2) there.)
// Where every entry has the same length and M <= 32, parts of whole entries may replace the page
// cut (CutParts below): at B128 H16 S8192 each entry then has one split and nothing is combined.
//
// Splits. A part's range crosses entry boundaries: the piece of entry b inside part p is one
// split, (b, p). Entry b has n_b = PartOf(cum[b+1]-1) - PartOf(cum[b]) + 1 splits (0 if S_b = 0),
// in part order; a split's token range is never empty. An entry with n_b = 1 is written (bf16 o,
// LSE) by the decode kernel itself; one with n_b >= 2 leaves fp32 partials in slot b + p of the
// workspace (injective: p(b+1) starts >= p(b) ends), which the combine kernel merges; one with
// S_b = 0 is written by the combine kernel (o = 0, LSE = -inf).
//
// What "empty" can still mean: with causal masking a CTA's rows may see none of its split's keys
// (prefill: query s of m-block mb sees keys 0..s only; decode with S_b < s_q). That CTA runs zero
// KV tiles and writes m = -inf, l = 0 (or o = 0, LSE = -inf directly): a split range is never
// empty, but its visible part for some rows may be.
//
// Examples (132 SMs): B1 H64 S8192 s_q1: halves (HalvesFor), P = 66, P' = 64 splits of two pages,
// each in two CTAs (128 of 132 SMs busy). s_q2: M=128, 2 x 66, P' = 64 of two pages. s_q4: 4 x 33,
// P' = 32 of four. B128 H16 S8192: 1 x 132, W = 1M tokens, 128 parts of one entry (the page cut
// would be T = 125 pages, each entry in 2 or 3 splits). B128 H128 s_q1: 2 x 66 (T = 249 pages);
// s_q2: 4 x 33 (T = 497): the page cut (M > 32). Prefill s_q = S = 8192, H64: m_blocks = 8192 >
// 132, so P = 1: one split per entry, no partials, the grid is 8192 CTAs.
#pragma once

#include <stdint.h>

#if defined(__CUDACC__)
#define MLA_HD __host__ __device__ __forceinline__
#else
#define MLA_HD inline
#endif

namespace longhaul::mla {

constexpr int kDimLatent = 512;  // c_kv: also V
constexpr int kDimRope = 64;     // k_rope
constexpr int kDimQK = 576;      // a KV row / a q row
constexpr int kDimV = 512;       // the output row
constexpr int kPageSize = 64;    // tokens per page of the paged cache
constexpr int kBlockM = 64;      // query rows per CTA
constexpr int kBlockN = 64;      // tokens per KV tile

// Keys that query i (0 <= i < s_q) of an entry with S_b keys sees: 0 .. S_b - s_q + i when causal
// (the queries are the last s_q positions of the sequence), all S_b otherwise. Clamped to [0, S_b].
MLA_HD int VisibleKeys(int S_b, int s_q, int i, bool causal) {
  if (!causal) return S_b;
  const int n = S_b - s_q + i + 1;
  return n < 0 ? 0 : (n > S_b ? S_b : n);
}

// Pages (of kPageSize tokens) that hold `tokens` tokens.
MLA_HD int64_t PagesOf(int64_t tokens) { return (tokens + kPageSize - 1) / kPageSize; }

MLA_HD int MBlocks(int s_q, int H) { return (s_q * H + kBlockM - 1) / kBlockM; }

// P: parts per m-block for the shape (the grid's y).
MLA_HD int PartsForShape(int s_q, int H, int num_sms) {
  const int p = num_sms / MBlocks(s_q, H);
  return p < 1 ? 1 : p;
}

// Halves: 2 where each part's V columns go to two CTAs (decode.cu's kHalves), else 1. Where the rows
// take four row groups (M > 32) and the cache's capacity over P leaves at most one tile a part (B1
// H64 S8192 s_q1: 62 tokens), the schedule's own P (mla_cuda.cu keeps a forced one) becomes P / 2
// parts of two tiles, each run by two CTAs that compute the same S and P and split PV, the partial
// and so the combine's reads by V's column halves: the costs a CTA pays whatever its work (Q, the
// seqlens, the partial's store) are spread over two tiles, and every SM stays busy. On an H200
// (2026-12-06, BENCHMARKS.md): B1 s_q1 22.0 us against 23.4-23.6 with 128 parts of one page and
// 22.3-22.5 with 64 parts of two (half the SMs idle). Where parts already hold two tiles or more,
// halving lost (s_q2: 24.5-24.6 against 24.3-24.4 us; s_q4: 31.6 against 29.9).
MLA_HD int HalvesFor(int M, int P, int64_t capacity_tokens) {
  return M > 2 * 16 && P > 1 && capacity_tokens / P <= kBlockN ? 2 : 1;
}

// The cut of the W-token line into parts, computed once where W is known (each decode CTA, each
// combine thread, the CPU model) and passed to the functions below, so that none re-derives T with
// a 64-bit division of its own: T tokens a part, a whole number of pages, and `parts` = P' <= P of
// them get work (W = 0: none). The page cut: T = 64 ceil(U / P) of U = ceil(W / 64) pages, and
// P' = ceil(U / ceil(U / P)).
struct PartCut {
  int64_t W, T;
  int parts;
};
// The cut the kernels use. Where all B > 1 entries hold `equal` tokens, a multiple of the page (0:
// the lengths differ, or the kernel does not cut whole entries), parts of ceil(B / P) whole entries
// instead, when such a part is at most 8 pages and 1/16 longer than the page cut's: every entry
// then has one split, written by decode itself, so no partial is stored and the combine merges
// nothing. What that saves is about fixed (the combine pass, the partials of the entries that
// parts' ends cut), what it costs is the added pages, hence a bound in pages. Measured at B128
// S8192 (whole entries against the page cut, BENCHMARKS.md 2026-12-07): H16 -1.7% on an H100
// (407.7-408.9 us against 414.9-415.6, four rounds each; -1.2% in a later call, this form:
// 422.9-423.1 against 428.0-428.3; -2.5% on an H200 the day before, 294.3 against 301.8, from 128
// page-cut parts that fall on entries); H128 s_q1, 7 pages more a part, 526.4-527.1 against
// 525.6-527.2; H128 s_q2, 15 more, 2.5-3.5% slower. Only the mma.sync kernels
// (M <= kWholeEntriesMaxRows) cut whole entries: in the wgmma kernels the test alone cost prefill
// (B = 1, where the cut cannot change) 2%, from code generation (7,749 against 7,610 us, the means
// of eight runs each, on an H100). Lengths that differ keep the page cut: whole entries would need
// a cut that is not T-periodic, which PartOf could not invert. (T stays pages times 64 in both
// cuts: a T that ptxas could not see as a multiple of 64 cost decode.cu's wgmma kernels 12-64 bytes
// of spills.)
inline constexpr int kWholeEntriesMaxRows = 32;  // M; the kernels with one or two row groups
inline constexpr int64_t kEntryCutSlackPages = 8;
MLA_HD PartCut CutParts(int64_t W, int P, int B, int64_t equal) {
  if (W <= 0) return {0, kPageSize, 0};
  const int64_t pages = PagesOf(W);
  int64_t pages_a_part = (pages + P - 1) / P;
  if (B > 1 && equal > 0 && equal % kPageSize == 0 && W == B * equal) {
    const int64_t entry_pages = (B + P - 1) / P * (equal / kPageSize);  // (the parts: ceil(B / per))
    if (entry_pages <= pages_a_part + kEntryCutSlackPages && 16 * entry_pages <= 17 * pages_a_part)
      pages_a_part = entry_pages;
  }
  return {W, pages_a_part * kPageSize, int((pages + pages_a_part - 1) / pages_a_part)};
}

// First token (on the concatenated line) of part p; PartStart(parts) = W.
MLA_HD int64_t PartStart(int p, const PartCut& cut) {
  const int64_t x = int64_t(p) * cut.T;
  return x < cut.W ? x : cut.W;
}

// The part that owns token x (0 <= x < W).
MLA_HD int PartOf(int64_t x, const PartCut& cut) { return int(x / cut.T); }

// Splits of the entry whose tokens are [c0, c1) on the line.
MLA_HD int SplitsOf(int64_t c0, int64_t c1, const PartCut& cut) {
  return c1 <= c0 ? 0 : PartOf(c1 - 1, cut) - PartOf(c0, cut) + 1;
}

// Workspace slot of split (b, p), and the slots to allocate (0 when no entry can be split).
MLA_HD int SlotOf(int b, int p) { return b + p; }
MLA_HD int64_t NumSlots(int B, int P) { return P <= 1 ? 0 : int64_t(B) + P - 1; }

// ---- Workspace layout (device memory; all offsets 256-byte aligned) ----------------------------
//   cum        int64 [B+2]            prefix sums of seqlens, then (B > 1, M <= 32) the length
//                                     every entry has (0 where they differ: CutParts' `equal`),
//                                     written by the decode kernel's CTA (0, 0) for the combine
//   ml         fp32  [slots][M][2]    per split and row: running max m (base 2, scaled) and sum l
//   opart      fp16  [slots][M][512]  per split and row: the split's normalised output O / l
// with M = s_q * H. The partials are what the decode kernel leaves and the combine kernel reads.
// Why 16 bits and normalised: at B1 H64 the partials (128 splits x 64 rows x 512) weigh about as
// much as the KV itself (8.4 MB against 9.4; fp32 would be 16.8). O / l is a convex combination of V
// rows, so it lies in V's range; fp16, not bf16: bf16's rounding (2^-8 relative) of partials that
// cancel in the merge took a serving-mix row past the check's 2^-8 max_row|ref| term, fp16's (2^-11)
// is negligible. The cost: V entries must stay below fp16's 65504 in magnitude.
struct WorkspaceLayout {
  int64_t cum, ml, opart, bytes;
};
MLA_HD int64_t AlignUp256(int64_t x) { return (x + 255) / 256 * 256; }
MLA_HD WorkspaceLayout MakeWorkspaceLayout(int B, int s_q, int H, int P) {
  const int64_t M = int64_t(s_q) * H, slots = NumSlots(B, P);
  WorkspaceLayout w;
  w.cum = 0;
  w.ml = w.cum + AlignUp256((int64_t(B) + 2) * 8);
  w.opart = w.ml + AlignUp256(slots * M * 2 * 4);
  w.bytes = w.opart + AlignUp256(slots * M * kDimV * 2);
  return w;
}

}  // namespace longhaul::mla
