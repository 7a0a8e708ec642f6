// mla/split_reference.h: the CPU model of the GPU's two-kernel split-KV decode, in float64: the
// schedule (schedule.h's rule, materialised), the split kernel's per-split partials (online softmax
// over 64-token KV tiles, in the base-2 domain the GPU uses) and the combine step.
//
// Uses: tests that split + combine equals the direct reference (reference.h) for any split
// boundaries, including empty ranges; tests of the schedule (SM fill, no empty split); a readable
// statement of exactly what decode.cu and combine.cu compute.
//
// Math. Per row (b, i, h), with a split covering keys [t0, t1) and the row seeing keys < n
// (VisibleKeys), c = scale * log2(e), x_t = c q.K_t (so exp(scale q.K_t) = 2^(x_t)):
//   split kernel, for each tile [u, u+64) of [t0, min(t1, n)), in order, starting m = -inf, l = 0,
//   O = 0:   m' = max(m, max_t x_t);  r = (m' == -inf ? 0 : m')
//            l  = l 2^(m - r) + sum_t 2^(x_t - r);  O = O 2^(m - r) + sum_t 2^(x_t - r) V_t;  m = m'
//   partial  (m, l, O): running max (base-2, scaled), sum, UNNORMALISED output (the GPU stores
//            O / l in fp16 and weighs it by l in the combine: the same in exact arithmetic).
//   combine  M = max_j m_j;  L = sum_j l_j 2^(m_j - M);  o = sum_j O_j 2^(m_j - M) / L;
//            lse = (M + log2 L) ln 2   (natural log, as reference.h);  M = -inf: o = 0, lse = -inf.
#pragma once

#include <cstdint>
#include <vector>

#include "mla/reference.h"

namespace longhaul::mla {

struct Split {
  int b = 0, part = 0, slot = 0;
  int begin = 0, end = 0;  // tokens [begin, end) of entry b
};

struct Schedule {
  int m_blocks = 0;  // CTAs along the rows of one entry
  int parts = 0;     // P: the grid's y
  int parts_used = 0;  // P': parts that get tokens
  std::vector<int64_t> cum;  // [B+1] prefix sums of seqlens
  int64_t equal = 0;         // the length of every entry, 0 where they differ (CutParts)
  std::vector<int> first_b;  // [P] the first entry with tokens in part p (B if none)
  std::vector<int> nsplits;  // [B]
  std::vector<Split> splits; // in (part, entry) order, as the CTAs of one m-block meet them
  int64_t slots = 0;         // workspace slots (NumSlots)
  // CTAs with at least one split: m_blocks * P'.
  int busy_ctas() const { return m_blocks * parts_used; }
};

// The schedule the GPU uses. parts_override > 0 replaces P (1: the single-split path).
Schedule MakeSchedule(int B, int s_q, int H, const std::vector<int>& seqlens, int num_sms,
                      int parts_override = 0);

// One split's partial for one row.
struct Partial {
  double m = 0, l = 0;  // m = -inf for no keys
  std::vector<double> o;  // [512], unnormalised
};
Partial SplitPartial(const Problem& p, int b, int i, int h, int t0, int t1);

// Merges partials into o [512] and the natural-log lse.
void Combine(const std::vector<Partial>& parts, double* o, double* lse);

// Attention computed as split partials + combine. bounds[b] = {t_0 = 0 <= t_1 <= ... <= t_n = S_b}
// (equal neighbours are empty splits; an entry may have one split {0, S_b} or, with S_b = 0, none
// besides {0, 0}).
Result SplitAttention(const Problem& p, const std::vector<std::vector<int>>& bounds);
// The same with the splits of a Schedule.
Result SplitAttention(const Problem& p, const Schedule& s);

}  // namespace longhaul::mla
