"""KDA (Kimi Delta Attention) forward on our CUDA kernels, with FLA `chunk_kda`'s semantics.

    o, final_state = chunk_kda(q, k, v, g, beta, scale=None, initial_state=None,
                               output_final_state=False, cu_seqlens=None, gate="log_decay",
                               A_log=None, dt_bias=None, lower_bound=-5.0,
                               use_qk_l2norm_in_kernel=False, use_beta_sigmoid_in_kernel=False,
                               allow_neg_eigval=False, state_v_first=False)

q, k, g [B, T, H, K]; v [B, T, H, V]; beta [B, T, H]; q, k, v bf16; g and beta bf16 or fp32; all on
one CUDA device. gate: "log_decay" (g is the log decay), "lower_bound" (lower_bound *
sigmoid(exp(A_log) * (g + dt_bias))), "softplus" (-exp(A_log) * softplus(g + dt_bias)). States fp32
[N, H, K, V] ([N, H, V, K] with state_v_first). cu_seqlens: int64 [N + 1] with B = 1. Returns o
[B, T, H, V] bf16 and the final state (or None). Semantics: kernels/kda/kda.h.
"""
import ctypes

from ._loader import check, open_library, ptr, repo_path

_I32, _I64, _F32, _U32, _P = ctypes.c_int32, ctypes.c_int64, ctypes.c_float, ctypes.c_uint32, ctypes.c_void_p
_GATES = {"log_decay": 0, "lower_bound": 1, "softplus": 2}


class _Params(ctypes.Structure):  # mirrors kda_fwd_params in kernels/kda/kda.h, field for field
    _fields_ = [
        ("B", _I32), ("T", _I32), ("H", _I32), ("K", _I32), ("V", _I32),
        ("num_seqs", _I32), ("cu_seqlens", _P), ("cu_seqlens_host", _P),
        ("in_dtype", ctypes.c_int), ("g_dtype", ctypes.c_int), ("beta_dtype", ctypes.c_int), ("out_dtype", ctypes.c_int),
        ("q", _P), ("q_stride", _I64 * 3), ("k", _P), ("k_stride", _I64 * 3),
        ("v", _P), ("v_stride", _I64 * 3), ("g", _P), ("g_stride", _I64 * 3),
        ("beta", _P), ("beta_stride", _I64 * 3), ("o", _P), ("o_stride", _I64 * 3),
        ("A_log", _P), ("dt_bias", _P), ("initial_state", _P), ("final_state", _P),
        ("scale", _F32), ("lower_bound", _F32), ("gate", ctypes.c_int), ("flags", _U32), ("chunk_size", _I32),
        ("workspace", _P), ("workspace_bytes", ctypes.c_size_t),
    ]


_lib = None


def _library():
    global _lib
    if _lib is None:
        lib = open_library("libkda_cuda.so", repo_path("build_gpu"))
        lib.kda_fwd_params_bytes.restype = ctypes.c_size_t
        if lib.kda_fwd_params_bytes() != ctypes.sizeof(_Params):
            raise RuntimeError(f"libkda_cuda.so's kda_fwd_params is {lib.kda_fwd_params_bytes()} bytes, "
                               f"this module's {ctypes.sizeof(_Params)}: rebuild one of them")
        lib.kda_fwd_params_init.argtypes = [ctypes.POINTER(_Params)]
        lib.kda_fwd.argtypes = [ctypes.POINTER(_Params), _P]
        lib.kda_fwd_workspace_size.argtypes = [ctypes.POINTER(_Params), ctypes.POINTER(ctypes.c_size_t)]
        _lib = lib
    return _lib


def _dtype_code(t, name):
    import torch
    codes = {torch.float32: 0, torch.bfloat16: 1}
    if t.dtype not in codes:
        raise ValueError(f"{name} must be bf16 or fp32, got {t.dtype}")
    return codes[t.dtype]


def chunk_kda(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False, cu_seqlens=None,
              gate="log_decay", A_log=None, dt_bias=None, lower_bound=-5.0, use_qk_l2norm_in_kernel=False,
              use_beta_sigmoid_in_kernel=False, allow_neg_eigval=False, state_v_first=False):
    import torch
    if q.dim() != 4 or k.shape != q.shape or g.shape != q.shape or v.shape[:3] != q.shape[:3] \
            or beta.shape != q.shape[:3]:
        raise ValueError(f"shapes: q, k, g [B, T, H, K], v [B, T, H, V], beta [B, T, H]; got q {tuple(q.shape)}, "
                         f"k {tuple(k.shape)}, v {tuple(v.shape)}, g {tuple(g.shape)}, beta {tuple(beta.shape)}")
    for name, t in (("q", q), ("k", k), ("v", v), ("g", g)):
        if not t.is_cuda or t.device != q.device or t.stride(-1) != 1:
            raise ValueError(f"{name} must be on {q.device} with a contiguous last dimension")
    if q.dtype != torch.bfloat16 or k.dtype != q.dtype or v.dtype != q.dtype:
        raise ValueError("q, k and v must be bf16")
    if gate not in _GATES:
        raise ValueError(f"gate must be one of {sorted(_GATES)}, got {gate!r}")
    B, T, H, K = q.shape
    V = v.shape[-1]
    N = B
    p = _Params()
    lib = _library()
    lib.kda_fwd_params_init(ctypes.byref(p))
    p.B, p.T, p.H, p.K, p.V = B, T, H, K, V
    keep = []  # tensors made here that must outlive the launch's enqueue
    if cu_seqlens is not None:
        if B != 1 or cu_seqlens.dim() != 1:
            raise ValueError("cu_seqlens needs B == 1 and a 1-d tensor")
        cu = cu_seqlens.to(device=q.device, dtype=torch.int64).contiguous()
        keep.append(cu)
        N = cu.numel() - 1
        p.num_seqs, p.cu_seqlens = N, ptr(cu)
    p.in_dtype, p.out_dtype = 1, 1
    p.g_dtype, p.beta_dtype = _dtype_code(g, "g"), _dtype_code(beta, "beta")
    o = torch.empty((B, T, H, V), dtype=torch.bfloat16, device=q.device)
    for name, t in (("q", q), ("k", k), ("v", v), ("g", g), ("beta", beta), ("o", o)):
        setattr(p, name, ptr(t))
        getattr(p, name + "_stride")[:] = t.stride()[:3]
    state_shape = (N, H, V, K) if state_v_first else (N, H, K, V)
    if initial_state is not None:
        if initial_state.shape != state_shape or initial_state.dtype != torch.float32:
            raise ValueError(f"initial_state must be fp32 {state_shape}")
        initial_state = initial_state.contiguous()
        keep.append(initial_state)
        p.initial_state = ptr(initial_state)
    final = torch.empty(state_shape, dtype=torch.float32, device=q.device) if output_final_state else None
    p.final_state = ptr(final)
    for name, t, shape in (("A_log", A_log, (H,)), ("dt_bias", dt_bias, (H, K))):
        if t is not None:
            t = t.to(device=q.device, dtype=torch.float32).contiguous()
            if t.numel() != shape[0] * (shape[1] if len(shape) > 1 else 1):
                raise ValueError(f"{name} must have {shape} elements")
            keep.append(t)
            setattr(p, name, ptr(t))
    p.scale = 0.0 if scale is None else float(scale)
    p.lower_bound = float(lower_bound)
    p.gate = _GATES[gate]
    p.flags = (1 if use_qk_l2norm_in_kernel else 0) | (2 if use_beta_sigmoid_in_kernel else 0) \
        | (4 if allow_neg_eigval else 0) | (8 if state_v_first else 0)
    n = ctypes.c_size_t()
    check(lib, "kda", lib.kda_fwd_workspace_size(ctypes.byref(p), ctypes.byref(n)), "kda_fwd_workspace_size")
    ws = torch.empty(max(n.value, 256), dtype=torch.uint8, device=q.device)
    p.workspace, p.workspace_bytes = ptr(ws), n.value
    check(lib, "kda", lib.kda_fwd(ctypes.byref(p), _P(torch.cuda.current_stream(q.device).cuda_stream)), "kda_fwd")
    return o, final
