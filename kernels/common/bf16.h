// common/bf16.h: bf16 <-> float on the host, bit-exact with the device's conversions. Used by the
// C APIs' CPU backends, their tests and the GPU checks of every kernel folder.
#pragma once

#include <cstdint>
#include <cstring>

namespace longhaul::kernels {

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

}  // namespace longhaul::kernels
