"""Ours and FlashMLA at B128 H128 S8192 s_q 1 and 2 in steady state (graph replays back to back for
2.5 s each, no flush, twice in turn), with nvidia-smi logging the SM clock and the power every 50 ms.
Why: at these compute-bound shapes ours trails FlashMLA by 4-9% (RESULTS.md), and under load the H200
runs power-capped at 1815-1980 MHz. Where ours runs at FlashMLA's clock and still takes longer, the gap
is in cycles (the kernel's schedule); where ours runs at a lower clock (more power a cycle), that part of
the gap is power. Prints us a call, the median SM clock and power of each phase.

Usage (on the GPU, repo root):
  FLASHMLA_LIB=.../libflashmla_shim.so PYTHONPATH=python python3 kernels/mla/power_bench.py
"""
import datetime
import os
import statistics
import subprocess
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flashmla_bench as fb  # noqa: E402  (its inputs and FlashMLA's call)
from longhaul_kernels import mla_decode  # noqa: E402
from longhaul_kernels.timing import graphed  # noqa: E402

SECONDS = 2.5


def steady_us(replay):
    """Microseconds a call over SECONDS of back-to-back replays; the phase's wall-clock span."""
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    t0, calls = time.time(), 0
    start.record()
    while time.time() - t0 < SECONDS:
        for _ in range(20):
            replay()
        calls += 20
        torch.cuda.synchronize()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) * 1000.0 / calls, t0 + 0.5, time.time()  # (the clock settles first)


def measure(lib):
    """The phases: (name, us a call, start, end) for each shape, round and kernel."""
    phases = []
    for B, H, S, s_q in [(128, 128, 8192, 1), (128, 128, 8192, 2)]:
        q, pages, table, seqlens = fb.paged_inputs(B, H, S, s_q)
        o = torch.empty(B, s_q, H, fb.DV, dtype=torch.bfloat16, device="cuda")
        lse = torch.empty(B, s_q, H, dtype=torch.float32, device="cuda")
        ours = graphed(lambda: mla_decode(q, pages, seqlens, block_table=table, scale=fb.SCALE, causal=True,
                                          out=o, lse=lse))
        theirs = graphed(fb.flashmla_call(lib, q, pages, table, seqlens)[0])
        for rnd in range(2):
            for name, replay in (("ours", ours), ("FlashMLA", theirs)):
                phases.append((f"s_q{s_q} {name} (round {rnd + 1})", *steady_us(replay)))
    return phases


def main():
    lib = fb.flashmla_library()
    log_path = os.path.join(os.environ.get("OUT", "/tmp"), "power_smi.csv")
    with open(log_path, "w") as log:
        smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,clocks.sm,power.draw",
                                "--format=csv,noheader,nounits", "-lms", "50"], stdout=log)
        try:
            time.sleep(1.0)
            phases = measure(lib)
        finally:  # (killed by a timeout or failed: nvidia-smi would go on logging)
            smi.terminate()
            smi.wait()
    samples = []
    for line in open(log_path):
        fields = [x.strip() for x in line.split(",")]
        try:
            when = datetime.datetime.strptime(fields[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            samples.append((when, float(fields[1]), float(fields[2])))
        except (ValueError, IndexError):
            continue  # a header or a field nvidia-smi could not read ("[N/A]")
    print(f"{torch.cuda.get_device_name()}: steady state, {SECONDS} s a phase")
    print("| phase | us a call | SM MHz (median) | W (median) | samples |")
    print("|---|---|---|---|---|")
    for name, us, t0, t1 in phases:
        inside = [s for s in samples if t0 <= s[0] <= t1]
        mhz = f"{statistics.median(s[1] for s in inside):.0f}" if inside else "-"
        watts = f"{statistics.median(s[2] for s in inside):.0f}" if inside else "-"
        print(f"| {name} | {us:.1f} | {mhz} | {watts} | {len(inside)} |")


if __name__ == "__main__":
    main()
