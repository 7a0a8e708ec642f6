// mla/reference.cc: the float64 absorbed-MLA reference (see reference.h for the math).
#include "mla/reference.h"

#include <cmath>
#include <limits>
#include <stdexcept>

namespace longhaul::mla {

double DefaultScale() { return 1.0 / std::sqrt(192.0); }

std::string Validate(const Problem& p) {
  if (p.B < 1 || p.s_q < 1 || p.H < 1) return "B, s_q and H must be >= 1";
  if (!p.q || !p.kv.data) return "q and kv are required";
  if (int(p.seqlens.size()) != p.B) return "seqlens must have B entries";
  for (int b = 0; b < p.B; ++b) {
    const int S = p.seqlens[b];
    if (S < 0) return "seqlens must be >= 0";
    if (!p.kv.paged()) {
      if (S > p.kv.capacity) return "seqlens[" + std::to_string(b) + "] exceeds the cache capacity";
      continue;
    }
    const int pages = int(PagesOf(S));
    if (pages > p.kv.max_pages) return "seqlens[" + std::to_string(b) + "] exceeds max_pages * 64";
    for (int j = 0; j < pages; ++j) {
      const int32_t pg = p.kv.block_table[b * p.kv.bt_stride + j];
      if (pg < 0 || pg >= p.kv.num_pages)
        return "block_table[" + std::to_string(b) + "][" + std::to_string(j) + "] out of range";
    }
  }
  return "";
}

Result Attention(const Problem& p) {
  if (std::string e = Validate(p); !e.empty()) throw std::invalid_argument(e);
  const double scale = p.Scale();
  Result r;
  r.o.assign(size_t(p.B) * p.s_q * p.H * kDimV, 0.0);
  r.lse.assign(size_t(p.B) * p.s_q * p.H, -std::numeric_limits<double>::infinity());
  std::vector<double> s;
  for (int b = 0; b < p.B; ++b)
    for (int i = 0; i < p.s_q; ++i) {
      const int n = VisibleKeys(p.seqlens[b], p.s_q, i, p.causal);
      if (n == 0) continue;
      for (int h = 0; h < p.H; ++h) {
        const float* q = p.q + p.QIndex(b, i, h);
        s.assign(n, 0.0);
        double mx = -std::numeric_limits<double>::infinity();
        for (int t = 0; t < n; ++t) {
          const float* k = p.kv.Row(b, t);
          double dot = 0;
          for (int d = 0; d < kDimQK; ++d) dot += double(q[d]) * double(k[d]);
          s[t] = scale * dot;
          mx = std::max(mx, s[t]);
        }
        double sum = 0;
        for (int t = 0; t < n; ++t) sum += std::exp(s[t] - mx);
        const size_t row = (size_t(b) * p.s_q + i) * p.H + h;
        r.lse[row] = mx + std::log(sum);
        double* o = r.o.data() + row * kDimV;
        for (int t = 0; t < n; ++t) {
          const double w = std::exp(s[t] - mx) / sum;
          const float* v = p.kv.Row(b, t);
          for (int e = 0; e < kDimV; ++e) o[e] += w * double(v[e]);
        }
      }
    }
  return r;
}

}  // namespace longhaul::mla
