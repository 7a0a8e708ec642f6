"""Absorbed MLA attention (decode, and causal prefill with s_q = S) on our CUDA kernels.

    o, lse = mla_decode(q, kv, seqlens, block_table=None, scale=None, causal=True)

q [B, s_q, H, 576] bf16; kv [B, S_max, 576] bf16, or paged [num_pages, 64, 576] with block_table
int32 [B, max_pages]; seqlens int32 [B]; all on one CUDA device. Returns o [B, s_q, H, 512] bf16 and
lse [B, s_q, H] fp32 (natural log). Semantics and strides: kernels/mla/mla.h. Runs on the current
torch stream; the workspace is allocated through torch (so the caching allocator serves it).
"""
import ctypes

from ._loader import check, open_library, ptr, repo_path

_I32, _I64, _F32, _U32, _P = ctypes.c_int32, ctypes.c_int64, ctypes.c_float, ctypes.c_uint32, ctypes.c_void_p


class _Params(ctypes.Structure):  # mirrors mla_fwd_params in kernels/mla/mla.h, field for field
    _fields_ = [
        ("B", _I32), ("s_q", _I32), ("H", _I32), ("S_max", _I32), ("num_pages", _I32), ("max_pages", _I32),
        ("block_table", _P), ("block_table_stride", _I64),
        ("seqlens", _P), ("seqlens_host", _P),
        ("in_dtype", ctypes.c_int), ("out_dtype", ctypes.c_int),
        ("q", _P), ("q_stride", _I64 * 3),
        ("kv", _P), ("kv_stride", _I64 * 2),
        ("o", _P), ("o_stride", _I64 * 3),
        ("lse", _P), ("lse_stride", _I64 * 3),
        ("scale", _F32), ("flags", _U32), ("num_sms", _I32), ("num_parts", _I32),
        ("workspace", _P), ("workspace_bytes", ctypes.c_size_t),
    ]


_lib = None


def _library():
    global _lib
    if _lib is None:
        lib = open_library("libmla_cuda.so", repo_path("build_gpu", "mla"))
        lib.mla_fwd_params_bytes.restype = ctypes.c_size_t
        if lib.mla_fwd_params_bytes() != ctypes.sizeof(_Params):
            raise RuntimeError(f"libmla_cuda.so's mla_fwd_params is {lib.mla_fwd_params_bytes()} bytes, "
                               f"this module's {ctypes.sizeof(_Params)}: rebuild one of them")
        for f in ("mla_fwd_params_init", "mla_fwd_params_set_contiguous"):
            getattr(lib, f).argtypes = [ctypes.POINTER(_Params)]
        lib.mla_fwd.argtypes = [ctypes.POINTER(_Params), _P]
        lib.mla_fwd_workspace_size.argtypes = [ctypes.POINTER(_Params), ctypes.POINTER(ctypes.c_size_t)]
        _lib = lib
    return _lib


def _params(q, kv, seqlens, block_table, scale, causal, num_parts):
    import torch
    if q.dim() != 4 or q.shape[-1] != 576:
        raise ValueError(f"q must be [B, s_q, H, 576], got {tuple(q.shape)}")
    if kv.dim() != 3 or kv.shape[-1] != 576:
        raise ValueError(f"kv must be [B, S_max, 576] or [num_pages, 64, 576], got {tuple(kv.shape)}")
    for name, t in (("q", q), ("kv", kv)):
        if t.dtype != torch.bfloat16 or not t.is_cuda or t.stride(-1) != 1:
            raise ValueError(f"{name} must be a CUDA bf16 tensor with a contiguous last dimension")
    B, s_q, H, _ = q.shape
    if seqlens.dtype != torch.int32 or seqlens.shape != (B,) or seqlens.device != q.device:
        raise ValueError(f"seqlens must be int32 [{B}] on {q.device}")
    p = _Params()
    lib = _library()
    lib.mla_fwd_params_init(ctypes.byref(p))
    p.B, p.s_q, p.H = B, s_q, H
    if block_table is not None:
        if block_table.dtype != torch.int32 or block_table.dim() != 2 or block_table.shape[0] != B \
                or block_table.stride(1) != 1 or kv.shape[1] != 64:
            raise ValueError("block_table must be int32 [B, max_pages] (rows contiguous) with kv [num_pages, 64, 576]")
        p.num_pages, p.max_pages = kv.shape[0], block_table.shape[1]
        p.block_table, p.block_table_stride = ptr(block_table), block_table.stride(0)
    else:
        p.S_max = kv.shape[1]
    p.seqlens = ptr(seqlens)
    p.q, p.kv = ptr(q), ptr(kv)
    p.q_stride[:] = q.stride()[:3]
    p.kv_stride[:] = kv.stride()[:2]
    p.scale = 0.0 if scale is None else float(scale)
    p.flags = 1 if causal else 0
    p.num_parts = num_parts
    return p


def mla_workspace_bytes(q, kv, seqlens, block_table=None, num_parts=0) -> int:
    p = _params(q, kv, seqlens, block_table, None, True, num_parts)
    n = ctypes.c_size_t()
    check(_library(), "mla", _library().mla_fwd_workspace_size(ctypes.byref(p), ctypes.byref(n)), "mla_fwd_workspace_size")
    return n.value


def mla_decode(q, kv, seqlens, block_table=None, scale=None, causal=True, num_parts=0, out=None, lse=None):
    import torch
    B, s_q, H, _ = q.shape
    p = _params(q, kv, seqlens, block_table, scale, causal, num_parts)
    o = out if out is not None else torch.empty((B, s_q, H, 512), dtype=torch.bfloat16, device=q.device)
    lse = lse if lse is not None else torch.empty((B, s_q, H), dtype=torch.float32, device=q.device)
    p.o, p.lse = ptr(o), ptr(lse)
    p.o_stride[:] = o.stride()[:3]
    p.lse_stride[:] = lse.stride()
    lib = _library()
    n = ctypes.c_size_t()
    check(lib, "mla", lib.mla_fwd_workspace_size(ctypes.byref(p), ctypes.byref(n)), "mla_fwd_workspace_size")
    ws = torch.empty(max(n.value, 256), dtype=torch.uint8, device=q.device)
    p.workspace, p.workspace_bytes = ptr(ws), n.value
    stream = torch.cuda.current_stream(q.device).cuda_stream
    check(lib, "mla", lib.mla_fwd(ctypes.byref(p), _P(stream)), "mla_fwd")
    return o, lse
