"""Our MLA decode (the ctypes module over libmla_cuda.so) and DeepSeek's FlashMLA (its sm90 dense
decode, built by kernels/baselines/flashmla_build.sh) side by side in one process on one GPU, on the same
paged inputs: pages of 64 tokens in a shuffled block table, q ~ randn, KV ~ randn, bf16, scale
1/sqrt(192), causal where s_q > 1 (queries at the end of the sequence). Both are CUDA-graph launched
(their two kernels, decode and combine; FlashMLA's schedule metadata is made once per batch, outside
the timed calls, as its API intends), each call after a 256 MB write that flushes L2 (outside the
timed events), median of N. Prints us, TB/s and TFLOP/s (kernels/mla/bench.cu's counts: KV + q + o
bytes; 2 H s_q (576 + 512) S FLOP), and RMS(ours - FlashMLA) / RMS(FlashMLA) of o.

Usage (on the H200, repo root):
  FLASHMLA_LIB=.fetched/flashmla/libflashmla_shim.so PYTHONPATH=python python3 kernels/mla/flashmla_bench.py [N]
BENCH_SHAPES=0145 (as bench.cu's) runs only the shapes of those indices, for example under ncu.
"""
import ctypes
import math
import os
import sys

import torch

from longhaul_kernels import mla_decode
from longhaul_kernels.timing import graphed, median_us

D, DV, PAGE = 576, 512, 64
SCALE = 1.0 / math.sqrt(192)
N = int(sys.argv[1]) if len(sys.argv) > 1 else 30
SHAPES = [(1, 64, 8192, 1), (1, 64, 8192, 2), (1, 64, 8192, 4), (128, 16, 8192, 1), (128, 128, 8192, 1),
          (128, 128, 8192, 2)]  # (B, H, S, s_q)


def flashmla_library():
    path = os.environ.get("FLASHMLA_LIB")
    if not path:
        sys.exit("flashmla_bench: set FLASHMLA_LIB to the library kernels/baselines/flashmla_build.sh builds")
    lib = ctypes.CDLL(path)
    P, I, F, L = ctypes.c_void_p, ctypes.c_int, ctypes.c_float, ctypes.c_longlong
    lib.flashmla_num_sm_parts.argtypes = [I, I, I]
    lib.flashmla_metadata.argtypes = [P, I, I, P, P, I, P]
    lib.flashmla_decode.argtypes = [P, P, P, L, P, I, I, I, I, F, P, P, P, P, P, P, I, P]
    return lib


def paged_inputs(B, H, S, s_q):
    """q, the paged cache (shuffled block table) and the lengths of one shape, seeded by the shape."""
    torch.manual_seed(B * 1000 + H + s_q)
    pages_per = S // PAGE
    q = torch.randn(B, s_q, H, D, device="cuda", dtype=torch.bfloat16)
    pages = torch.randn(B * pages_per, PAGE, D, device="cuda", dtype=torch.bfloat16)
    block_table = torch.randperm(B * pages_per, device="cuda", dtype=torch.int64).to(torch.int32).view(B, pages_per)
    seqlens = torch.full((B,), S, dtype=torch.int32, device="cuda")
    return q, pages, block_table, seqlens


def flashmla_call(lib, q, pages, block_table, seqlens):
    B, s_q, H, _ = q.shape
    dev, stream = q.device, torch.cuda.current_stream().cuda_stream
    sms = torch.cuda.get_device_properties(dev).multi_processor_count
    parts = lib.flashmla_num_sm_parts(s_q, H, sms)
    meta = torch.empty(parts, lib.flashmla_meta_ints(), dtype=torch.int32, device=dev)
    splits = torch.empty(B + 1, dtype=torch.int32, device=dev)
    if lib.flashmla_metadata(seqlens.data_ptr(), B, s_q, meta.data_ptr(), splits.data_ptr(), parts, stream):
        raise RuntimeError("flashmla_metadata failed")
    o = torch.empty(B, s_q, H, DV, dtype=torch.bfloat16, device=dev)
    lse = torch.empty(B, s_q * H, dtype=torch.float32, device=dev)
    lse_acc = torch.empty(B + parts, s_q * H, dtype=torch.float32, device=dev)
    o_acc = torch.empty(B + parts, s_q * H, DV, dtype=torch.float32, device=dev)

    def run():
        if lib.flashmla_decode(q.data_ptr(), pages.data_ptr(), block_table.data_ptr(), block_table.stride(0),
                               seqlens.data_ptr(), B, s_q, H, pages.shape[0], SCALE, o.data_ptr(), lse.data_ptr(),
                               lse_acc.data_ptr(), o_acc.data_ptr(), meta.data_ptr(), splits.data_ptr(), parts,
                               torch.cuda.current_stream().cuda_stream):
            raise RuntimeError("flashmla_decode failed")
    return run, o


def main():
    lib = flashmla_library()
    print(f"{torch.cuda.get_device_name()}: ours vs FlashMLA (sm90 dense decode), graphed, L2 flushed, median of {N}",
          flush=True)
    rows = []
    picked = os.environ.get("BENCH_SHAPES", "".join(str(i) for i in range(len(SHAPES))))
    if not picked or not all(c.isdigit() and int(c) < len(SHAPES) for c in picked):
        sys.exit(f"flashmla_bench: BENCH_SHAPES={picked!r}: expected digits 0-{len(SHAPES) - 1}, one a shape")
    for B, H, S, s_q in (SHAPES[int(c)] for c in picked):
        q, pages, block_table, seqlens = paged_inputs(B, H, S, s_q)
        o1 = torch.empty(B, s_q, H, DV, dtype=torch.bfloat16, device="cuda")
        lse1 = torch.empty(B, s_q, H, dtype=torch.float32, device="cuda")
        ours = lambda: mla_decode(q, pages, seqlens, block_table=block_table, scale=SCALE, causal=True, out=o1, lse=lse1)
        fm, o2 = flashmla_call(lib, q, pages, block_table, seqlens)
        ours()
        fm()
        torch.cuda.synchronize()
        err = ((o1.float() - o2.float()).norm() / o2.float().norm()).item()
        t_ours, t_fm = median_us(graphed(ours), N), median_us(graphed(fm), N)
        nbytes = B * S * D * 2 + B * s_q * H * (D + DV) * 2
        flop = 2.0 * H * s_q * (D + DV) * B * S
        rows.append((f"B{B} H{H} S{S} s_q{s_q}", t_ours, t_fm, nbytes, flop, err))
        print(rows[-1], flush=True)
    print("\n| shape | ours us | FlashMLA us | FlashMLA / ours | ours TB/s | ours TFLOP/s | FlashMLA TB/s | "
          "FlashMLA TFLOP/s | o rel. RMS vs FlashMLA |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, a, b, nb, fl, err in rows:
        print(f"| {name} | {a:.1f} | {b:.1f} | {b / a:.2f}x | {nb / a / 1e6:.2f} | {fl / a / 1e6:.0f} | "
              f"{nb / b / 1e6:.2f} | {fl / b / 1e6:.0f} | {err:.2e} |")


if __name__ == "__main__":
    main()
