#!/usr/bin/env bash
# mla/build_gpu.sh: builds the GPU side of kernels/mla into build_gpu/mla/ (ignored by git; or
# $BUILD_GPU_DIR):
#   libmla_cuda.so  the C API on the GPU (decode.cu, combine.cu, mla_cuda.cu + mla_api.cc)
#   gpu_check       correctness against the float64 CPU backend (links the CPU reference sources)
#   bench           timings of mla_fwd (graph-launched, L2 flushed)
#   load_probe      how fast each way of loading streams the KV into shared memory (no compute)
#   wgmma_check     common/wgmma.cuh's products and descriptors against float64 (decode's shapes)
# Cross-compiles here (nvcc 13, sm_90a); the outputs run on the H200. Usage: kernels/mla/build_gpu.sh
# Environment: BUILD_GPU_DIR (the output folder), KERNELS_DIR (the folder holding mla/, default this
# repository's kernels/: tasks/mla builds its workspace copy), NVCC_EXTRA (more nvcc flags).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="${BUILD_GPU_DIR:-$ROOT/build_gpu/mla}"
NVCC="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
KERNELS="${KERNELS_DIR:-$ROOT/kernels}"
SRC="$KERNELS/mla"
mkdir -p "$OUT"
CU="-std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a -I$KERNELS -Xcompiler=-fPIC,-Wall ${NVCC_EXTRA:-}"
CXX="${CXX:-g++} -std=c++20 -O2 -fPIC -Wall -I$KERNELS"
for f in mla_api mla_cpu reference split_reference; do
  $CXX -c "$SRC/$f.cc" -o "$OUT/$f.o" &
done
wait
for f in decode combine; do
  $NVCC $CU -Xptxas -v -c "$SRC/$f.cu" -o "$OUT/$f.o" 2> "$OUT/ptxas_$f.txt" &
  [ "$f" = decode ] && wait
done
wait
$NVCC $CU -c "$SRC/mla_cuda.cu" -o "$OUT/mla_cuda.o"
$NVCC -shared -gencode=arch=compute_90a,code=sm_90a "$OUT/decode.o" "$OUT/combine.o" \
  "$OUT/mla_cuda.o" "$OUT/mla_api.o" -o "$OUT/libmla_cuda.so"
$NVCC $CU "$SRC/gpu_check.cu" "$OUT/mla_cpu.o" "$OUT/reference.o" \
  -L"$OUT" -lmla_cuda -Xlinker -rpath,'$ORIGIN' -o "$OUT/gpu_check" &
$NVCC $CU "$SRC/bench.cu" -L"$OUT" -lmla_cuda -Xlinker -rpath,'$ORIGIN' -o "$OUT/bench" &
$NVCC $CU "$SRC/load_probe.cu" -o "$OUT/load_probe" &
$NVCC $CU "$KERNELS/common/wgmma_check.cu" -o "$OUT/wgmma_check"
wait
grep -hE "registers|spill" "$OUT"/ptxas_*.txt
echo "built into $OUT"
