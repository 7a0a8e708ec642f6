// common/wgmma.cuh: Hopper's warpgroup MMA (wgmma.mma_async, sm_90a) over shared-memory operands in
// the canonical 128-byte-swizzled layout, as inline PTX. A warpgroup (4 consecutive warps, 128
// threads) issues it together; the accumulator D[64 x N] (fp32) is spread like mma.sync's: warp i of
// the group holds rows 16 i .. 16 i + 15, and d[n][e] is row 16 i + lane / 4 + 8 (e / 2), column
// 8 n + 2 (lane % 4) + e % 2.
//
// The layout (Sw128Offset): a bf16 tile [rows][cols] is stored as cols / 64 blocks of `rows`
// 128-byte rows; 16-byte chunk c of a row r is at chunk position (c ^ r) % 8 of its row. Both a
// K-major operand (rows = M or N, 64 K a block) and an MN-major one (rows = K, 64 M or N a block)
// read it; ldmatrix reads it without bank conflicts too. Blocks must start on 1024 bytes (the
// swizzle is a function of the address bits 7..9).
#pragma once

#include <cstdint>

#include "common/tma.cuh"  // FenceProxyAsync: st.shared and cp.async writes -> wgmma's operand reads

namespace longhaul::kernels {

// Byte offset of 16-byte chunk `chunk` of row `row` in a tile whose 64-column blocks are
// block_bytes apart (rows x 128).
__device__ __forceinline__ uint32_t Sw128Offset(int row, int chunk, int block_bytes) {
  return uint32_t((chunk >> 3) * block_bytes + row * 128 + (((chunk ^ row) & 7) << 4));
}

// Byte offset of the k-th 16-wide K slice of a K-major Sw128 tile (a descriptor's start): four
// slices a 64-column block, 32 bytes apart inside its swizzle atoms.
__device__ __forceinline__ uint32_t Sw128KStep(int k, int block_bytes) {
  return uint32_t((k / 4) * block_bytes + (k % 4) * 32);
}

// The shared-memory matrix descriptor (PTX ISA "Matrix Descriptor Format"), 128-byte swizzle:
// start address, leading and stride byte offsets, each in 16-byte units. K-major: sbo = the step
// between 8-row groups (1024), lbo unused; the k-th 16-wide K slice of a block starts 32 k bytes in.
// MN-major: lbo = the step between 64-wide MN blocks, sbo = the step between 8-row K groups.
__device__ __forceinline__ uint64_t Sw128Desc(uint32_t smem_addr, uint32_t lbo, uint32_t sbo) {
  return uint64_t((smem_addr & 0x3FFFF) >> 4) | uint64_t((lbo & 0x3FFFF) >> 4) << 16 |
         uint64_t((sbo & 0x3FFFF) >> 4) << 32 | uint64_t(1) << 62;
}

// Before the first wgmma of a batch whose accumulators other instructions wrote (or read) since.
__device__ __forceinline__ void WgmmaFence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void WgmmaCommit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
// Until at most n of the warpgroup's committed batches are still running.
template <int n>
__device__ __forceinline__ void WgmmaWait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(n) : "memory");
}
// Pins an accumulator's registers here: the compiler may not move their reads or writes across this
// point. After a wait, before the first use of D whose wgmma ran while other code was issued.
template <int N>
__device__ __forceinline__ void FenceOperands(float (&d)[N][4]) {
#pragma unroll
  for (int n = 0; n < N; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+f"(d[n][e])::"memory");
}
template <int N>
__device__ __forceinline__ void FenceOperands(uint32_t (&a)[N][4]) {
#pragma unroll
  for (int n = 0; n < N; ++n)
#pragma unroll
    for (int e = 0; e < 4; ++e) asm volatile("" : "+r"(a[n][e])::"memory");
}

// The asm statements' accumulator operands, d[n][e] ("+f", 4 a tile) of tiles [0, 4), [0, 8) and
// [0, 32), and their names in the instruction.
#define LONGHAUL_WGMMA_D1(d, n) "+f"(d[n][0]), "+f"(d[n][1]), "+f"(d[n][2]), "+f"(d[n][3])
#define LONGHAUL_WGMMA_D4(d, n) \
  LONGHAUL_WGMMA_D1(d, n), LONGHAUL_WGMMA_D1(d, n + 1), LONGHAUL_WGMMA_D1(d, n + 2), LONGHAUL_WGMMA_D1(d, n + 3)
#define LONGHAUL_WGMMA_D8(d) LONGHAUL_WGMMA_D4(d, 0), LONGHAUL_WGMMA_D4(d, 4)
#define LONGHAUL_WGMMA_D16(d) LONGHAUL_WGMMA_D4(d, 0), LONGHAUL_WGMMA_D4(d, 4), LONGHAUL_WGMMA_D4(d, 8), LONGHAUL_WGMMA_D4(d, 12)
#define LONGHAUL_WGMMA_D32(d) \
  LONGHAUL_WGMMA_D4(d, 0), LONGHAUL_WGMMA_D4(d, 4), LONGHAUL_WGMMA_D4(d, 8), LONGHAUL_WGMMA_D4(d, 12), LONGHAUL_WGMMA_D4(d, 16), LONGHAUL_WGMMA_D4(d, 20), LONGHAUL_WGMMA_D4(d, 24), LONGHAUL_WGMMA_D4(d, 28)
#define LONGHAUL_WGMMA_R16 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}"
#define LONGHAUL_WGMMA_R32 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}"
#define LONGHAUL_WGMMA_R64 \
  "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31," \
  "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63}"
#define LONGHAUL_WGMMA_R128 \
  "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31,%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47,%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63," \
  "%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79,%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95,%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111,%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127}"

// D[64 x 32] (+)= A[64 x 16] B[16 x 32]: A and B K-major (B's rows are its 32 columns).
// accumulate = 0 overwrites D.
__device__ __forceinline__ void Wgmma64x32(float (&d)[4][4], uint64_t a, uint64_t b, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 " LONGHAUL_WGMMA_R16 ", %16, %17, p, 1, 1, 0, 0;\n}\n"
               : LONGHAUL_WGMMA_D4(d, 0)
               : "l"(a), "l"(b), "r"(accumulate));
}

// D[64 x 64] (+)= A[64 x 16] B[16 x 64]: A and B K-major.
__device__ __forceinline__ void Wgmma64x64(float (&d)[8][4], uint64_t a, uint64_t b, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " LONGHAUL_WGMMA_R32 ", %32, %33, p, 1, 1, 0, 0;\n}\n"
               : LONGHAUL_WGMMA_D8(d)
               : "l"(a), "l"(b), "r"(accumulate));
}

// D[64 x 256] (+)= A[64 x 16] B[16 x 256]: A K-major, B MN-major (B's rows are its 16 K rows).
__device__ __forceinline__ void Wgmma64x256MnB(float (&d)[32][4], uint64_t a, uint64_t b, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %130, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 " LONGHAUL_WGMMA_R128 ", %128, %129, p, 1, 1, 0, 1;\n}\n"
               : LONGHAUL_WGMMA_D32(d)
               : "l"(a), "l"(b), "r"(accumulate));
}

// D[64 x 128] (+)= A[64 x 16] B[16 x 128]: A K-major, B MN-major (B's rows are its 16 K rows).
__device__ __forceinline__ void Wgmma64x128MnB(float (&d)[16][4], uint64_t a, uint64_t b, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " LONGHAUL_WGMMA_R64 ", %64, %65, p, 1, 1, 0, 1;\n}\n"
               : LONGHAUL_WGMMA_D16(d)
               : "l"(a), "l"(b), "r"(accumulate));
}

// D[64 x 256] (+)= A[64 x 16] B[16 x 256]: A from registers (a[] as mma.sync's m16n8k16 A fragment
// of the warp's 16 rows), B MN-major. The registers of a are read while the MMA runs: keep them
// until its wait (FenceOperands).
__device__ __forceinline__ void Wgmma64x256RsMnB(float (&d)[32][4], const uint32_t (&a)[4], uint64_t b, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %133, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 " LONGHAUL_WGMMA_R128
               ", {%128,%129,%130,%131}, %132, p, 1, 1, 1;\n}\n"
               : LONGHAUL_WGMMA_D32(d)
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));
}

// D[64 x 64] (+)= A[64 x 16] B[16 x 64]: A from registers (as above), B K-major.
__device__ __forceinline__ void Wgmma64x64Rs(float (&d)[8][4], const uint32_t (&a)[4], uint64_t b, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 " LONGHAUL_WGMMA_R32
               ", {%32,%33,%34,%35}, %36, p, 1, 1, 0;\n}\n"
               : LONGHAUL_WGMMA_D8(d)
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));
}

// D[64 x 128] (+)= A[64 x 16] B[16 x 128]: A from registers, B MN-major.
__device__ __forceinline__ void Wgmma64x128RsMnB(float (&d)[16][4], const uint32_t (&a)[4], uint64_t b, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 " LONGHAUL_WGMMA_R64
               ", {%64,%65,%66,%67}, %68, p, 1, 1, 1;\n}\n"
               : LONGHAUL_WGMMA_D16(d)
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(accumulate));
}

#undef LONGHAUL_WGMMA_D1
#undef LONGHAUL_WGMMA_D4
#undef LONGHAUL_WGMMA_D8
#undef LONGHAUL_WGMMA_D16
#undef LONGHAUL_WGMMA_D32
#undef LONGHAUL_WGMMA_R16
#undef LONGHAUL_WGMMA_R32
#undef LONGHAUL_WGMMA_R64
#undef LONGHAUL_WGMMA_R128

}  // namespace longhaul::kernels
