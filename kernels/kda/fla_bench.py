"""Our KDA forward (the Python module over libkda_cuda.so), FLA's chunk_kda and, where FLASHKDA_LIB
names it, MoonshotAI's FlashKDA (kernels/baselines/flashkda_build.sh) side by side, in one process, on the
same inputs and the same GPU: gate activated in the kernel (lower_bound -5 sigmoid
with A_log and dt_bias), l2 norm of q and k and sigmoid of beta in the kernel, fp32 initial and final
state, bf16 q, k, v, g, beta and o, K = V = 128 (bench.cu's configuration). Each call is timed alone
with CUDA events after a 256 MB write that flushes L2; median of ITERS after warm-up (FLA's first
call compiles and autotunes). Also prints RMS(ours - FLA) / RMS(FLA) for o and the final state, and
the same against FlashKDA (its states are [N, H, V, K]; its call includes the transpose of beta to
[H, T] that its own torch wrapper makes).

Usage (on the H200, repo root; FLA's source in .fla):
  PYTHONPATH=python:.fla FLA_FLASH_KDA=0 [FLASHKDA_LIB=.fetched/flashkda/libflashkda_shim.so] \
    python3 kernels/kda/fla_bench.py [SHAPES=0123] [ITERS=30]
SHAPES: the indices of the shapes below to run (FLA's autotune costs ~90 s a shape).
"""
import ctypes
import os
import sys

import torch
from fla.ops.kda import chunk_kda as fla_chunk_kda

from longhaul_kernels import chunk_kda
from longhaul_kernels.timing import median_us

SHAPES = [("B1 T8192 H64", 1, 8192, 64, None), ("B1 T8192 H96", 1, 8192, 96, None),
          ("B8 T8192 H16", 8, 8192, 16, None),
          ("varlen 6 seqs T8192 H96", 1, 8192, 96, [1300, 547, 2048, 963, 271, 3063])]


def timed(fn, iters):  # ms
    return median_us(fn, iters) / 1000.0


def rel(a, b):
    return ((a.double() - b.double()).norm() / b.double().norm()).item()


def flashkda_library():
    path = os.environ.get("FLASHKDA_LIB")
    if not path:
        return None
    lib = ctypes.CDLL(path)
    P, F, I = ctypes.c_void_p, ctypes.c_float, ctypes.c_int
    lib.flashkda_fwd.restype = I
    lib.flashkda_fwd.argtypes = [P, P, P, P, P, F, P, P, P, P, F, P, P, P, I, I, I, I, P]
    lib.flashkda_workspace_bytes.restype = ctypes.c_longlong
    lib.flashkda_workspace_bytes.argtypes = [ctypes.c_longlong] * 3
    return lib


def flashkda_call(lib, q, k, v, g, beta, A_log, dt_bias, h0, cu, N):
    """FlashKDA on our inputs: a function returning (o, final state as [N, H, K, V])."""
    B, T, H, K = q.shape
    h0_vk = h0.transpose(-1, -2).contiguous()
    o, hT = torch.empty_like(v), torch.empty_like(h0_vk)
    ws = torch.empty(lib.flashkda_workspace_bytes(B * T, H, N), dtype=torch.uint8, device=q.device)

    def run():
        beta_ht = beta.reshape(B * T, H).t().contiguous()
        err = lib.flashkda_fwd(q.data_ptr(), k.data_ptr(), v.data_ptr(), g.data_ptr(), beta_ht.data_ptr(),
                               K ** -0.5, o.data_ptr(), ws.data_ptr(), A_log.data_ptr(), dt_bias.data_ptr(),
                               -5.0, h0_vk.data_ptr(), hT.data_ptr(), cu.data_ptr() if cu is not None else None,
                               B * T, T, H, N, torch.cuda.current_stream().cuda_stream)
        if err:
            raise RuntimeError(f"flashkda_fwd: CUDA error {err}")
        return o, hT.transpose(-1, -2)
    return run


def main():
    picked = [SHAPES[int(c)] for c in (sys.argv[1] if len(sys.argv) > 1 else "0123")]
    iters = int(sys.argv[2]) if len(sys.argv) > 2 else 30
    dev = "cuda"
    fk_lib = flashkda_library()
    print(f"{torch.cuda.get_device_name()}: ours vs FLA chunk_kda (Triton)"
          f"{' and FlashKDA' if fk_lib else ''}, median of {iters}, L2 flushed", flush=True)
    rows = []
    for name, B, T, H, lens in picked:
        K = V = 128
        q, k, g = (torch.randn(B, T, H, K, device=dev, dtype=torch.bfloat16) for _ in range(3))
        v = torch.randn(B, T, H, V, device=dev, dtype=torch.bfloat16)
        beta = torch.randn(B, T, H, device=dev, dtype=torch.bfloat16)
        A_log = 0.5 + 0.3 * torch.randn(H, device=dev)
        dt_bias = 0.5 + 0.3 * torch.randn(H, K, device=dev)
        cu = None
        N = B
        if lens:
            cu = torch.tensor([0] + list(torch.tensor(lens).cumsum(0)), dtype=torch.int64, device=dev)
            N = len(lens)
        h0 = 0.1 * torch.randn(N, H, K, V, device=dev)
        common = dict(scale=K ** -0.5, initial_state=h0, output_final_state=True, cu_seqlens=cu,
                      use_qk_l2norm_in_kernel=True, use_beta_sigmoid_in_kernel=True, A_log=A_log,
                      dt_bias=dt_bias, lower_bound=-5.0)
        ours = lambda: chunk_kda(q, k, v, g, beta, gate="lower_bound", **common)
        fla = lambda: fla_chunk_kda(q=q, k=k, v=v, g=g, beta=beta, use_gate_in_kernel=True, safe_gate=True, **common)
        o1, s1 = ours()
        o2, s2 = fla()
        t_fla = timed(fla, iters)
        t_ours = timed(ours, iters)
        fk = [float("nan")] * 3  # ms, o and state rel. RMS against ours
        if fk_lib:
            fkda = flashkda_call(fk_lib, q, k, v, g, beta, A_log, dt_bias, h0, cu, N)
            o3, s3 = fkda()
            fk = [timed(fkda, iters), rel(o3, o1), rel(s3, s1)]
        rows.append((name, t_ours, t_fla, rel(o1, o2), rel(s1, s2), *fk))
        print(f"{name}: ours {t_ours:.3f} ms, FLA {t_fla:.3f} ms, FLA/ours {t_fla / t_ours:.2f}x, "
              f"o vs FLA {rows[-1][3]:.2e}, state vs FLA {rows[-1][4]:.2e}"
              + (f"; FlashKDA {fk[0]:.3f} ms, FlashKDA/ours {fk[0] / t_ours:.2f}x, its o vs ours {fk[1]:.2e}, "
                 f"state vs ours {fk[2]:.2e}" if fk_lib else ""), flush=True)
    print("\n| shape | ours ms | FLA chunk_kda ms | FLA / ours | FlashKDA ms | FlashKDA / ours | o rel. RMS vs FLA |"
          " state rel. RMS vs FLA | FlashKDA o, state rel. RMS vs ours |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, a, b, eo, es, c, fo, fs in rows:
        print(f"| {name} | {a:.3f} | {b:.3f} | {b / a:.2f}x | {c:.3f} | {c / a:.2f}x | {eo:.2e} | {es:.2e} | "
              f"{fo:.2e}, {fs:.2e} |")


if __name__ == "__main__":
    main()
