// mla/mla_api.h: what every backend of the C API (mla.h) shares, in C++: parameter validation, the
// thread's last-error detail, and bf16 <-> float conversion on the host.
//
// Uses: mla_cpu.cc (the CPU backend); mla_cuda.cu (the same checks before a launch); tests;
// gpu_check.cu.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "mla/mla.h"

namespace longhaul::mla {

// Records detail as this thread's mla_last_error() and returns s.
mla_status SetError(mla_status s, const std::string& detail);
void ClearError();

// "" if p is well-formed for any backend, else a sentence. seqlens_host, when not null, is a host
// copy of the B sequence lengths to check against the cache's capacity.
std::string CheckParams(const mla_fwd_params& p, const int32_t* seqlens_host);

inline float Bf16ToFloat(uint16_t b) {
  const uint32_t u = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Round to nearest, ties to even (as __float2bfloat16_rn); NaN stays a quiet NaN.
inline uint16_t FloatToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

}  // namespace longhaul::mla
