#!/usr/bin/env bash
# baselines/flashkda_build.sh: builds MoonshotAI's FlashKDA (the best public KDA forward, CUTLASS) as a
# plain shared library, so that kernels/kda/fla_bench.py times it beside our kernels and FLA in one
# process (FLASHKDA_LIB). Their source is fetched, never committed: pass a folder holding a FlashKDA
# checkout (commit 1ce47ea was measured) with its CUTLASS submodule in cutlass/ (commit 5c149f5).
# Only their launcher is compiled, here with nvcc 13 for sm_90a, with two of its instances (fp32
# states, batched and varlen) behind a C entry point written below; torch is not needed.
#
# Usage: kernels/baselines/flashkda_build.sh FLASHKDA_DIR   ->  FLASHKDA_DIR/libflashkda_shim.so
set -euo pipefail
SRC="$(cd "${1:?usage: flashkda_build.sh FLASHKDA_DIR}" && pwd)"
NVCC="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
OUT="$SRC/shim"
mkdir -p "$OUT"
# Their launcher without its list of 14 instances (two are built below: compile time).
grep -v '^INSTANTIATE_STATE_VARIANTS(' "$SRC/csrc/smxx/fwd_launch.cu" > "$OUT/fwd_launch_two.cu"
cat >> "$OUT/fwd_launch_two.cu" <<'EOF'

// The entry point fla_bench.py calls: fp32 initial and final states [N, H, V, K], bf16 q, k, v, g
// [T_total, H, 128], beta transposed to [H, T_total] (as their torch wrapper does), cu_seqlens or
// null (then N batch rows of T_seq tokens). Returns a cudaError_t.
extern "C" int flashkda_fwd(const void* q, const void* k, const void* v, const void* g, const void* beta_ht,
                            float scale, void* out, void* workspace, const float* A_log, const float* dt_bias,
                            float lower_bound, const float* h0, float* hT, const int64_t* cu_seqlens,
                            int T_total, int T_seq, int H, int N, cudaStream_t stream) {
  using BF16 = cutlass::bfloat16_t;
  constexpr int kChunk = 16;
  const float gate_scale = lower_bound * 1.4426950408889634f;
  if (cu_seqlens) {
    const int tiles = (T_total + kChunk - 1) / kChunk + N;
    launch_fwd<128, true, true, true, true>((const BF16*)q, (const BF16*)k, (const BF16*)v, (const BF16*)g,
                                            (const BF16*)beta_ht, h0, scale, hT, (BF16*)out, workspace, tiles,
                                            T_total, H, N, cu_seqlens, A_log, dt_bias, gate_scale, stream);
  } else {
    const int tiles = N * ((T_seq + kChunk - 1) / kChunk);
    launch_fwd<128, true, true, true, false>((const BF16*)q, (const BF16*)k, (const BF16*)v, (const BF16*)g,
                                             (const BF16*)beta_ht, h0, scale, hT, (BF16*)out, workspace, tiles,
                                             T_total, H, N, nullptr, A_log, dt_bias, gate_scale, stream);
  }
  return int(cudaGetLastError());
}

// Their workspace bound: per 16-token tile and head 3 bf16 [16][128] + fp32 [128] + 2 bf16 [16][16],
// then (N + 1) int32 rounded to 128 bytes.
extern "C" long long flashkda_workspace_bytes(long long T_total, long long H, long long N) {
  const long long tiles = (T_total + 15) / 16 + N;
  return H * tiles * (3 * 16 * 128 * 2 + 128 * 4 + 2 * 16 * 16 * 2) + ((N + 1) * 4 + 127) / 128 * 128;
}
EOF
"$NVCC" -std=c++17 -O3 -shared -Xcompiler=-fPIC -gencode=arch=compute_90a,code=sm_90a \
  -U__CUDA_NO_HALF_OPERATORS__ -U__CUDA_NO_HALF_CONVERSIONS__ -U__CUDA_NO_HALF2_OPERATORS__ \
  -U__CUDA_NO_BFLOAT16_CONVERSIONS__ --expt-relaxed-constexpr --expt-extended-lambda --use_fast_math \
  -I"$SRC/cutlass/include" -I"$SRC/cutlass/tools/util/include" -I"$SRC/cutlass/examples/common" \
  -I"$SRC/csrc" -I"$SRC/csrc/smxx" "$OUT/fwd_launch_two.cu" -o "$SRC/libflashkda_shim.so"
echo "built $SRC/libflashkda_shim.so"
