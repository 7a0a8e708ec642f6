#!/usr/bin/env bash
# scripts/gpu_prepare.sh: everything a lent GPU machine needs for scripts/gpu_measure.sh, built here
# (nvcc 13, sm_90a) into ignored folders, to carry there with `.device` and `.fla` (~25 MB):
#   .device/kda, .device/mla   our kernels' libraries, checks, benches and probes (kernels/*/build_gpu.sh)
#   .device/base               FlashMLA's and FlashKDA's shims (kernels/baselines/*_build.sh)
#   .fla                       FLA's Python package (its Triton chunk_kda runs beside ours)
# The fetched sources never go into a commit. Pass git directories holding them (e.g. what the fetch
# tool brings); each is read at the commit measured so far:
#   FLA_GIT       fla-org/flash-linear-attention  (bc3b101d)
#   FLASHMLA_GIT  deepseek-ai/FlashMLA            (9241ae3; its CUTLASS submodule at 147f567)
#   FLASHKDA_GIT  MoonshotAI/FlashKDA             (1ce47ea; its CUTLASS at 5c149f5)
#   CUTLASS_GIT   NVIDIA/cutlass                  (holding both commits)
# Any of them unset: that part is skipped (gpu_measure.sh then skips what needs it).
# Why a script: ignored folders do not survive into a new checkout, and rebuilding them by hand cost
# each session its first quarter of an hour.
set -euo pipefail
cd "$(dirname "$0")/.."
archive() {  # archive GIT COMMIT DEST [PATHS...]
  local git=$1 commit=$2 dest=$3
  shift 3
  mkdir -p "$dest"
  git -C "$git" archive "$commit" "$@" | tar -x -C "$dest"
}
BUILD_GPU_DIR=$PWD/.device/kda kernels/kda/build_gpu.sh > /dev/null &
kda=$!
BUILD_GPU_DIR=$PWD/.device/mla kernels/mla/build_gpu.sh > /dev/null
wait "$kda"  # (a bare wait returns 0 whatever the build did)
[ -x .device/kda/scan_step_probe ] || { echo "gpu_prepare: the probe did not build: .device/kda/ptxas_probe.txt" >&2; exit 1; }
if [ -n "${FLA_GIT:-}" ]; then
  rm -rf .fla && archive "$FLA_GIT" bc3b101d .fla fla
fi
mkdir -p .device/base
if [ -n "${FLASHMLA_GIT:-}" ] && [ -n "${CUTLASS_GIT:-}" ]; then
  rm -rf .fetched/flashmla
  archive "$FLASHMLA_GIT" 9241ae3 .fetched/flashmla
  archive "$CUTLASS_GIT" 147f567 .fetched/flashmla/csrc/cutlass include tools/util/include
  kernels/baselines/flashmla_build.sh .fetched/flashmla > /dev/null
  cp .fetched/flashmla/libflashmla_shim.so .device/base/
fi
if [ -n "${FLASHKDA_GIT:-}" ] && [ -n "${CUTLASS_GIT:-}" ]; then
  rm -rf .fetched/flashkda
  archive "$FLASHKDA_GIT" 1ce47ea .fetched/flashkda
  archive "$CUTLASS_GIT" 5c149f5 .fetched/flashkda/cutlass include tools/util/include examples/common
  kernels/baselines/flashkda_build.sh .fetched/flashkda > /dev/null
  cp .fetched/flashkda/libflashkda_shim.so .device/base/
fi
rm -f .device/*/*.o
echo "gpu_prepare: $(du -sh .device | cut -f1) in .device, $(du -sh .fla 2>/dev/null | cut -f1) in .fla;" \
     "carry both and run scripts/gpu_measure.sh there"
