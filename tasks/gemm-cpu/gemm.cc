// Single-precision GEMM, C = A * B (row-major), blocked in the style of Goto/BLIS:
//
//   for jc in N by NC:                      -- a column block of B and C
//     for pc in K by KC:                    -- a slice of the shared dimension
//       [PACK >= 1] pack B[pc:pc+KC, jc:jc+NC] into NR-wide panels (zero-padded)
//       for ic in M by MC:                  -- a row block of A and C
//         [PACK == 2] pack A[ic:ic+MC, pc:pc+KC] into MR-tall panels (zero-padded)
//         macro-kernel: MR x NR tiles of C, ORDER picks which tile loop is outer
//           micro-kernel: an MR x NR accumulator over KC steps of k, unrolled KU times
//
// THREADS (1 or 2) splits the rows (SPLIT 0) or the columns (SPLIT 1) of C between std::threads; each
// thread runs the whole blocked loop nest on its part with its own packing buffers.
//
// Every tuning knob is a macro from the generated params.h (see task.toml); the defaults below are the
// baseline point, deliberately naive: tiny blocks, a 1x1 "tile", no packing, one thread.
#if __has_include("params.h")
#include "params.h"
#endif

#ifndef MC
#define MC 16       // rows of A per cache block (A block MC x KC should sit in L2)
#endif
#ifndef KC
#define KC 16       // depth of a cache block (B micro-panel KC x NR should sit in L1)
#endif
#ifndef NC
#define NC 16       // columns of B per cache block (B block KC x NC in L2/L3)
#endif
#ifndef MR
#define MR 1        // rows of the register tile
#endif
#ifndef NR
#define NR 4        // columns of the register tile, a power of two
#endif
#ifndef KU
#define KU 1        // unroll factor of the micro-kernel's k loop
#endif
#ifndef PACK
#define PACK 0      // 0: read A and B in place; 1: pack B; 2: pack A and B
#endif
#ifndef ORDER
#define ORDER 0     // 0: tile loop over columns (jr) outside rows (ir); 1: rows outside
#endif
#ifndef THREADS
#define THREADS 1   // 1 or 2
#endif
#ifndef SPLIT
#define SPLIT 0     // with THREADS 2: 0 splits the rows of C, 1 splits the columns
#endif

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <type_traits>
#include <new>
#include <thread>

#include "harness.h"

#define GEMM_PRAGMA(x) _Pragma(#x)
#define GEMM_UNROLL(n) GEMM_PRAGMA(GCC unroll n)

namespace {

static_assert(MC % MR == 0 && NC % NR == 0, "cache blocks must be multiples of the register tile");

// A 64-byte aligned float buffer.
struct Buffer {
  float* p = nullptr;
  explicit Buffer(size_t n) : p(n ? new (std::align_val_t(64)) float[n] : nullptr) {}
  ~Buffer() { if (p) operator delete[](p, std::align_val_t(64)); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
};

// Copies the mc x kc block at a (row stride lda) into MR-tall panels: panel p holds, for each k, the
// MR values A[p*MR + 0..MR-1][k], rows past mc as zeros.
void pack_a(int mc, int kc, const float* a, int lda, float* ap) {
  for (int p = 0; p < mc; p += MR) {
    const int rows = std::min(MR, mc - p);
    for (int k = 0; k < kc; ++k) {
      for (int i = 0; i < rows; ++i) ap[i] = a[size_t(p + i) * lda + k];
      for (int i = rows; i < MR; ++i) ap[i] = 0.0f;
      ap += MR;
    }
  }
}

// Copies the kc x nc block at b (row stride ldb) into NR-wide panels: panel q holds, for each k, the
// NR values B[k][q*NR + 0..NR-1], columns past nc as zeros.
void pack_b(int kc, int nc, const float* b, int ldb, float* bp) {
  for (int q = 0; q < nc; q += NR) {
    const int cols = std::min(NR, nc - q);
    for (int k = 0; k < kc; ++k) {
      const float* row = b + size_t(k) * ldb + q;
      for (int j = 0; j < cols; ++j) bp[j] = row[j];
      for (int j = cols; j < NR; ++j) bp[j] = 0.0f;
      bp += NR;
    }
  }
}

// SIMD width in floats of the machine compiled for (-march=native), and the vector type of the
// register tile: each row of the tile is NV vectors of W floats (W = NR when NR is narrower than the
// machine). GCC/Clang vector extensions, so the accumulators are named registers, not an array the
// compiler may or may not keep out of memory. A one-float "vector" is a plain float.
#if defined(__AVX512F__)
constexpr int kSimd = 16;
#elif defined(__AVX__)
constexpr int kSimd = 8;
#else
constexpr int kSimd = 4;
#endif
constexpr int W = NR < kSimd ? NR : kSimd;
constexpr int NV = NR / W;
static_assert((NR & (NR - 1)) == 0, "NR must be a power of two");
typedef float VecW __attribute__((vector_size(W * sizeof(float))));
using Vec = typename std::conditional<W == 1, float, VecW>::type;

inline Vec load(const float* p) {
  Vec v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(float* p, Vec v) { std::memcpy(p, &v, sizeof v); }

// The register tile: acc[i][v] += a(i, k) * b(k, v*W .. v*W+W-1) for k < kc, where
// a(i, k) = a[i*rsa + k*csa] and b(k, j) = b[k*rsb + j]. Reads a full MR x NR tile (the caller
// guarantees it is in bounds or padded); writes only the mr x nr corner of c, storing on the first
// k block and adding afterwards.
inline void micro_kernel(int kc, const float* __restrict a, ptrdiff_t rsa, ptrdiff_t csa,
                         const float* __restrict b, ptrdiff_t rsb, float* __restrict c, ptrdiff_t ldc,
                         int mr, int nr, bool first) {
  Vec acc[MR][NV];
  GEMM_UNROLL(64)
  for (int i = 0; i < MR; ++i)
    GEMM_UNROLL(64)
    for (int v = 0; v < NV; ++v) acc[i][v] = Vec{};
  GEMM_UNROLL(KU)
  for (int k = 0; k < kc; ++k) {
    Vec bk[NV];
    GEMM_UNROLL(64)
    for (int v = 0; v < NV; ++v) bk[v] = load(b + k * rsb + v * W);
    const float* ak = a + k * csa;
    GEMM_UNROLL(64)
    for (int i = 0; i < MR; ++i) {
      const float ai = ak[i * rsa];
      GEMM_UNROLL(64)
      for (int v = 0; v < NV; ++v) acc[i][v] += ai * bk[v];
    }
  }
  if (mr == MR && nr == NR) {
    GEMM_UNROLL(64)
    for (int i = 0; i < MR; ++i)
      GEMM_UNROLL(64)
      for (int v = 0; v < NV; ++v) {
        float* cv = c + i * ldc + v * W;
        store(cv, first ? acc[i][v] : load(cv) + acc[i][v]);
      }
  } else {
    float t[MR][NR];
    std::memcpy(t, acc, sizeof t);
    for (int i = 0; i < mr; ++i)
      for (int j = 0; j < nr; ++j) {
        float& cij = c[i * ldc + j];
        cij = first ? t[i][j] : cij + t[i][j];
      }
  }
}

// A partial tile read in place, bounded on every side (only used when an operand is not packed).
void edge_kernel(int mr, int nr, int kc, const float* a, ptrdiff_t rsa, ptrdiff_t csa, const float* b,
                 ptrdiff_t rsb, float* c, ptrdiff_t ldc, bool first) {
  for (int i = 0; i < mr; ++i)
    for (int j = 0; j < nr; ++j) {
      float s = 0.0f;
      for (int k = 0; k < kc; ++k) s += a[i * rsa + k * csa] * b[k * rsb + j];
      float& cij = c[i * ldc + j];
      cij = first ? s : cij + s;
    }
}

// One tile of C at (ir, jr) inside the current (ic, pc, jc) block.
inline void tile(int ir, int jr, int mc, int nc, int kc, const float* ablock, int lda, const float* ap,
                 const float* bblock, int ldb, const float* bp, float* cblock, int ldc, bool first) {
  const int mr = std::min(MR, mc - ir), nr = std::min(NR, nc - jr);
  const float* a;
  ptrdiff_t rsa, csa;
  if (PACK == 2) {
    a = ap + size_t(ir / MR) * kc * MR, rsa = 1, csa = MR;
  } else {
    a = ablock + size_t(ir) * lda, rsa = lda, csa = 1;
  }
  const float* b;
  ptrdiff_t rsb;
  if (PACK >= 1) {
    b = bp + size_t(jr / NR) * kc * NR, rsb = NR;
  } else {
    b = bblock + jr, rsb = ldb;
  }
  float* c = cblock + size_t(ir) * ldc + jr;
  const bool a_whole = PACK == 2 || mr == MR;  // safe to read MR rows
  const bool b_whole = PACK >= 1 || nr == NR;  // safe to read NR columns
  if (a_whole && b_whole)
    micro_kernel(kc, a, rsa, csa, b, rsb, c, ldc, mr, nr, first);
  else
    edge_kernel(mr, nr, kc, a, rsa, csa, b, rsb, c, ldc, first);
}

// C[m0:m1, n0:n1] = A[m0:m1, :] * B[:, n0:n1].
void gemm_part(int m0, int m1, int n0, int n1, int N, int K, const float* A, const float* B, float* C) {
  Buffer ap(PACK == 2 ? size_t(MC) * KC : 0);
  Buffer bp(PACK >= 1 ? size_t(KC) * (NC + NR) : 0);
  for (int jc = n0; jc < n1; jc += NC) {
    const int nc = std::min(NC, n1 - jc);
    for (int pc = 0; pc < K; pc += KC) {
      const int kc = std::min(KC, K - pc);
      const bool first = pc == 0;
      const float* bblock = B + size_t(pc) * N + jc;
      if (PACK >= 1) pack_b(kc, nc, bblock, N, bp.p);
      for (int ic = m0; ic < m1; ic += MC) {
        const int mc = std::min(MC, m1 - ic);
        const float* ablock = A + size_t(ic) * K + pc;
        if (PACK == 2) pack_a(mc, kc, ablock, K, ap.p);
        float* cblock = C + size_t(ic) * N + jc;
        if (ORDER == 0) {
          for (int jr = 0; jr < nc; jr += NR)
            for (int ir = 0; ir < mc; ir += MR)
              tile(ir, jr, mc, nc, kc, ablock, K, ap.p, bblock, N, bp.p, cblock, N, first);
        } else {
          for (int ir = 0; ir < mc; ir += MR)
            for (int jr = 0; jr < nc; jr += NR)
              tile(ir, jr, mc, nc, kc, ablock, K, ap.p, bblock, N, bp.p, cblock, N, first);
        }
      }
    }
  }
}

}  // namespace

void gemm(int M, int N, int K, const float* A, const float* B, float* C) {
  if (M <= 0 || N <= 0) return;
  if (K <= 0) {
    std::fill(C, C + size_t(M) * N, 0.0f);
    return;
  }
  if (THREADS < 2) {
    gemm_part(0, M, 0, N, N, K, A, B, C);
    return;
  }
  // Two parts, cut at a multiple of the register tile so that neither part gets extra edge tiles.
  if (SPLIT == 0) {
    const int cut = std::min(M, (M / MR + 1) / 2 * MR);
    std::thread t([=] { gemm_part(cut, M, 0, N, N, K, A, B, C); });
    gemm_part(0, cut, 0, N, N, K, A, B, C);
    t.join();
  } else {
    const int cut = std::min(N, (N / NR + 1) / 2 * NR);
    std::thread t([=] { gemm_part(0, M, cut, N, N, K, A, B, C); });
    gemm_part(0, M, 0, cut, N, K, A, B, C);
    t.join();
  }
}
