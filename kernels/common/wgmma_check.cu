// common/wgmma_check.cu: checks wgmma.cuh on the GPU against a float64 product, in the shapes the MLA
// decode kernel uses: two warpgroups, Q[64 x 576] and a KV tile [64 x 576] in the Sw128 layout;
// warpgroup w computes S[64 x 32] = Q K[32 w .. 32 w + 31]^T (K-major A and B, 36 k-steps) and
// O[64 x 256] = P[64 x 64] V[64 x 256 w .. + 255] (P K-major, V = the tile's first 512 columns
// MN-major). The MN-major descriptor is run with the strides both ways round, so that a wrong reading
// of the PTX ISA's lbo / sbo shows as one variant failing and the other passing.
// A second kernel checks the other forms, with the documented strides: warpgroup 0 S = Q K^T over all
// 64 tokens (Wgmma64x64) and O = P V in four 128-column blocks (Wgmma64x128MnB); warpgroup 1 the
// same S and O with A from registers (Wgmma64x64Rs; Wgmma64x256RsMnB, then Wgmma64x128RsMnB), the
// fragments built from global memory in mma.sync's m16n8k16 A layout.
// Usage: wgmma_check [seed]; exit status 0 when every form passes with the documented strides, 1 otherwise.
#include <cuda_bf16.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "common/cuda_host.cuh"
#include "common/mma.cuh"
#include "common/wgmma.cuh"

namespace {
using namespace longhaul::kernels;

constexpr int kRows = 64, kCols = 576, kBlock = kRows * 128, kTile = kBlock * kCols / 64;

// Q and the KV tile [64 x 576] and P [64 x 64] (row-major bf16) into shared memory in the Sw128 layout.
__device__ void FillTiles(const __nv_bfloat16* q, const __nv_bfloat16* kv, const __nv_bfloat16* pr, uint32_t sQ,
                          uint32_t sK, uint32_t sP) {
  for (int i = threadIdx.x; i < kRows * kCols / 8; i += blockDim.x) {
    const int row = i / (kCols / 8), chunk = i % (kCols / 8);
    const uint4 qv = reinterpret_cast<const uint4*>(q)[i], kvv = reinterpret_cast<const uint4*>(kv)[i];
    const uint32_t off = Sw128Offset(row, chunk, kBlock);
    asm volatile("st.shared.v4.b32 [%0], {%1,%2,%3,%4};\n" ::"r"(sQ + off), "r"(qv.x), "r"(qv.y), "r"(qv.z), "r"(qv.w));
    asm volatile("st.shared.v4.b32 [%0], {%1,%2,%3,%4};\n" ::"r"(sK + off), "r"(kvv.x), "r"(kvv.y), "r"(kvv.z), "r"(kvv.w));
    if (chunk < 8) {
      const uint4 pv = reinterpret_cast<const uint4*>(pr)[row * 8 + chunk];
      asm volatile("st.shared.v4.b32 [%0], {%1,%2,%3,%4};\n" ::"r"(sP + Sw128Offset(row, chunk, kBlock)), "r"(pv.x),
                   "r"(pv.y), "r"(pv.z), "r"(pv.w));
    }
  }
  FenceProxyAsync();
  __syncthreads();
}

__global__ void __launch_bounds__(256, 1)
    Product(const __nv_bfloat16* q, const __nv_bfloat16* kv, const __nv_bfloat16* pr, float* s_out,
            float* o_out, uint32_t mn_lbo, uint32_t mn_sbo) {
  extern __shared__ __align__(1024) uint8_t smem[];
  const uint32_t base = (SmemAddr(smem) + 1023) & ~1023u;
  const uint32_t sQ = base, sK = base + kTile, sP = base + 2 * kTile;
  FillTiles(q, kv, pr, sQ, sK, sP);
  const int wg = threadIdx.x / 128, lane = threadIdx.x % 32, warp = (threadIdx.x / 32) % 4;

  float s[4][4];
  WgmmaFence();
  for (int ks = 0; ks < kCols / 16; ++ks) {
    const uint32_t k_off = Sw128KStep(ks, kBlock);
    Wgmma64x32(s, Sw128Desc(sQ + k_off, 16, 1024), Sw128Desc(sK + k_off + 32 * wg * 128, 16, 1024), ks > 0);
  }
  WgmmaCommit();
  WgmmaWait<0>();

  float o[32][4];
  WgmmaFence();
  for (int kk = 0; kk < kRows / 16; ++kk)
    Wgmma64x256MnB(o, Sw128Desc(sP + kk * 32, 16, 1024), Sw128Desc(sK + 4 * wg * kBlock + kk * 16 * 128, mn_lbo, mn_sbo),
                   kk > 0);
  WgmmaCommit();
  WgmmaWait<0>();

  const int r0 = 16 * warp + lane / 4;
  for (int n = 0; n < 4; ++n)
    for (int e = 0; e < 4; ++e) s_out[(r0 + 8 * (e / 2)) * kRows + 32 * wg + 8 * n + 2 * (lane % 4) + e % 2] = s[n][e];
  for (int n = 0; n < 32; ++n)
    for (int e = 0; e < 4; ++e) o_out[(r0 + 8 * (e / 2)) * 512 + 256 * wg + 8 * n + 2 * (lane % 4) + e % 2] = o[n][e];
}

// Row-major x[rows][ld] (bf16) -> the m16n8k16 A fragment of rows 16 w + [0, 16), columns [k0, k0 + 16).
__device__ void FragmentA(const __nv_bfloat16* x, int ld, int w, int k0, uint32_t (&a)[4]) {
  const int lane = threadIdx.x % 32, r = 16 * w + lane / 4, c = k0 + 2 * (lane % 4);
  auto pair = [&](int row, int col) { return *reinterpret_cast<const uint32_t*>(x + row * ld + col); };
  a[0] = pair(r, c);
  a[1] = pair(r + 8, c);
  a[2] = pair(r, c + 8);
  a[3] = pair(r + 8, c + 8);
}

template <int N>
__device__ void Store(const float (&d)[N][4], float* out, int ld, int col0) {
  const int lane = threadIdx.x % 32, r0 = 16 * ((threadIdx.x / 32) % 4) + lane / 4;
  for (int n = 0; n < N; ++n)
    for (int e = 0; e < 4; ++e) out[(r0 + 8 * (e / 2)) * ld + col0 + 8 * n + 2 * (lane % 4) + e % 2] = d[n][e];
}

// O [64 x 512] in blocks of kN columns, each one batch of kRows / 16 MMAs, mma(o, kk, the block's
// first 64-column block of V), stored into out.
template <int kN, typename Mma>
__device__ __forceinline__ void OInBlocks(Mma mma, float* out) {
  for (int cb = 0; cb < 512 / kN; ++cb) {
    float o[kN / 8][4];
    WgmmaFence();
    for (int kk = 0; kk < kRows / 16; ++kk) mma(o, kk, kN / 64 * cb);
    WgmmaCommit();
    WgmmaWait<0>();
    Store(o, out, 512, kN * cb);
  }
}

// out: S and O of warpgroup 0 (s0, o0), of warpgroup 1 (s1, o1 from m64n256, o2 from m64n128).
__global__ void __launch_bounds__(256, 1)
    Forms(const __nv_bfloat16* q, const __nv_bfloat16* kv, const __nv_bfloat16* pr, float* s0, float* s1,
          float* o0, float* o1, float* o2) {
  extern __shared__ __align__(1024) uint8_t smem[];
  const uint32_t base = (SmemAddr(smem) + 1023) & ~1023u;
  const uint32_t sQ = base, sK = base + kTile, sP = base + 2 * kTile;
  FillTiles(q, kv, pr, sQ, sK, sP);
  const int warp = (threadIdx.x / 32) % 4;
  auto v_desc = [&](int col_block, int kk) { return Sw128Desc(sK + col_block * kBlock + kk * 16 * 128, kBlock, 1024); };
  float s[8][4];
  WgmmaFence();
  if (threadIdx.x < 128) {
    for (int ks = 0; ks < kCols / 16; ++ks) {
      const uint32_t k_off = Sw128KStep(ks, kBlock);
      Wgmma64x64(s, Sw128Desc(sQ + k_off, 16, 1024), Sw128Desc(sK + k_off, 16, 1024), ks > 0);
    }
    WgmmaCommit();
    WgmmaWait<0>();
    Store(s, s0, kRows, 0);
    OInBlocks<128>([&](float(&o)[16][4], int kk, int vb) {
      Wgmma64x128MnB(o, Sw128Desc(sP + kk * 32, 16, 1024), v_desc(vb, kk), kk > 0);
    }, o0);
  } else {
    for (int ks = 0; ks < kCols / 16; ++ks) {
      uint32_t a[4];
      FragmentA(q, kCols, warp, 16 * ks, a);
      Wgmma64x64Rs(s, a, Sw128Desc(sK + Sw128KStep(ks, kBlock), 16, 1024), ks > 0);
      WgmmaCommit();
      WgmmaWait<0>();  // a is read while the MMA runs
    }
    Store(s, s1, kRows, 0);
    uint32_t pa[kRows / 16][4];
    for (int kk = 0; kk < kRows / 16; ++kk) FragmentA(pr, kRows, warp, 16 * kk, pa[kk]);
    OInBlocks<256>([&](float(&o)[32][4], int kk, int vb) { Wgmma64x256RsMnB(o, pa[kk], v_desc(vb, kk), kk > 0); }, o1);
    OInBlocks<128>([&](float(&o)[16][4], int kk, int vb) { Wgmma64x128RsMnB(o, pa[kk], v_desc(vb, kk), kk > 0); }, o2);
  }
}

std::vector<__nv_bfloat16> Random(size_t n, std::mt19937& rng) {
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<__nv_bfloat16> x(n);
  for (auto& v : x) v = __float2bfloat16(dist(rng));
  return x;
}

// Largest |got - want| over the largest |want|.
double RelErr(const std::vector<float>& got, const std::vector<double>& want) {
  double err = 0, scale = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double d = std::fabs(got[i] - want[i]);
    if (!(d <= err)) err = d;  // NaN (an unwritten output) sticks
    scale = std::max(scale, std::fabs(want[i]));
  }
  return err / scale;
}

}  // namespace

int main(int argc, char** argv) {
  longhaul::kernels::RequireHopper("wgmma_check");
  std::mt19937 rng(argc > 1 ? std::atoi(argv[1]) : 1);
  const auto q = Random(kRows * kCols, rng), kv = Random(kRows * kCols, rng), pr = Random(kRows * kRows, rng);
  auto f = [](__nv_bfloat16 x) { return double(__bfloat162float(x)); };
  std::vector<double> s_ref(kRows * kRows), o_ref(kRows * 512);
  for (int i = 0; i < kRows; ++i) {
    for (int t = 0; t < kRows; ++t)
      for (int k = 0; k < kCols; ++k) s_ref[i * kRows + t] += f(q[i * kCols + k]) * f(kv[t * kCols + k]);
    for (int c = 0; c < 512; ++c)
      for (int t = 0; t < kRows; ++t) o_ref[i * 512 + c] += f(pr[i * kRows + t]) * f(kv[t * kCols + c]);
  }
  __nv_bfloat16 *dq = ToDevice(q), *dkv = ToDevice(kv), *dp = ToDevice(pr);
  float *ds, *dout;
  CK(cudaMalloc(&ds, s_ref.size() * 4));
  CK(cudaMalloc(&dout, o_ref.size() * 4));
  const int smem = 2 * kTile + kBlock + 1024;
  CK(cudaFuncSetAttribute(Product, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  bool documented_ok = false;
  const uint32_t variants[2][2] = {{kBlock, 1024}, {1024, kBlock}};  // {lbo, sbo}: documented first
  for (int v = 0; v < 2; ++v) {
    CK(cudaMemset(ds, 0xff, s_ref.size() * 4));  // NaN until written
    CK(cudaMemset(dout, 0xff, o_ref.size() * 4));
    Product<<<1, 256, smem>>>(dq, dkv, dp, ds, dout, variants[v][0], variants[v][1]);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    std::vector<float> s(s_ref.size()), o(o_ref.size());
    CK(cudaMemcpy(s.data(), ds, s.size() * 4, cudaMemcpyDeviceToHost));
    CK(cudaMemcpy(o.data(), dout, o.size() * 4, cudaMemcpyDeviceToHost));
    const double es = RelErr(s, s_ref), eo = RelErr(o, o_ref);
    // fp32 accumulation of exact bf16 products: ~1e-6 of the largest value; a layout error is O(1).
    const bool ok = es < 1e-4 && eo < 1e-4;
    std::printf("MN-major lbo %u sbo %u: S (K-major) max err %.2e, O (MN-major B) max err %.2e: %s\n",
                variants[v][0], variants[v][1], es, eo, ok ? "PASS" : "FAIL");
    if (v == 0) documented_ok = ok;
  }
  // The other forms, documented strides only.
  std::vector<float*> outs(5);
  const size_t sizes[5] = {s_ref.size(), s_ref.size(), o_ref.size(), o_ref.size(), o_ref.size()};
  for (int i = 0; i < 5; ++i) {
    CK(cudaMalloc(&outs[i], sizes[i] * 4));
    CK(cudaMemset(outs[i], 0xff, sizes[i] * 4));
  }
  CK(cudaFuncSetAttribute(Forms, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  Forms<<<1, 256, smem>>>(dq, dkv, dp, outs[0], outs[1], outs[2], outs[3], outs[4]);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  const char* names[5] = {"Wgmma64x64 (S)", "Wgmma64x64Rs (S)", "Wgmma64x128MnB (O)", "Wgmma64x256RsMnB (O)",
                          "Wgmma64x128RsMnB (O)"};
  bool forms_ok = true;
  for (int i = 0; i < 5; ++i) {
    std::vector<float> got(sizes[i]);
    CK(cudaMemcpy(got.data(), outs[i], got.size() * 4, cudaMemcpyDeviceToHost));
    const double e = RelErr(got, i < 2 ? s_ref : o_ref);
    std::printf("%s: max err %.2e: %s\n", names[i], e, e < 1e-4 ? "PASS" : "FAIL");
    forms_ok = forms_ok && e < 1e-4;
  }
  return documented_ok && forms_ok ? 0 : 1;
}
