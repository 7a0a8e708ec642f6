// mla/mla_testing.h: random MLA problems with owned inputs, the same logical KV cache held both
// contiguous and paged (shuffled block table, NaN in every unused page and row), for the tests.
//
// Uses: reference_test.cc, split_reference_test.cc, mla_cpu_test.cc.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include "mla/mla_api.h"
#include "mla/reference.h"

namespace longhaul::mla::testing {

struct Case {
  int B = 1, s_q = 1, H = 2;
  std::vector<int> seqlens = {100};
  bool causal = true;
  double q_sd = 1.0;   // q ~ N(0, q_sd^2): 1 (peaked softmax) or 0.1 (near-uniform, FlashMLA's)
  double kv_sd = 1.0;
  int extra_pages = 3;  // unused (NaN) pages in the paged cache
};

struct Owned {
  std::vector<float> q, kv_contig, kv_paged;
  std::vector<int32_t> block_table;
  int S_max = 0, max_pages = 0, num_pages = 0;
  Problem contig, paged;
};

inline float RoundBf16(double x) { return Bf16ToFloat(FloatToBf16(float(x))); }

// Values are bf16-rounded (what a kernel reads). The contiguous cache is [B][S_max][576] with NaN
// past each S_b; the paged cache is [num_pages][64][576], all NaN but the used rows, pages handed
// out in a random order; block-table entries past an entry's pages hold garbage (-7).
inline Owned MakeRandom(const Case& c, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Owned o;
  o.q.resize(size_t(c.B) * c.s_q * c.H * kDimQK);
  for (auto& e : o.q) e = RoundBf16(c.q_sd * nd(rng));
  o.S_max = std::max(1, *std::max_element(c.seqlens.begin(), c.seqlens.end()));
  o.kv_contig.assign(size_t(c.B) * o.S_max * kDimQK, nan);
  for (int b = 0; b < c.B; ++b)
    for (int t = 0; t < c.seqlens[b]; ++t)
      for (int d = 0; d < kDimQK; ++d)
        o.kv_contig[(size_t(b) * o.S_max + t) * kDimQK + d] = RoundBf16(c.kv_sd * nd(rng));
  o.max_pages = int(PagesOf(o.S_max));
  int used = 0;
  for (int S : c.seqlens) used += int(PagesOf(S));
  o.num_pages = used + c.extra_pages;
  std::vector<int32_t> perm(o.num_pages);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  o.kv_paged.assign(size_t(o.num_pages) * kPageSize * kDimQK, nan);
  o.block_table.assign(size_t(c.B) * o.max_pages, -7);
  int next = 0;
  for (int b = 0; b < c.B; ++b)
    for (int j = 0; j * kPageSize < c.seqlens[b]; ++j) {
      const int page = perm[next++];
      o.block_table[size_t(b) * o.max_pages + j] = page;
      for (int r = 0; r < kPageSize && j * kPageSize + r < c.seqlens[b]; ++r)
        std::copy_n(&o.kv_contig[(size_t(b) * o.S_max + j * kPageSize + r) * kDimQK], kDimQK,
                    &o.kv_paged[(size_t(page) * kPageSize + r) * kDimQK]);
    }
  for (Problem* p : {&o.contig, &o.paged}) {
    p->B = c.B, p->s_q = c.s_q, p->H = c.H;
    p->q = o.q.data();
    p->seqlens = c.seqlens;
    p->causal = c.causal;
  }
  o.contig.kv.data = o.kv_contig.data();
  o.contig.kv.stride_outer = int64_t(o.S_max) * kDimQK;
  o.contig.kv.capacity = o.S_max;
  o.paged.kv.data = o.kv_paged.data();
  o.paged.kv.stride_outer = int64_t(kPageSize) * kDimQK;
  o.paged.kv.block_table = o.block_table.data();
  o.paged.kv.bt_stride = o.max_pages;
  o.paged.kv.max_pages = o.max_pages;
  o.paged.kv.num_pages = o.num_pages;
  return o;
}

// max |a - b| over max(1e-300, max |a|): the error relative to the output's magnitude; NaN -> inf.
inline double MaxRelErr(const std::vector<double>& ref, const std::vector<double>& x) {
  double num = 0, den = 1e-300;
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::isinf(ref[i]) || std::isinf(x[i])) {
      if (ref[i] != x[i]) return std::numeric_limits<double>::infinity();
      continue;
    }
    const double d = std::fabs(ref[i] - x[i]);
    if (!(d == d)) return std::numeric_limits<double>::infinity();
    num = std::max(num, d);
    den = std::max(den, std::fabs(ref[i]));
  }
  return num / den;
}

}  // namespace longhaul::mla::testing
