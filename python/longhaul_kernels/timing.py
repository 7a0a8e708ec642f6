"""The timing rules of the Python side-by-side benches (kernels/common/bench.cuh's, for callables that
enqueue on the current torch stream): warm-up first, then each call alone between two CUDA events
after a 256 MB write that flushes L2 (outside the events), the median of the samples.

    from longhaul_kernels.timing import graphed, median_us
    us = median_us(graphed(lambda: f(x)), iters=30)
"""
import torch

_flush = None


def median_us(fn, iters=30, warmup=3):
    """Median microseconds of `iters` calls of fn, each after an L2 flush."""
    global _flush
    if _flush is None:
        _flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    for _ in range(warmup):
        fn()
    samples = []
    for i in range(iters):
        _flush.fill_(i & 0xFF)
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
