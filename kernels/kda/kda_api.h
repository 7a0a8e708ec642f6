// kda/kda_api.h: what every backend of the C API (kda.h) shares, in C++: parameter validation, the
// thread's last-error detail, and bf16 <-> float conversion on the host.
//
// Uses: kda_cpu.cc (the CPU backend); the CUDA backend's launcher (the same checks before a launch);
// tests.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "kda/kda.h"

namespace longhaul::kda {

// Records detail as this thread's kda_last_error() and returns s.
kda_status SetError(kda_status s, const std::string& detail);
void ClearError();

// "" if p is well-formed for any backend, else a sentence. host_cu, when not null, is a host copy of
// cu_seqlens to check (N+1 offsets); the CPU backend passes p.cu_seqlens itself.
std::string CheckParams(const kda_fwd_params& p, const int64_t* host_cu);

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

}  // namespace longhaul::kda
