// The split-KV CPU model: split partials + combine equal the direct reference for many split
// counts (1, several, empty ranges), and the schedule's properties (128-132 of 132 SMs busy at the
// target shapes, parts of whole pages, never an empty split, slots unique, every token covered once).
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "mla/mla_testing.h"
#include "mla/reference.h"
#include "mla/split_reference.h"

namespace longhaul::mla {
namespace {

using testing::Case;
using testing::MakeRandom;
using testing::MaxRelErr;

// n splits of [0, S): random cut points (sorted, repeats allowed: empty ranges).
std::vector<int> RandomBounds(int S, int n, std::mt19937_64& rng) {
  std::vector<int> t = {0};
  std::uniform_int_distribution<int> u(0, S);
  std::vector<int> cuts;
  for (int j = 0; j < n - 1; ++j) cuts.push_back(u(rng));
  std::sort(cuts.begin(), cuts.end());
  t.insert(t.end(), cuts.begin(), cuts.end());
  t.push_back(S);
  return t;
}

TEST(MlaSplit, SplitCombineEqualsDirectManySplitCounts) {
  std::mt19937_64 rng(5);
  for (double sd : {0.1, 1.0})
    for (int s_q : {1, 2, 4}) {
      Case c;
      c.B = 3, c.s_q = s_q, c.H = 2, c.seqlens = {300, 1, 129}, c.q_sd = sd;
      auto in = MakeRandom(c, 40 + s_q);
      const Result ref = Attention(in.paged);
      for (int n : {1, 2, 3, 5, 7, 16, 64, 301}) {
        std::vector<std::vector<int>> bounds;
        for (int S : c.seqlens) bounds.push_back(RandomBounds(S, n, rng));
        const Result r = SplitAttention(in.paged, bounds);
        const double eo = MaxRelErr(ref.o, r.o), el = MaxRelErr(ref.lse, r.lse);
        EXPECT_LT(eo, 1e-12) << "sd " << sd << " s_q " << s_q << " splits " << n;
        EXPECT_LT(el, 1e-12) << "sd " << sd << " s_q " << s_q << " splits " << n;
      }
    }
}

// Hand-placed empty ranges: at the start, in the middle, at the end, and splits that fall wholly
// past a causal row's last key; an entry with S_b = 0 ({0, 0}).
TEST(MlaSplit, EmptyRangesAndFullyMaskedSplits) {
  Case c;
  c.B = 3, c.s_q = 4, c.H = 3, c.seqlens = {200, 3, 0};
  auto in = MakeRandom(c, 77);
  const Result ref = Attention(in.paged);
  const std::vector<std::vector<int>> bounds = {{0, 0, 0, 64, 64, 197, 198, 200, 200},
                                                {0, 0, 1, 1, 2, 3, 3},
                                                {0, 0}};
  const Result r = SplitAttention(in.paged, bounds);
  EXPECT_LT(MaxRelErr(ref.o, r.o), 1e-12);
  EXPECT_LT(MaxRelErr(ref.lse, r.lse), 1e-12);
  // Entry 1 (S = 3, s_q = 4): row 0 sees nothing, rows 1..3 see 1..3 keys.
  EXPECT_TRUE(std::isinf(r.lse[3 * 4 * 1 + 0]));
  EXPECT_TRUE(std::isfinite(r.lse[3 * 4 * 1 + 3]));
}

// A partial's fields: one tile of two keys with scores (in base 2) x = (1, 0): m = 1, l = 1.5.
TEST(MlaSplit, PartialIsRunningMaxSumUnnormalisedOutput) {
  std::vector<float> q(kDimQK, 0.f), kv(2 * kDimQK, 0.f);
  q[0] = 1, kv[0] = 1, kv[kDimQK + 1] = 2;
  Problem p;
  p.q = q.data();
  p.kv.data = kv.data(), p.kv.stride_outer = 2 * kDimQK, p.kv.capacity = 2;
  p.seqlens = {2};
  p.scale = std::log(2.0);  // scale * log2(e) = 1
  const Partial a = SplitPartial(p, 0, 0, 0, 0, 2);
  EXPECT_NEAR(a.m, 1.0, 1e-15);
  EXPECT_NEAR(a.l, 1.5, 1e-15);
  EXPECT_NEAR(a.o[0], 1.0, 1e-15);  // 2^(1-1) * 1
  EXPECT_NEAR(a.o[1], 1.0, 1e-15);  // 2^(0-1) * 2
  double o[kDimV], lse;
  Combine({a}, o, &lse);
  EXPECT_NEAR(lse, std::log(3.0), 1e-15);  // ln(e^{ln2} + e^0) = ln 3
  const Partial e = SplitPartial(p, 0, 0, 0, 1, 1);  // empty range
  EXPECT_TRUE(std::isinf(e.m) && e.m < 0);
  EXPECT_EQ(e.l, 0.0);
  Combine({e, a, e}, o, &lse);
  EXPECT_NEAR(lse, std::log(3.0), 1e-15);
  Combine({e}, o, &lse);
  EXPECT_TRUE(std::isinf(lse) && lse < 0);
  EXPECT_EQ(o[0], 0.0);
}

PartCut PageCut(int64_t W, int P) { return CutParts(W, P, 1, 0); }

// Every token of every entry in exactly one split, in order; no split empty; slots unique and
// inside the workspace; every part but the last of T = CutParts(...).T tokens, the last of 1 to T:
// whole pages, no part more than ceil(pages / P) of them (the page cut), or ceil(B / P) whole entries
// of equal length, at most 1/16 longer than the page cut's parts, each entry one split (the entry
// cut); nsplits consistent.
void CheckScheduleInvariants(const Schedule& s, const std::vector<int>& seqlens) {
  const int B = int(seqlens.size());
  std::vector<int> covered(B, 0), count(B, 0);
  std::set<int> slots;
  std::vector<int64_t> part_tokens(s.parts_used, 0);
  for (const Split& sp : s.splits) {
    ASSERT_LT(sp.begin, sp.end) << "empty split";
    ASSERT_EQ(sp.begin, covered[sp.b]);
    covered[sp.b] = sp.end;
    ++count[sp.b];
    ASSERT_EQ(sp.slot, SlotOf(sp.b, sp.part));
    ASSERT_TRUE(slots.insert(sp.slot).second);
    if (s.slots > 0) {
      ASSERT_LT(sp.slot, s.slots);
    }
    part_tokens[sp.part] += sp.end - sp.begin;
  }
  for (int b = 0; b < B; ++b) {
    ASSERT_EQ(covered[b], seqlens[b]);
    ASSERT_EQ(count[b], s.nsplits[b]);
  }
  if (!part_tokens.empty()) {
    const int64_t W = s.cum[B], T = CutParts(W, s.parts, B, s.equal).T, pages = PagesOf(W);
    const int64_t page_T = PageCut(W, s.parts).T;
    EXPECT_EQ(page_T / kPageSize, (pages + s.parts - 1) / s.parts);
    if (T == page_T) {
      EXPECT_EQ(T % kPageSize, 0);
    } else {  // the entry cut
      ASSERT_GT(s.equal, 0);
      EXPECT_EQ(T, (B + s.parts - 1) / s.parts * s.equal);
      EXPECT_LE(16 * T, 17 * page_T);
      EXPECT_LE(T - page_T, kEntryCutSlackPages * kPageSize);
      for (int n : s.nsplits) EXPECT_EQ(n, 1);
    }
    EXPECT_LE(s.parts_used, s.parts);
    for (int p = 0; p + 1 < s.parts_used; ++p) EXPECT_EQ(part_tokens[p], T) << "part " << p;
    EXPECT_GE(part_tokens.back(), 1);
    EXPECT_LE(part_tokens.back(), T);
  }
  for (int p = 0; p < s.parts_used; ++p) {  // first_b: the entry of the part's first split
    int first = B;
    for (const Split& sp : s.splits)
      if (sp.part == p) { first = sp.b; break; }
    ASSERT_EQ(s.first_b[p], first);
  }
}

// The target shapes as the launcher runs them (P halved where HalvesFor says so): 128 of 132 SMs
// busy (whole pages, or at B128 whole entries, a part leave a few parts an m-block idle), and,
// without halves, no CTA with more tiles than the longest part of 132 token-exact ones, or 1/16 more
// where parts are whole entries (the splits and the combine they save were worth more).
TEST(MlaSchedule, FillsTheSmsAtTargetShapes) {
  struct Shape { int B, s_q, H, S, m_blocks, halves, busy; };
  for (const Shape& sh : {Shape{1, 1, 64, 8192, 1, 2, 128}, Shape{1, 2, 64, 8192, 2, 1, 128},
                          Shape{1, 4, 64, 8192, 4, 1, 128}, Shape{128, 1, 16, 8192, 1, 1, 128},
                          Shape{128, 1, 128, 8192, 2, 1, 132}, Shape{128, 2, 128, 8192, 4, 1, 132}}) {
    SCOPED_TRACE("B" + std::to_string(sh.B) + " s_q" + std::to_string(sh.s_q) + " H" + std::to_string(sh.H));
    const int P = PartsForShape(sh.s_q, sh.H, 132);
    const int halves = HalvesFor(sh.s_q * sh.H, P, int64_t(sh.B) * sh.S);
    EXPECT_EQ(halves, sh.halves);
    const std::vector<int> seqlens(sh.B, sh.S);
    const Schedule s = MakeSchedule(sh.B, sh.s_q, sh.H, seqlens, 132, P / halves);
    EXPECT_EQ(s.m_blocks, sh.m_blocks);
    EXPECT_EQ(halves * s.busy_ctas(), sh.busy);
    const int64_t W = s.cum[sh.B], exact = (W + P - 1) / P;  // the longest token-exact part
    if (halves == 1) {
      const int64_t tiles = (CutParts(W, P, sh.B, s.equal).T + kBlockN - 1) / kBlockN;
      const int64_t exact_tiles = (exact + kBlockN - 1) / kBlockN;
      if (sh.B == 1) EXPECT_LE(tiles, exact_tiles);
      else EXPECT_LE(16 * tiles, 17 * exact_tiles);
    }
    CheckScheduleInvariants(s, seqlens);
  }
  // B1 H64 S8192 s_q1: 64 splits of two pages, each in two CTAs (FlashMLA: 64 splits of 128 tokens
  // in one CTA each, half the machine idle).
  const Schedule s = MakeSchedule(1, 1, 64, {8192}, 132, PartsForShape(1, 64, 132) / 2);
  ASSERT_EQ(s.splits.size(), 64u);
  for (const Split& sp : s.splits) EXPECT_TRUE(sp.begin % kPageSize == 0 && sp.end - sp.begin == 2 * kPageSize);
  // B128 H16: a part an entry, nothing to combine; with one entry a token shorter, parts of 125
  // pages, 2 or 3 splits per entry, every entry split.
  const Schedule t = MakeSchedule(128, 1, 16, std::vector<int>(128, 8192), 132);
  EXPECT_EQ(t.equal, 8192);
  EXPECT_EQ(t.parts_used, 128);
  for (int n : t.nsplits) EXPECT_EQ(n, 1);
  std::vector<int> mixed(128, 8192);
  mixed[77] = 8191;
  const Schedule u = MakeSchedule(128, 1, 16, mixed, 132);
  EXPECT_EQ(u.equal, 0);
  EXPECT_EQ(CutParts(u.cum[128], u.parts, 128, u.equal).T, 125 * kPageSize);
  for (int n : u.nsplits) EXPECT_TRUE(n == 2 || n == 3) << n;
  CheckScheduleInvariants(u, mixed);
}

// Whole entries only where every entry has the same length, B > 1, and a part of them is at most
// 8 pages and 1/16 longer than the page cut's.
TEST(MlaSchedule, WholeEntriesOnlyWhereTheyCostLittle) {
  const auto T = [](int B, int P, int64_t S) { return CutParts(B * S, P, B, S).T; };
  EXPECT_EQ(T(128, 132, 8192), 8192);                    // 128 pages against the page cut's 125
  EXPECT_EQ(T(128, 66, 8192), 2 * 8192);                 // 256 against 249
  EXPECT_EQ(T(128, 33, 8192), PageCut(128 * 8192, 33).T);  // 512 against 497: 15 pages more
  EXPECT_EQ(T(31, 2, 1024), 16 * 1024);                   // 256 against 248: 8 more
  EXPECT_EQ(T(31, 2, 1152), PageCut(31 * 1152, 2).T);     // 288 against 279: 9 more
  EXPECT_EQ(T(100, 132, 8192), PageCut(100 * 8192, 132).T);  // an entry a part: 32 SMs idle
  EXPECT_EQ(T(132, 132, 8192), 8192);                    // an entry a part, every SM busy
  EXPECT_EQ(T(17, 18, 1280), 1280);                      // 20 pages against 19
  EXPECT_EQ(T(11, 6, 640), 1280);                        // two entries a part: 20 pages against 19
  EXPECT_EQ(T(132, 132, 100), PageCut(132 * 100, 132).T);  // not a whole number of pages
  EXPECT_EQ(T(140, 132, 8192), PageCut(140 * 8192, 132).T);  // two a part would be 1.9x as long
  EXPECT_EQ(T(16, 18, 1280), PageCut(16 * 1280, 18).T);  // 20 pages against 18: 11% longer
  EXPECT_EQ(T(1, 132, 8192), PageCut(8192, 132).T);       // one entry: split it
  EXPECT_EQ(T(2, 132, 8192), PageCut(2 * 8192, 132).T);   // a part an entry would be 64x as long
  EXPECT_EQ(CutParts(3 * 100, 2, 3, 0).T, PageCut(300, 2).T);  // lengths differ
  for (int B : {64, 128, 131, 132, 133, 200, 264, 300})
    for (int S : {1, 63, 64, 100, 4096, 8191, 8192}) {
      const std::vector<int> seqlens(B, S);
      const Schedule s = MakeSchedule(B, 1, 16, seqlens, 132);
      SCOPED_TRACE("B" + std::to_string(B) + " S" + std::to_string(S));
      CheckScheduleInvariants(s, seqlens);
      const int64_t T = CutParts(s.cum[B], s.parts, B, s.equal).T, page_T = PageCut(s.cum[B], s.parts).T;
      EXPECT_LE(16 * T, 17 * page_T);
      EXPECT_LE(T - page_T, kEntryCutSlackPages * kPageSize);
    }
}

// Halves only with four row groups, more than one part, and at most a tile a part of the cache.
TEST(MlaSchedule, HalvesOnlyWhereAPartHoldsOneTile) {
  EXPECT_EQ(HalvesFor(64, 132, 8192), 2);         // B1 H64 S8192 s_q1: 62 tokens a part
  EXPECT_EQ(HalvesFor(64, 132, 132 * 64), 2);     // exactly a tile a part
  EXPECT_EQ(HalvesFor(64, 132, 132 * 64 + 132), 1);
  EXPECT_EQ(HalvesFor(128, 66, 8192), 1);         // s_q2: two pages a part
  EXPECT_EQ(HalvesFor(32, 132, 100), 1);          // two row groups (mma.sync)
  EXPECT_EQ(HalvesFor(16, 132, 100), 1);          // one row group
  EXPECT_EQ(HalvesFor(64, 1, 64), 1);             // a single part
}

TEST(MlaSchedule, PrefillAndSinglePartHaveNoPartials) {
  const Schedule s = MakeSchedule(1, 8192, 64, {8192}, 132);
  EXPECT_EQ(s.m_blocks, 8192);
  EXPECT_EQ(s.parts, 1);
  EXPECT_EQ(s.slots, 0);
  EXPECT_EQ(s.nsplits[0], 1);
  const Schedule o = MakeSchedule(3, 1, 64, {5000, 0, 17}, 132, /*parts_override=*/1);
  EXPECT_EQ(o.slots, 0);
  EXPECT_EQ(o.nsplits, (std::vector<int>{1, 0, 1}));
  CheckScheduleInvariants(o, {5000, 0, 17});
  const Schedule none = MakeSchedule(2, 1, 64, {0, 0}, 132);  // no keys at all: no part gets work
  EXPECT_EQ(none.parts_used, 0);
  EXPECT_EQ(none.nsplits, (std::vector<int>{0, 0}));
  EXPECT_TRUE(none.splits.empty());
}

TEST(MlaSchedule, RandomMixedLengthsInvariants) {
  std::mt19937_64 rng(9);
  for (int it = 0; it < 300; ++it) {
    const int B = 1 + int(rng() % 200), s_q = 1 + int(rng() % 4), H = 1 << (rng() % 8);
    std::vector<int> seqlens(B);
    for (int& S : seqlens) S = rng() % 5 == 0 ? 0 : int(rng() % (rng() % 2 ? 100 : 20000));
    const int sms = 132 - int(rng() % 4) * 10;
    const Schedule s = MakeSchedule(B, s_q, H, seqlens, sms);
    CheckScheduleInvariants(s, seqlens);
    EXPECT_LE(s.busy_ctas(), sms);
    int64_t W = 0;
    for (int S : seqlens) W += S;
    if (W > 0) {  // as many parts of T tokens as W needs, none empty
      const int64_t T = CutParts(W, s.parts, B, s.equal).T;
      EXPECT_EQ(s.parts_used, (W + T - 1) / T);
    }
  }
}

// The schedule's splits, run through the CPU model, reproduce the direct reference (a small shape
// where the pages set P' (13 pages, a part each), and one where P does (158 pages: 79 parts of two)).
TEST(MlaSchedule, ScheduledSplitsMatchDirect) {
  for (int S : {700, 10000}) {
    Case c;
    c.B = 3, c.s_q = 2, c.H = 2, c.seqlens = {S, 0, 95}, c.q_sd = 0.1;
    auto in = MakeRandom(c, 1234 + S);
    const Schedule s = MakeSchedule(c.B, c.s_q, c.H, c.seqlens, 132);
    EXPECT_EQ(s.parts_used, S == 700 ? 13 : 79);
    const Result a = Attention(in.paged), b = SplitAttention(in.paged, s);
    EXPECT_LT(MaxRelErr(a.o, b.o), 1e-12);
    EXPECT_LT(MaxRelErr(a.lse, b.lse), 1e-12);
  }
}

}  // namespace
}  // namespace longhaul::mla
