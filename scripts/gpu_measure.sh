#!/usr/bin/env bash
# scripts/gpu_measure.sh: one device call that checks and times what main holds, in the order of what
# was least measured; each part gets what is left of L seconds (default 580) and logs under $OUT:
#   1. the KDA scan-step probe (kernels/kda/RESULTS.md step 14) at B1 H64 and B8 H16, and memcheck on
#      its check (memcheck does not see shared-memory races; racecheck on a whole sequence is too slow)
#   2. gpu_check of KDA and MLA on one fresh seed
#   3. the C++ benches, KDA twice (BENCH_SHAPES=0123) and MLA twice (every shape)
#   4. ours beside FlashMLA (flashmla_bench.py), then in steady state with the SM clock and power
#      logged (power_bench.py)
#   5. ours beside FLA and FlashKDA (fla_bench.py; FLA_SHAPES, default 2301: Triton's autotune costs
#      ~90 s a shape on a fresh machine). Its "ours" against step 3's tells whether the Python harness
#      still reads ours above the C++ bench.
# Needs scripts/gpu_prepare.sh's folders carried: .device and .fla. Usage there: L=580 scripts/gpu_measure.sh
set -uo pipefail
cd "$(dirname "$0")/.."
L=${L:-580} T0=$(date +%s) OUT=${OUT:-/tmp}
left() { echo $(( L - ($(date +%s) - T0) )); }
part() { echo "== $1 ($(left) s left)"; }
# within SECONDS RESERVE CMD...: CMD under a timeout of what is left less RESERVE, at most SECONDS;
# skipped when under 10 s remain for it (timeout 0 would mean no limit, a negative one an error).
within() {
  local cap=$1 reserve=$2 t
  shift 2
  t=$(( $(left) - reserve ))
  (( t > cap )) && t=$cap
  if (( t < 10 )); then echo "skipped (time): $*"; return 0; fi
  timeout "$t" "$@"
}
D=.device
export PYTHONPATH=python:.fla FLA_FLASH_KDA=0
nvidia-smi --query-gpu=name,clocks.max.sm,memory.total,driver_version --format=csv,noheader
part "1. scan-step probe"
for s in 0 1; do
  within 90 0 $D/kda/scan_step_probe $s 20 > "$OUT/probe$s.txt" 2>&1
  echo "probe $s: rc=$?"; tail -16 "$OUT/probe$s.txt"
done
within 90 0 compute-sanitizer --tool memcheck $D/kda/scan_step_probe 1 0 > "$OUT/probe_memcheck.txt" 2>&1
echo "probe memcheck: rc=$?"; tail -2 "$OUT/probe_memcheck.txt"
part "2. gpu_check"
seed=$RANDOM$RANDOM; echo "seed $seed"
for k in kda mla; do
  within 120 0 $D/$k/gpu_check "$seed" > "$OUT/${k}_check.txt" 2>&1; echo "$k gpu_check: rc=$?"; tail -1 "$OUT/${k}_check.txt"
done
part "3. C++ benches"
for r in 1 2; do BENCH_SHAPES=0123 within 60 0 $D/kda/bench 30 > "$OUT/kda_bench$r.txt" 2>&1; tail -6 "$OUT/kda_bench$r.txt"; done
for r in 1 2; do within 90 0 $D/mla/bench 50 > "$OUT/mla_bench$r.txt" 2>&1; tail -9 "$OUT/mla_bench$r.txt"; done
part "4. beside FlashMLA"
if [ -f $D/base/libflashmla_shim.so ]; then
  export FLASHMLA_LIB=$D/base/libflashmla_shim.so
  LONGHAUL_KERNELS_LIB=$D/mla within 150 150 python3 kernels/mla/flashmla_bench.py 30 2>&1 \
    | tee "$OUT/flashmla.txt" | tail -9
  LONGHAUL_KERNELS_LIB=$D/mla within 60 100 python3 kernels/mla/power_bench.py 2>&1 | tee "$OUT/power.txt" | tail -10
fi
part "5. beside FLA and FlashKDA"
FLASHKDA_LIB=$( [ -f $D/base/libflashkda_shim.so ] && echo $D/base/libflashkda_shim.so ) \
LONGHAUL_KERNELS_LIB=$D/kda within 600 5 python3 kernels/kda/fla_bench.py "${FLA_SHAPES:-2301}" 30 2>&1 \
  | tee "$OUT/fla.txt" | grep -v -i warn | tail -12
part "end"
