// kda/scan.cu: stage 2 of the KDA forward, the sequential inter-chunk scan. One block per
// (sequence, head, slice of BV = 32 value columns): the state's V columns evolve independently, so
// a head's 128 columns go to 4 blocks (B*H = 64 heads -> 256 blocks, two per SM).
//
// Tiles and why:
//   - 4 warps (128 threads). The state slice S [K=128][BV=32] fp32 lives in registers as MMA
//     accumulators: warp w owns rows 32w..32w+31 (2 m16 tiles x 4 n8 tiles = 32 floats a thread).
//   - Per chunk every warp computes 16 of the 64 output rows (rows 16w..16w+15) for V_new and O.
//   - Shared memory about 94 KB, so two blocks share an SM: one block's loads overlap the other's
//     MMAs. Inputs arrive by cp.async in two groups, each issued as soon as its buffers are free:
//     (W, Qg, U) during phase B of the previous chunk, (Aqk, KgT, gamma) during phase A.
//   - Precision: W, Qg, Aqk, KgT, U and V_new are bf16 MMA operands (as FLA's); the state operand S
//     is split hi + lo (two MMAs), so the state enters the products with ~16 bits, not 8; the state
//     itself accumulates in fp32.
//
// The math, per chunk (S = state at the chunk start, [K, BV]):
//   phase A:  V_new = U - W S            QS = Qg S          (needs W, Qg, U and S)
//   phase B:  O     = QS + Aqk V_new     (Aqk lower triangular: warp w needs column blocks <= w)
//             S     = Diag(gamma) S + KgT V_new
#include "kda/kda.h"
#include "kda/kda_gpu.cuh"

namespace longhaul::kda::gpu {
namespace {

constexpr int kBV = 32;
constexpr int kThreads = 128;
constexpr int kLdW = kK + 8;     // W, Qg rows (bf16)
constexpr int kLdU = kBV + 8;    // U slice, S, V_new rows
constexpr int kLdA = kC + 8;     // Aqk, KgT rows

struct Smem {
  __nv_bfloat16 W[kC][kLdW];
  __nv_bfloat16 Qg[kC][kLdW];
  __nv_bfloat16 U[kC][kLdU];
  __nv_bfloat16 A[kC][kLdA];
  __nv_bfloat16 KgT[kK][kLdA];
  float gamma[kK];
  __nv_bfloat16 S_hi[kK][kLdU];
  __nv_bfloat16 S_lo[kK][kLdU];
  __nv_bfloat16 Vn[kC][kLdU];
};

__device__ __forceinline__ void IssueGroup1(Smem& s, const Params& p, size_t ch, int v0, int tid) {
  const __nv_bfloat16* W = p.ws.W + ch * kC * kK;
  const __nv_bfloat16* Qg = p.ws.Qg + ch * kC * kK;
  const __nv_bfloat16* U = p.ws.U + ch * kC * kV + v0;
#pragma unroll
  for (int x = 0; x < 8; ++x) {  // 64 rows x 16 chunks of 16 B
    const int it = tid + x * kThreads, r = it >> 4, c8 = (it & 15) * 8;
    CpAsync16(&s.W[r][c8], W + r * kK + c8);
    CpAsync16(&s.Qg[r][c8], Qg + r * kK + c8);
  }
#pragma unroll
  for (int x = 0; x < 2; ++x) {  // 64 rows x 4 chunks
    const int it = tid + x * kThreads, r = it >> 2, c8 = (it & 3) * 8;
    CpAsync16(&s.U[r][c8], U + r * kV + c8);
  }
}
__device__ __forceinline__ void IssueGroup2(Smem& s, const Params& p, size_t ch, int tid) {
  const __nv_bfloat16* A = p.ws.Aqk + ch * kC * kC;
  const __nv_bfloat16* KgT = p.ws.KgT + ch * kK * kC;
#pragma unroll
  for (int x = 0; x < 4; ++x) {  // 64 rows x 8 chunks
    const int it = tid + x * kThreads, r = it >> 3, c8 = (it & 7) * 8;
    CpAsync16(&s.A[r][c8], A + r * kC + c8);
  }
#pragma unroll
  for (int x = 0; x < 8; ++x) {  // 128 rows x 8 chunks
    const int it = tid + x * kThreads, r = it >> 3, c8 = (it & 7) * 8;
    CpAsync16(&s.KgT[r][c8], KgT + r * kC + c8);
  }
  if (tid < kK / 4) CpAsync16(&s.gamma[tid * 4], p.ws.gamma + ch * kK + tid * 4);
}

__global__ void __launch_bounds__(kThreads, 2) ScanKernel(const Params p) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  Smem& s = *reinterpret_cast<Smem*>(smem_raw);
  const int tid = threadIdx.x, lane = tid & 31, w = tid >> 5, g = lane >> 2, t = lane & 3;
  const int v0 = blockIdx.x * kBV, h = blockIdx.y, n = blockIdx.z, H = p.H;
  const SeqInfo sq = GetSeq(p, n);
  const int nchunks = int((sq.len + kC - 1) / kC);

  // State rows d = 32w + mt*16 + g (+8), columns e = nt*8 + 2t (+1), within this V slice.
  float S[2][4][4];
  const size_t state_off = (size_t(n) * H + h) * kK * kV;
  auto sidx = [&](int d, int e) -> size_t {
    return state_off + (p.v_first ? size_t(v0 + e) * kK + d : size_t(d) * kV + v0 + e);
  };
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int x = 0; x < 4; ++x) {
        const int d = 32 * w + mt * 16 + g + (x >> 1) * 8, e = nt * 8 + 2 * t + (x & 1);
        S[mt][nt][x] = p.h0 ? p.h0[sidx(d, e)] : 0.f;
      }
  auto write_state_smem = [&]() {
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int hf = 0; hf < 2; ++hf) {
          const int d = 32 * w + mt * 16 + g + hf * 8, e = nt * 8 + 2 * t;
          uint32_t hi, lo;
          SplitBf16(S[mt][nt][2 * hf], S[mt][nt][2 * hf + 1], hi, lo);
          *reinterpret_cast<uint32_t*>(&s.S_hi[d][e]) = hi;
          *reinterpret_cast<uint32_t*>(&s.S_lo[d][e]) = lo;
        }
  };
  write_state_smem();

  if (nchunks > 0) {
    const size_t ch0 = size_t(sq.chunk0) * H + h;
    IssueGroup1(s, p, ch0, v0, tid);
    CpAsyncCommit();
    IssueGroup2(s, p, ch0, tid);
    CpAsyncCommit();
  }
  for (int c = 0; c < nchunks; ++c) {
    const size_t chn = size_t(sq.chunk0 + c + 1) * H + h;  // the next chunk's record
    const bool more = c + 1 < nchunks;
    CpAsyncWait<1>();
    __syncthreads();  // W, Qg, U of chunk c and S are visible

    // ---- phase A: V_new = U - W S, QS = Qg S (rows 16w..16w+15) --------------------------------
    float ws[4][4] = {}, qs[4][4] = {};
#pragma unroll
    for (int ks = 0; ks < kK / 16; ++ks) {
      uint32_t aw[4], aq[4];
      LoadA(aw, &s.W[0][0], kLdW, 16 * w, ks * 16, lane);
      LoadA(aq, &s.Qg[0][0], kLdW, 16 * w, ks * 16, lane);
#pragma unroll
      for (int np = 0; np < 2; ++np) {
        uint32_t bh[4], bl[4];
        LoadBKN(bh, &s.S_hi[0][0], kLdU, ks * 16, np * 16, lane);
        LoadBKN(bl, &s.S_lo[0][0], kLdU, ks * 16, np * 16, lane);
#pragma unroll
        for (int q2 = 0; q2 < 2; ++q2) {
          const int nt = 2 * np + q2;
          Mma(ws[nt], aw, bh[2 * q2], bh[2 * q2 + 1]);
          Mma(ws[nt], aw, bl[2 * q2], bl[2 * q2 + 1]);
          Mma(qs[nt], aq, bh[2 * q2], bh[2 * q2 + 1]);
          Mma(qs[nt], aq, bl[2 * q2], bl[2 * q2 + 1]);
        }
      }
    }
#pragma unroll
    for (int nt = 0; nt < 4; ++nt)
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const int i = 16 * w + g + hf * 8, e = nt * 8 + 2 * t;
        const float2 u = __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&s.U[i][e]));
        *reinterpret_cast<uint32_t*>(&s.Vn[i][e]) =
            PackBf16(u.x - ws[nt][2 * hf], u.y - ws[nt][2 * hf + 1]);
      }
    CpAsyncWait<0>();
    __syncthreads();  // V_new, Aqk, KgT, gamma visible; W, Qg, U free
    if (more) IssueGroup1(s, p, chn, v0, tid);
    CpAsyncCommit();

    // ---- phase B: O = QS + Aqk V_new;  S = Diag(gamma) S + KgT V_new ----------------------------
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const float gm = s.gamma[32 * w + mt * 16 + g + hf * 8];
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) S[mt][nt][2 * hf] *= gm, S[mt][nt][2 * hf + 1] *= gm;
      }
#pragma unroll
    for (int ks = 0; ks < kC / 16; ++ks) {
      uint32_t b[2][4];
      LoadBKN(b[0], &s.Vn[0][0], kLdU, ks * 16, 0, lane);
      LoadBKN(b[1], &s.Vn[0][0], kLdU, ks * 16, 16, lane);
      if (ks <= w) {
        uint32_t a[4];
        LoadA(a, &s.A[0][0], kLdA, 16 * w, ks * 16, lane);
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) Mma(qs[nt], a, b[nt >> 1][2 * (nt & 1)], b[nt >> 1][2 * (nt & 1) + 1]);
      }
#pragma unroll
      for (int mt = 0; mt < 2; ++mt) {
        uint32_t a[4];
        LoadA(a, &s.KgT[0][0], kLdA, 32 * w + mt * 16, ks * 16, lane);
#pragma unroll
        for (int nt = 0; nt < 4; ++nt)
          Mma(S[mt][nt], a, b[nt >> 1][2 * (nt & 1)], b[nt >> 1][2 * (nt & 1) + 1]);
      }
    }
    // Output rows of this chunk (tail rows are not stored).
    {
      const int64_t tc = sq.bos + int64_t(c) * kC;
      const int rows = int(sq.len - int64_t(c) * kC < kC ? sq.len - int64_t(c) * kC : kC);
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const int i = 16 * w + g + hf * 8;
        if (i >= rows) continue;
        const int64_t off = sq.b * p.o_st[0] + (tc + i) * p.o_st[1] + h * p.o_st[2] + v0;
#pragma unroll
        for (int nt = 0; nt < 4; ++nt) {
          const int e = nt * 8 + 2 * t;
          if (p.out_bf16)
            *reinterpret_cast<uint32_t*>(static_cast<__nv_bfloat16*>(p.o) + off + e) =
                PackBf16(qs[nt][2 * hf], qs[nt][2 * hf + 1]);
          else
            *reinterpret_cast<float2*>(static_cast<float*>(p.o) + off + e) =
                make_float2(qs[nt][2 * hf], qs[nt][2 * hf + 1]);
        }
      }
    }
    write_state_smem();  // phase A of this chunk is past the barrier: S_hi/S_lo are free
    __syncthreads();     // Aqk, KgT, gamma, V_new free; S visible
    if (more) IssueGroup2(s, p, chn, tid);
    CpAsyncCommit();
  }
  CpAsyncWait<0>();

  if (p.hT) {
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int nt = 0; nt < 4; ++nt)
#pragma unroll
        for (int x = 0; x < 4; ++x) {
          const int d = 32 * w + mt * 16 + g + (x >> 1) * 8, e = nt * 8 + 2 * t + (x & 1);
          p.hT[sidx(d, e)] = S[mt][nt][x];
        }
  }
}

}  // namespace

cudaError_t LaunchScan(const Params& p, cudaStream_t stream) {
  const int smem = int(sizeof(Smem));
  static bool configured = false;
  if (!configured) {
    const cudaError_t e =
        cudaFuncSetAttribute(ScanKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    if (e != cudaSuccess) return e;
    configured = true;
  }
  ScanKernel<<<dim3(kV / kBV, p.H, p.N), kThreads, smem, stream>>>(p);
  return cudaGetLastError();
}

}  // namespace longhaul::kda::gpu
