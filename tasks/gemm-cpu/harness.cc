// The gemm-cpu harness (read-only to candidates): `gemm check` and `gemm bench`.
//
// check: for several shapes, awkward ones and the bench shape, fills A and B with random floats in
//   [-1, 1] drawn from LONGHAUL_SEED (required: the runtime sets a fresh one per run), poisons C and the
//   guard zones around it, calls gemm once, and compares every entry against a double-precision
//   reference with a tolerance relative to the entry's magnitude:
//       |c - ref| <= 1e-4 * sum_k |a_ik| |b_kj| + 1e-6
//   (any summation order in float is within K * 2^-24 * sum_k |a||b|, below 1e-4 of it for K <= 1600,
//   so a correct kernel never fails, while a dropped or doubled k term does). Also checks that the
//   guards around C are intact and that A and B were not modified. Exit 1 names the shape and the
//   first bad index.
//
// bench: the bench shape, fresh inputs before every call (so no result can be remembered), C poisoned
//   and L2-sized caches flushed before every call, a warm-up call, then the timed calls
//   (std::chrono::steady_clock around the call only): at least 5 and at least ~0.3 s of calls, at
//   most 60. Each timed call's output is spot-checked at random entries against a double dot product.
//   Prints a human line, then the metrics as JSON lines:
//       {"metric": "time_ms", "value": <median>, "spread": <(p75 - p25) / 2>, "samples": <n>}
//       {"metric": "gflops", "value": <2 M N K / median>}
//   A median faster than the machine's physical floor (64 flop/cycle/core at 6 GHz) is rejected.
#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"

namespace {

// The bench shape: no dimension is a multiple of the larger cache blocks (or of 3, 6, 12, 48), so
// edge tiles are part of what is timed.
constexpr int kBenchM = 500, kBenchN = 520, kBenchK = 470;

// splitmix64: a small, fast, well-mixed generator; good enough for test data.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed) {}
  uint64_t next() {
    uint64_t z = (s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  float uniform() {  // in [-1, 1)
    return float(int64_t(next() >> 40) - (int64_t(1) << 23)) * (1.0f / float(1 << 23));
  }
  int below(int n) { return int(next() % uint64_t(n)); }
};

void fill(std::vector<float>& v, Rng& rng) {
  for (float& x : v) x = rng.uniform();
}

bool seed_from_env(uint64_t* seed) {
  const char* s = std::getenv("LONGHAUL_SEED");
  if (!s || !*s) return false;
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (errno || *end) return false;
  *seed = v;
  return true;
}

// Poison that survives being a NaN in the output and is recognizable in the guard zones.
const float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr uint32_t kGuard = 0x7FC0DEADu;  // a NaN with a payload
constexpr size_t kGuardLen = 64;

float guard_value() {
  float f;
  std::memcpy(&f, &kGuard, 4);
  return f;
}
bool is_guard(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u == kGuard;
}

// Reference, a plain triple loop in double (i-k-j order): ref = A * B, mag = |A| * |B|.
void reference(int M, int N, int K, const std::vector<float>& A, const std::vector<float>& B,
               std::vector<double>& ref, std::vector<double>& mag) {
  ref.assign(size_t(M) * N, 0.0);
  mag.assign(size_t(M) * N, 0.0);
  for (int i = 0; i < M; ++i)
    for (int k = 0; k < K; ++k) {
      const double a = A[size_t(i) * K + k], aa = std::fabs(a);
      const float* b = &B[size_t(k) * N];
      double* r = &ref[size_t(i) * N];
      double* m = &mag[size_t(i) * N];
      for (int j = 0; j < N; ++j) {
        r[j] += a * double(b[j]);
        m[j] += aa * std::fabs(double(b[j]));
      }
    }
}

double tolerance(double mag) { return 1e-4 * mag + 1e-6; }

struct Shape {
  int M, N, K;
};

bool check_shape(const Shape& s, Rng& rng) {
  const int M = s.M, N = s.N, K = s.K;
  std::vector<float> A(size_t(M) * K), B(size_t(K) * N);
  fill(A, rng);
  fill(B, rng);
  const std::vector<float> A0 = A, B0 = B;
  // C with guard zones on both sides, C itself poisoned with NaN.
  std::vector<float> buf(size_t(M) * N + 2 * kGuardLen, guard_value());
  float* C = buf.data() + kGuardLen;
  std::fill(C, C + size_t(M) * N, kNaN);

  gemm(M, N, K, A.data(), B.data(), C);

  for (size_t g = 0; g < kGuardLen; ++g) {
    if (!is_guard(buf[g]) || !is_guard(buf[kGuardLen + size_t(M) * N + g])) {
      std::printf("FAIL %dx%dx%d: gemm wrote outside C (guard zone %s C was overwritten)\n", M, N, K,
                  !is_guard(buf[g]) ? "before" : "after");
      return false;
    }
  }
  if (A != A0 || B != B0) {
    std::printf("FAIL %dx%dx%d: gemm modified its input %s\n", M, N, K, A != A0 ? "A" : "B");
    return false;
  }
  std::vector<double> ref, mag;
  reference(M, N, K, A, B, ref, mag);
  size_t bad = 0;
  double worst = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      const size_t idx = size_t(i) * N + j;
      const double c = C[idx], err = std::fabs(c - ref[idx]), tol = tolerance(mag[idx]);
      if (!(err <= tol)) {  // also true for NaN and inf
        if (bad == 0)
          std::printf("FAIL %dx%dx%d: first bad entry C[%d][%d] = %.9g, reference %.9g "
                      "(|error| %.3g > tolerance %.3g)\n",
                      M, N, K, i, j, c, ref[idx], err, tol);
        ++bad;
      } else if (tol > 0) {
        worst = std::max(worst, err / tol);
      }
    }
  if (bad) {
    std::printf("FAIL %dx%dx%d: %zu of %zu entries wrong\n", M, N, K, bad, size_t(M) * N);
    return false;
  }
  std::printf("ok %dx%dx%d (worst error %.3f of tolerance)\n", M, N, K, worst);
  return true;
}

int run_check() {
  uint64_t seed;
  if (!seed_from_env(&seed)) {
    std::printf("FAIL: LONGHAUL_SEED is missing or not an unsigned integer; the check draws its "
                "inputs from it (e.g. LONGHAUL_SEED=12345 ./gemm check)\n");
    return 2;
  }
  Rng rng(seed);
  std::vector<Shape> shapes = {
      {1, 1, 1},    {17, 33, 9},   {100, 37, 65}, {3, 200, 1}, {64, 1, 300},
      {7, 19, 600}, {129, 67, 257}, {kBenchM, kBenchN, kBenchK},
  };
  // One more shape drawn from the seed, so that no fixed list of shapes can be special-cased.
  shapes.push_back({1 + rng.below(150), 1 + rng.below(150), 1 + rng.below(300)});
  for (const Shape& s : shapes)
    if (!check_shape(s, rng)) return 1;
  std::printf("check passed (seed %" PRIu64 ", %zu shapes)\n", seed, shapes.size());
  return 0;
}

// Spot-checks `count` random entries of C = A * B; returns false (and says why) on the first bad one.
bool spot_check(int M, int N, int K, const std::vector<float>& A, const std::vector<float>& B,
                const float* C, Rng& rng, int count) {
  for (int t = 0; t < count; ++t) {
    const int i = rng.below(M), j = rng.below(N);
    double r = 0, m = 0;
    for (int k = 0; k < K; ++k) {
      const double p = double(A[size_t(i) * K + k]) * double(B[size_t(k) * N + j]);
      r += p;
      m += std::fabs(p);
    }
    const double c = C[size_t(i) * N + j];
    if (!(std::fabs(c - r) <= tolerance(m))) {
      std::printf("FAIL bench %dx%dx%d: timed call gave C[%d][%d] = %.9g, reference %.9g\n", M, N, K,
                  i, j, c, r);
      return false;
    }
  }
  return true;
}

double percentile(std::vector<double> v, double p) {  // linear interpolation, v non-empty
  std::sort(v.begin(), v.end());
  const double x = p * double(v.size() - 1);
  const size_t lo = size_t(x), hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (x - double(lo));
}

int run_bench() {
  const int M = kBenchM, N = kBenchN, K = kBenchK;
  uint64_t seed = 0x5EEDu;
  seed_from_env(&seed);  // a fresh seed when the runtime gives one; any seed is fine for timing
  Rng rng(seed);
  std::vector<float> A(size_t(M) * K), B(size_t(K) * N), C(size_t(M) * N);
  // Larger than the L2 of both cores together; written between calls so that A, B and C do not sit
  // in L2 from the previous call.
  std::vector<float> flush(4u << 20, 0.0f);  // 16 MiB
  float sink = 0;

  auto prepare = [&] {
    fill(A, rng);
    fill(B, rng);
    std::fill(C.begin(), C.end(), kNaN);
    for (size_t i = 0; i < flush.size(); i += 16) flush[i] += 1.0f;
    sink += flush[rng.below(int(flush.size()))];
  };
  auto timed_call = [&] {
    const auto t0 = std::chrono::steady_clock::now();
    gemm(M, N, K, A.data(), B.data(), C.data());
    const auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::milli>(t1 - t0).count();
  };

  prepare();
  const double warm = timed_call();  // warm-up: page faults, thread start-up, code in cache
  if (!spot_check(M, N, K, A, B, C.data(), rng, 32)) return 1;
  const int reps = std::clamp(int(std::ceil(300.0 / std::max(warm, 1e-3))), 5, 60);

  std::vector<double> ms;
  for (int r = 0; r < reps; ++r) {
    prepare();
    ms.push_back(timed_call());
    if (!spot_check(M, N, K, A, B, C.data(), rng, 16)) return 1;
  }
  const double median = percentile(ms, 0.5);
  const double spread = (percentile(ms, 0.75) - percentile(ms, 0.25)) / 2;
  const double flops = 2.0 * M * N * K;
  const double gflops = flops / (median * 1e6);

  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const double floor_ms = flops / (double(cores) * 64.0 * 6e9) * 1e3;
  std::printf("gemm %dx%dx%d: median %.3f ms over %d calls (min %.3f, max %.3f), %.1f GFLOP/s%s\n", M, N,
              K, median, reps, *std::min_element(ms.begin(), ms.end()),
              *std::max_element(ms.begin(), ms.end()), gflops, sink == 12345.0f ? " " : "");
  if (median < floor_ms) {
    std::printf("FAIL bench: median %.4f ms is below the physical floor %.4f ms (%u cores x 64 "
                "flop/cycle x 6 GHz); the measurement cannot be right\n",
                median, floor_ms, cores);
    return 1;
  }
  std::printf("{\"metric\": \"time_ms\", \"value\": %.6g, \"spread\": %.6g, \"samples\": %d}\n", median,
              spread, reps);
  std::printf("{\"metric\": \"gflops\", \"value\": %.6g}\n", gflops);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "check") return run_check();
  if (mode == "bench") return run_bench();
  std::fprintf(stderr, "usage: %s check|bench  (check needs LONGHAUL_SEED)\n", argv[0]);
  return 2;
}
