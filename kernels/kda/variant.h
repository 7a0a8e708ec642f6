// kda/variant.h: the GPU forward's kernel variants and kda_fwd's choice among them (AutoVariant), in
// plain C++ so that the CPU tests check the choice (variant_test.cc).
#pragma once

#include <cstdint>

namespace longhaul::kda {
// The GPU forward's kernels: the fused kernel with the V columns of a head in one CTA or two; the
// fused kernel's preparation chunk-parallel over every SM, then its scan alone with one or two CTAs a
// head (kPrepScan1 / 2); or as kda_fwd chooses (kAuto).
enum class Variant { kAuto, kFused1, kFused2, kPrepScan1, kPrepScan2 };
// A GPU as AutoVariant sees it: its SMs and its DRAM's peak bytes a second.
struct DeviceInfo {
  int sms;
  double dram_bytes_per_s;
};

// kda_fwd's choice for N sequences of H heads, by measurement (BENCHMARKS.md). Where the heads fill at
// most half the SMs, the preparation on every SM (two CTAs an SM), then the scan with two CTAs a head
// (H200, 2026-12-06: H64 0.748 against the fused kernel's 1.338 ms); up to 0.8 of the SMs, the same
// with one CTA a head (H96 1.110 against 1.498). Past that, the choice follows the DRAM: prep + scan
// writes and reads back ~1.25 GB of chunk images at B8 T8192 H16 that the fused kernel keeps on chip.
// On an H200 (4.8 TB/s, 36 GB/s an SM) prep + scan wins there (2026-12-06: B8 H16 1.451 against
// 1.485 ms, the varlen batch of 6 x 96 heads 1.142 against 1.275-1.283), on an H100 (3.35 TB/s,
// 25 GB/s an SM) the fused kernel does (2026-12-07: 1.481-1.492 against 1.638-1.644, and 1.248-1.282
// against 1.300-1.302). The line between them: 30 GB/s an SM.
inline Variant AutoVariant(int N, int H, const DeviceInfo& d) {
  const int64_t heads = int64_t(N) * H;
  if (2 * heads <= d.sms) return Variant::kPrepScan2;
  const bool fast_dram = d.dram_bytes_per_s >= 30e9 * d.sms;
  return heads * 5 <= int64_t(d.sms) * 4 || fast_dram ? Variant::kPrepScan1 : Variant::kFused1;
}
}  // namespace longhaul::kda
