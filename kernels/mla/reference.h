// mla/reference.h: the float64 CPU ground truth of absorbed MLA attention (DeepSeek-V2/V3 decode
// form: MQA over one shared 576-wide latent row per token), for decode (s_q = 1, 2, 4, ...) and,
// through the same function, causal prefill (s_q = S).
//
// Uses: the oracle that the split-KV CPU model (split_reference.h), the C API's CPU backend
// (mla_cpu.cc) and the CUDA kernels (via gpu_check.cu) are tested against. It computes each row's
// softmax exactly (two passes, float64) and makes no attempt to be fast.
//
// Math, per batch entry b, query position i (0 <= i < s_q), head h:
//   q = q[b,i,h,:] (576 = 512 latent + 64 rope), K_t = KV[b,t,:] (576), V_t = KV[b,t,0:512]
//   n      = VisibleKeys(S_b, s_q, i, causal)       keys 0 .. n-1 (schedule.h):
//            causal: n = S_b - s_q + i + 1 (the queries are the last s_q positions), clamped to
//            [0, S_b]; not causal (or s_q = 1): n = S_b
//   s_t    = scale * q . K_t                       scale <= 0 means 1/sqrt(192) (the
//                                                  pre-absorption head dim 128 + 64)
//   lse    = ln sum_{t<n} exp(s_t)                 NATURAL log (as FlashMLA's LSE)
//   o      = sum_{t<n} exp(s_t - lse) V_t          [512]
//   n = 0 (S_b = 0, or a causal row before the first key): o = 0, lse = -inf.
//
// KV cache: contiguous [B, capacity, 576] (row of token t of entry b at data + b*stride_outer +
// t*stride_token), or paged: pages of kPageSize = 64 tokens, data + page*stride_outer +
// (t % 64)*stride_token with page = block_table[b*bt_stride + t/64]. Only rows t < S_b are read:
// unused pages and rows past S_b may hold anything (NaN included).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "mla/schedule.h"

namespace longhaul::mla {

double DefaultScale();  // 1/sqrt(192)

struct KvCache {
  const float* data = nullptr;
  int64_t stride_outer = 0;               // contiguous: between entries; paged: between pages
  int64_t stride_token = kDimQK;          // between tokens of one entry (or one page)
  int capacity = 0;                       // contiguous: tokens per entry (paged: unused)
  const int32_t* block_table = nullptr;   // paged when not null: [B][bt_stride]
  int64_t bt_stride = 0;
  int max_pages = 0;                      // pages per row of the block table
  int num_pages = 0;                      // pages in the cache

  bool paged() const { return block_table != nullptr; }
  const float* Row(int b, int t) const {
    if (!paged()) return data + b * stride_outer + t * stride_token;
    const int64_t page = block_table[b * bt_stride + t / kPageSize];
    return data + page * stride_outer + (t % kPageSize) * stride_token;
  }
};

struct Problem {
  int B = 1, s_q = 1, H = 1;
  const float* q = nullptr;  // [B, s_q, H, 576] contiguous (bf16-rounded values, as float)
  KvCache kv;
  std::vector<int> seqlens;  // [B], S_b
  bool causal = true;        // only matters for s_q > 1
  double scale = 0;          // <= 0: DefaultScale()

  double Scale() const { return scale > 0 ? scale : DefaultScale(); }
  int64_t QIndex(int b, int i, int h) const { return ((int64_t(b) * s_q + i) * H + h) * kDimQK; }
};

struct Result {
  std::vector<double> o;    // [B, s_q, H, 512]
  std::vector<double> lse;  // [B, s_q, H], natural log
};

// "" if p is well-formed, else a sentence (shapes, seqlens against the cache, block table entries
// of every page a sequence uses within [0, num_pages)).
std::string Validate(const Problem& p);

// Requires Validate(p) == "" (checked: throws std::invalid_argument otherwise).
Result Attention(const Problem& p);

}  // namespace longhaul::mla
