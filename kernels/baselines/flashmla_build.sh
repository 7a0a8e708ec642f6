#!/usr/bin/env bash
# baselines/flashmla_build.sh: builds DeepSeek's FlashMLA dense decode for sm90 (split-KV kernel, its
# combine and its schedule-metadata kernel) as a plain shared library, so that
# kernels/mla/flashmla_bench.py times it beside our kernels in one process (FLASHMLA_LIB). Their
# source is fetched, never committed: pass the folder that holds FlashMLA's csrc/ (commit 9241ae3 was
# measured) with its CUTLASS submodule in csrc/cutlass (commit 147f567). Built here with nvcc 13 for
# sm_90a, bf16 only, behind C entry points written below (what their torch interface,
# csrc/api/dense_decode.h, does for one KV head); torch is not needed.
#
# Usage: kernels/baselines/flashmla_build.sh FLASHMLA_DIR   ->  FLASHMLA_DIR/libflashmla_shim.so
set -euo pipefail
SRC="$(cd "${1:?usage: flashmla_build.sh FLASHMLA_DIR}" && pwd)"
NVCC="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
C="$SRC/csrc"
OUT="$SRC/shim"
mkdir -p "$OUT"
cat > "$OUT/entry.cu" <<'EOF'
#include <algorithm>

#include "params.h"
#include "sm90/decode/dense/splitkv_mla.h"
#include "smxx/decode/combine/combine.h"
#include "smxx/decode/get_decoding_sched_meta/get_decoding_sched_meta.h"

// The schedule's parts for s_q x h_q query rows over one KV head (their interface's formula).
extern "C" int flashmla_num_sm_parts(int s_q, int h_q, int num_sms) {
  return std::max(num_sms / ((s_q * h_q + 63) / 64), 1);
}
// DecodingSchedMeta's size in ints (the metadata is [num_sm_parts][this]).
extern "C" int flashmla_meta_ints() { return int(sizeof(DecodingSchedMeta) / sizeof(int)); }

// Their get_mla_metadata: once per batch (seqlens), outside the per-layer decode calls.
extern "C" int flashmla_metadata(int* seqlens_k, int b, int s_q, void* meta, int* num_splits, int num_sm_parts,
                                 cudaStream_t stream) {
  GetDecodeSchedMetaParams p = {b, s_q, 64, 5, -1, -1, nullptr, nullptr, seqlens_k,
                                static_cast<DecodingSchedMeta*>(meta), num_splits, num_sm_parts, stream};
  smxx::decode::run_get_decoding_sched_meta_kernel(p);
  return int(cudaGetLastError());
}

// Decode + combine: q [b, s_q, h_q, 576] bf16, kcache [num_blocks, 64, 576] bf16, block_table int32
// [b][bt_stride], seqlens_k int32 [b]; out [b, s_q, h_q, 512] bf16, lse [b, h_q*s_q] fp32 (their
// order for one KV head: row s * h_q + h); lse_accum [b + parts][s_q*h_q] and o_accum
// [b + parts][s_q*h_q][512] fp32 scratch. Causal where s_q > 1.
extern "C" int flashmla_decode(void* q, void* kcache, int* block_table, long long bt_stride, int* seqlens_k, int b,
                               int s_q, int h_q, int num_blocks, float scale, void* out, float* lse, float* lse_accum,
                               float* o_accum, void* meta, int* num_splits, int num_sm_parts, cudaStream_t stream) {
  const int rows = s_q * h_q;  // q_seq_per_hk with one KV head
  DenseAttnDecodeParams p{};
  p.b = b, p.s_q = s_q, p.q_seq_per_hk = rows, p.d = 576, p.d_v = 512, p.h_q = h_q, p.h_k = 1;
  p.num_blocks = num_blocks, p.q_head_per_hk = h_q, p.is_causal = s_q > 1;
  p.scale_softmax = scale, p.scale_softmax_log2 = scale * 1.4426950408889634f;
  p.q_ptr = q, p.k_ptr = kcache, p.o_ptr = out, p.softmax_lse_ptr = lse;
  p.q_batch_stride = int64_t(rows) * 576, p.q_row_stride = 576, p.q_head_stride = 576;
  p.k_batch_stride = 64 * 576, p.k_row_stride = 576, p.k_head_stride = 576;
  p.o_batch_stride = int64_t(rows) * 512, p.o_row_stride = 512, p.o_head_stride = int64_t(rows) * 512;
  p.block_table = block_table, p.block_table_batch_stride = bt_stride, p.page_block_size = 64;
  p.seqlens_k_ptr = seqlens_k;
  p.tile_scheduler_metadata_ptr = static_cast<DecodingSchedMeta*>(meta), p.num_sm_parts = num_sm_parts;
  p.num_splits_ptr = num_splits;
  p.total_num_splits = b + num_sm_parts, p.softmax_lseaccum_ptr = lse_accum, p.oaccum_ptr = o_accum;
  p.stream = stream;
  sm90::run_flash_splitkv_mla_kernel<cutlass::bfloat16_t>(p);
  CombineParams c = {b, s_q, h_q, 512, lse, out, rows, h_q, h_q * s_q * 512, h_q * 512, 512,
                     lse_accum, o_accum, rows, h_q, h_q * s_q * 512, h_q * 512, 512,
                     p.tile_scheduler_metadata_ptr, num_splits, num_sm_parts, nullptr, stream};
  smxx::decode::run_flash_mla_combine_kernel<cutlass::bfloat16_t>(c);
  return int(cudaGetLastError());
}
EOF
FLAGS=(-std=c++20 -O3 -DNDEBUG -D_USE_MATH_DEFINES -DFLASH_MLA_DISABLE_FP16 -Xcompiler=-fPIC
       -U__CUDA_NO_HALF_OPERATORS__ -U__CUDA_NO_HALF_CONVERSIONS__ -U__CUDA_NO_HALF2_OPERATORS__
       -U__CUDA_NO_BFLOAT16_CONVERSIONS__ --expt-relaxed-constexpr --expt-extended-lambda --use_fast_math
       -gencode=arch=compute_90a,code=sm_90a -I"$C" -I"$C/kerutils/include" -I"$C/cutlass/include"
       -I"$C/cutlass/tools/util/include")
objs=() pids=()
for f in "$C/sm90/decode/dense/instantiations/bf16.cu" "$C/smxx/decode/combine/combine.cu" \
         "$C/smxx/decode/get_decoding_sched_meta/get_decoding_sched_meta.cu" "$OUT/entry.cu"; do
  o="$OUT/$(basename "$(dirname "$f")")_$(basename "$f" .cu).o"
  "$NVCC" "${FLAGS[@]}" -c "$f" -o "$o" &
  objs+=("$o") pids+=($!)
done
for pid in "${pids[@]}"; do wait "$pid"; done  # each compile's status: a plain `wait` returns 0
"$NVCC" -shared -gencode=arch=compute_90a,code=sm_90a "${objs[@]}" -lcuda -o "$SRC/libflashmla_shim.so"
echo "built $SRC/libflashmla_shim.so"
