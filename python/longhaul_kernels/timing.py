"""The timing rules of the Python side-by-side benches (kernels/common/bench.cuh's, for callables that
enqueue on the current torch stream): warm-up first, then each call alone between two CUDA events
after a 256 MB write that flushes L2 (outside the events), the median of the samples.

Why the GPU spins before each start event: the events time the GPU, but a callable whose Python side
takes longer to enqueue than the flush takes to run leaves the GPU idle between the start event and
its first kernel, and that idle time is counted. (The suspected cause of our KDA module reading 10-16%
above the C++ bench, kernels/kda/RESULTS.md; this form has not yet run on a GPU.) So the stream is
held busy, for twice the callable's host time plus 50 us, before the start event is recorded.

    from longhaul_kernels.timing import graphed, median_us
    us = median_us(graphed(lambda: f(x)), iters=30)
"""
import time

import torch

_flush = None
_cycles_per_us = None


def _spin_cycles_per_us():
    """The GPU's clock as torch.cuda._sleep counts it, measured once (cycles per microsecond)."""
    global _cycles_per_us
    if _cycles_per_us is None:
        cycles = 20_000_000
        torch.cuda._sleep(cycles // 10)  # wakes the clock up
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        torch.cuda._sleep(cycles)
        end.record()
        torch.cuda.synchronize()
        _cycles_per_us = cycles / (start.elapsed_time(end) * 1000.0)
    return _cycles_per_us


def median_us(fn, iters=30, warmup=3):
    """Median microseconds of `iters` calls of fn, each after an L2 flush."""
    global _flush
    if _flush is None:
        _flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    for _ in range(warmup):  # (a first call may compile or autotune)
        fn()
    torch.cuda.synchronize()
    begin = time.perf_counter()
    fn()
    host_s = time.perf_counter() - begin
    torch.cuda.synchronize()
    spin = int((2.0 * host_s * 1e6 + 50.0) * _spin_cycles_per_us())
    samples = []
    for i in range(iters):
        _flush.fill_(i & 0xFF)
        torch.cuda._sleep(spin)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(end) * 1000.0)
    return sorted(samples)[iters // 2]


def graphed(fn):
    """fn captured once in a CUDA graph (after one eager call); returns the graph's replay."""
    fn()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay
