"""MLA side by side in one process on one GPU: our kernels (through the ctypes module) against the
PyTorch reference forms of ../shared/baselines/mla_ref.py, on the same inputs.

  decode B1 H64 S8192, s_q 1 / 2 / 4 (causal): ours graphed; PyTorch fp32-upcast eager; bf16 matmuls
    + fp32 softmax, eager and CUDA-graphed.
  prefill causal s_q = S = 8192, H64: ours; scaled_dot_product_attention with K/V expanded to H heads.

Every timed call is preceded by a 256 MB write that flushes the 60 MB L2 (outside the timed events);
median of N calls. Each of ours is first checked against the fp32 reference on the same inputs.
Usage (on the H200, repo root): PYTHONPATH=python python3 kernels/mla/torch_bench.py [N] [--no-prefill]
"""
import math
import sys

import torch

from longhaul_kernels import mla_decode
from longhaul_kernels.timing import graphed, median_us

DL, D = 512, 576
SCALE = 1.0 / math.sqrt(192)
N = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 30


def timed(fn):
    return median_us(fn, N)


def mask(sq, sk, dev):
    return torch.ones(sq, sk, dtype=torch.bool, device=dev).tril(sk - sq)


def ref_fp32(q, kv, causal):
    s = torch.einsum("bqhd,bkd->bhqk", q.float(), kv.float()) * SCALE
    if causal and q.shape[1] > 1:
        s = s.masked_fill(~mask(q.shape[1], kv.shape[1], q.device), float("-inf"))
    return torch.einsum("bhqk,bkd->bqhd", s.softmax(-1), kv[..., :DL].float())


def ref_bf16(q, kv, causal):
    B, sq, H, _ = q.shape
    s = torch.matmul(q.reshape(B, sq * H, D), kv.transpose(1, 2)).float() * SCALE
    if causal and sq > 1:
        m = mask(sq, kv.shape[1], q.device).repeat_interleave(H, 0)
        s = s.masked_fill(~m, float("-inf"))
    p = s.softmax(-1).to(torch.bfloat16)
    return torch.matmul(p, kv[..., :DL]).reshape(B, sq, H, DL)


def sdpa(q, kv):
    H = q.shape[2]
    k = kv.unsqueeze(1).expand(-1, H, -1, -1)
    v = kv[..., :DL].unsqueeze(1).expand(-1, H, -1, -1)
    return torch.nn.functional.scaled_dot_product_attention(q.transpose(1, 2), k, v, is_causal=True,
                                                             scale=SCALE).transpose(1, 2)


def rel_rms(a, b):
    return ((a.float() - b.float()).norm() / b.float().norm()).item()


rows = []
B, H, S = 1, 64, 8192
for sq in (1, 2, 4):
    q = torch.randn(B, sq, H, D, device="cuda", dtype=torch.bfloat16)
    kv = torch.randn(B, S, D, device="cuda", dtype=torch.bfloat16)
    seqlens = torch.full((B,), S, dtype=torch.int32, device="cuda")
    o = torch.full((B, sq, H, DL), float("nan"), dtype=torch.bfloat16, device="cuda")
    lse = torch.full((B, sq, H), float("nan"), dtype=torch.float32, device="cuda")
    ours = lambda: mla_decode(q, kv, seqlens, causal=True, out=o, lse=lse)
    ours()
    err = rel_rms(o, ref_fp32(q, kv, True))
    t_ours = timed(graphed(ours))
    t_fp32 = timed(lambda: ref_fp32(q, kv, True))
    t_bf16 = timed(lambda: ref_bf16(q, kv, True))
    t_bf16g = timed(graphed(lambda: ref_bf16(q, kv, True)))
    rows.append((f"decode B1 H64 S8192 s_q{sq}", t_ours, err, [("torch fp32 eager", t_fp32),
                 ("torch bf16 eager", t_bf16), ("torch bf16 graph", t_bf16g)]))
    print(rows[-1], flush=True)

if "--no-prefill" not in sys.argv:
    q = torch.randn(1, S, H, D, device="cuda", dtype=torch.bfloat16) * 0.1
    kv = torch.randn(1, S, D, device="cuda", dtype=torch.bfloat16)
    seqlens = torch.full((1,), S, dtype=torch.int32, device="cuda")
    o, lse = mla_decode(q, kv, seqlens, causal=True)
    ref = sdpa(q.float(), kv.float())  # fp32 SDPA as the reference here: the einsum form needs 17 GB
    err = rel_rms(o, ref)
    t_ours = timed(lambda: mla_decode(q, kv, seqlens, causal=True, out=o, lse=lse))
    t_sdpa = timed(lambda: sdpa(q, kv))
    rows.append(("prefill causal S8192 H64", t_ours, err, [("SDPA bf16, K/V expanded", t_sdpa)]))
    print(rows[-1], flush=True)

print(f"\n{'shape':30} {'ours us':>10} {'rel rms':>9}  anchors (us, same run)")
for name, t, err, anchors in rows:
    print(f"{name:30} {t:10.1f} {err:9.2e}  " + "; ".join(f"{a} {v:.1f}" for a, v in anchors))
