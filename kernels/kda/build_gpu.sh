#!/usr/bin/env bash
# kda/build_gpu.sh: builds the GPU side of kernels/kda into build_gpu/ (ignored by git):
#   libkda_cuda.so  the C API on the GPU (fused.cu, kda_cuda.cu + kda_api.cc)
#   gpu_check       correctness against the float64 CPU backend (links the CPU reference sources)
#   bench           timings of each kernel variant kda_fwd chooses from
#   scan_step_probe one scan step in a preparation-sized CTA (RESULTS.md step 13), checked and timed
# Cross-compiles here (nvcc 13, sm_90a); the outputs run on the H200. Usage: kernels/kda/build_gpu.sh
# Environment: BUILD_GPU_DIR (the output folder), KERNELS_DIR (the folder holding kda/, default this
# repository's kernels/: tasks/kda builds its workspace copy), NVCC_EXTRA (more nvcc flags).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
OUT="${BUILD_GPU_DIR:-$ROOT/build_gpu}"
NVCC="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
KERNELS="${KERNELS_DIR:-$ROOT/kernels}"
SRC="$KERNELS/kda"
mkdir -p "$OUT"
CU="-std=c++20 -O3 -lineinfo -gencode=arch=compute_90a,code=sm_90a -I$KERNELS -Xcompiler=-fPIC,-Wall ${NVCC_EXTRA:-}"
CXX="${CXX:-g++} -std=c++20 -O2 -fPIC -Wall -I$KERNELS"
for f in kda_api kda_cpu chunked_reference problem reference; do
  $CXX -c "$SRC/$f.cc" -o "$OUT/$f.o" &
  [ "$f" = kda_cpu ] && wait
done
wait
$NVCC $CU -Xptxas -v -c "$SRC/fused.cu" -o "$OUT/fused.o" 2> "$OUT/ptxas_fused.txt" &
$NVCC $CU -c "$SRC/kda_cuda.cu" -o "$OUT/kda_cuda.o"
wait
$NVCC -shared -gencode=arch=compute_90a,code=sm_90a "$OUT/fused.o" "$OUT/kda_cuda.o" \
  "$OUT/kda_api.o" -o "$OUT/libkda_cuda.so"
$NVCC $CU "$SRC/gpu_check.cu" "$OUT/kda_cpu.o" "$OUT/chunked_reference.o" "$OUT/problem.o" \
  "$OUT/reference.o" -L"$OUT" -lkda_cuda -Xlinker -rpath,'$ORIGIN' -o "$OUT/gpu_check" &
$NVCC $CU "$SRC/bench.cu" -L"$OUT" -lkda_cuda -Xlinker -rpath,'$ORIGIN' -o "$OUT/bench"
if [ -f "$SRC/scan_step_probe.cu" ]; then  # (it compiles fused.cu into itself: tasks/kda leaves it out)
  $NVCC $CU -Xptxas -v "$SRC/scan_step_probe.cu" -L"$OUT" -lkda_cuda -Xlinker -rpath,'$ORIGIN' \
    -o "$OUT/scan_step_probe" 2> "$OUT/ptxas_probe.txt"
fi
wait
grep -hE "registers|spill" "$OUT"/ptxas_*.txt
echo "built into $OUT"
