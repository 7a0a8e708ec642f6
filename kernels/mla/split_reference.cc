// mla/split_reference.cc: the CPU model of decode.cu + combine.cu (see split_reference.h).
#include "mla/split_reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace longhaul::mla {
namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kLog2e = 1.4426950408889634074;
constexpr double kLn2 = 0.6931471805599453094;
}  // namespace

Schedule MakeSchedule(int B, int s_q, int H, const std::vector<int>& seqlens, int num_sms,
                      int parts_override) {
  if (int(seqlens.size()) != B) throw std::invalid_argument("seqlens must have B entries");
  Schedule s;
  s.m_blocks = MBlocks(s_q, H);
  s.parts = parts_override > 0 ? parts_override : PartsForShape(s_q, H, num_sms);
  s.cum.assign(B + 1, 0);
  for (int b = 0; b < B; ++b) s.cum[b + 1] = s.cum[b] + seqlens[b];
  const int64_t W = s.cum[B];
  if (B > 0 && int64_t(s_q) * H <= kWholeEntriesMaxRows &&
      std::all_of(seqlens.begin(), seqlens.end(), [&](int S) { return S == seqlens[0]; }))
    s.equal = seqlens[0];
  const PartCut cut = CutParts(W, s.parts, B, s.equal);
  s.parts_used = cut.parts;
  s.slots = NumSlots(B, s.parts);
  s.nsplits.assign(B, 0);
  s.first_b.assign(s.parts, B);
  for (int b = 0; b < B; ++b)
    s.nsplits[b] = SplitsOf(s.cum[b], s.cum[b + 1], cut);
  for (int p = 0; p < s.parts_used; ++p) {
    const int64_t lo = PartStart(p, cut), hi = PartStart(p + 1, cut);
    for (int b = 0; b < B; ++b) {
      const int64_t c0 = s.cum[b], c1 = s.cum[b + 1];
      if (c1 <= lo || c0 >= hi || c0 == c1) continue;
      if (s.first_b[p] == B) s.first_b[p] = b;
      Split sp;
      sp.b = b, sp.part = p, sp.slot = SlotOf(b, p);
      sp.begin = int(std::max(lo, c0) - c0), sp.end = int(std::min(hi, c1) - c0);
      s.splits.push_back(sp);
    }
  }
  return s;
}

Partial SplitPartial(const Problem& p, int b, int i, int h, int t0, int t1) {
  Partial r;
  r.m = -kInf;
  r.o.assign(kDimV, 0.0);
  const int n = VisibleKeys(p.seqlens[b], p.s_q, i, p.causal);
  const int stop = std::min(t1, n);
  const double c = p.Scale() * kLog2e;
  const float* q = p.q + p.QIndex(b, i, h);
  double x[kBlockN];
  for (int u = t0; u < stop; u += kBlockN) {
    const int len = std::min(kBlockN, stop - u);
    double mt = -kInf;
    for (int j = 0; j < len; ++j) {
      const float* k = p.kv.Row(b, u + j);
      double dot = 0;
      for (int d = 0; d < kDimQK; ++d) dot += double(q[d]) * double(k[d]);
      x[j] = c * dot;
      mt = std::max(mt, x[j]);
    }
    const double m_new = std::max(r.m, mt);
    const double ref = m_new == -kInf ? 0.0 : m_new;
    const double alpha = std::exp2(r.m - ref);
    r.l *= alpha;
    for (double& e : r.o) e *= alpha;
    for (int j = 0; j < len; ++j) {
      const double w = std::exp2(x[j] - ref);
      r.l += w;
      const float* v = p.kv.Row(b, u + j);
      for (int e = 0; e < kDimV; ++e) r.o[e] += w * double(v[e]);
    }
    r.m = m_new;
  }
  return r;
}

void Combine(const std::vector<Partial>& parts, double* o, double* lse) {
  double M = -kInf;
  for (const Partial& q : parts) M = std::max(M, q.m);
  for (int e = 0; e < kDimV; ++e) o[e] = 0;
  if (M == -kInf) {
    *lse = -kInf;
    return;
  }
  double L = 0;
  for (const Partial& q : parts) {
    if (q.m == -kInf) continue;  // l = 0 and O = 0 there; 2^(-inf) would be fine, this is explicit
    const double w = std::exp2(q.m - M);
    L += q.l * w;
    for (int e = 0; e < kDimV; ++e) o[e] += q.o[e] * w;
  }
  for (int e = 0; e < kDimV; ++e) o[e] /= L;
  *lse = (M + std::log2(L)) * kLn2;
}

Result SplitAttention(const Problem& p, const std::vector<std::vector<int>>& bounds) {
  if (std::string e = Validate(p); !e.empty()) throw std::invalid_argument(e);
  if (int(bounds.size()) != p.B) throw std::invalid_argument("bounds must have B entries");
  for (int b = 0; b < p.B; ++b) {
    const auto& t = bounds[b];
    if (t.size() < 2 || t.front() != 0 || t.back() != p.seqlens[b])
      throw std::invalid_argument("bounds[b] must run from 0 to S_b");
    for (size_t j = 1; j < t.size(); ++j)
      if (t[j] < t[j - 1]) throw std::invalid_argument("bounds must be non-decreasing");
  }
  Result r;
  r.o.assign(size_t(p.B) * p.s_q * p.H * kDimV, 0.0);
  r.lse.assign(size_t(p.B) * p.s_q * p.H, 0.0);
  std::vector<Partial> parts;
  for (int b = 0; b < p.B; ++b)
    for (int i = 0; i < p.s_q; ++i)
      for (int h = 0; h < p.H; ++h) {
        parts.clear();
        for (size_t j = 1; j < bounds[b].size(); ++j)
          parts.push_back(SplitPartial(p, b, i, h, bounds[b][j - 1], bounds[b][j]));
        const size_t row = (size_t(b) * p.s_q + i) * p.H + h;
        Combine(parts, r.o.data() + row * kDimV, &r.lse[row]);
      }
  return r;
}

Result SplitAttention(const Problem& p, const Schedule& s) {
  std::vector<std::vector<int>> bounds(p.B);
  for (int b = 0; b < p.B; ++b) bounds[b].push_back(0);
  for (const Split& sp : s.splits) {  // per entry, the splits come in part order
    if (bounds[sp.b].back() != sp.begin) throw std::logic_error("schedule splits are not contiguous");
    bounds[sp.b].push_back(sp.end);
  }
  for (int b = 0; b < p.B; ++b)
    if (bounds[b].size() == 1) bounds[b].push_back(0);  // S_b = 0: no split
  return SplitAttention(p, bounds);
}

}  // namespace longhaul::mla
