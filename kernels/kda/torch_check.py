"""The Python module's KDA against a float64 recurrence written in torch here, on fresh random inputs
(varlen and plain, each gate mode, with states), and, where FLA is importable, against FLA's
chunk_kda on the same inputs. Prints one line per case and exits 1 if any case fails (RMS ratio
above 5e-3). Usage (on the H200, repo root): PYTHONPATH=python:.fla python3 kernels/kda/torch_check.py
"""
import sys

import torch
import torch.nn.functional as F

from longhaul_kernels import chunk_kda

torch.manual_seed(int(torch.randint(1 << 30, ()).item()) ^ int.from_bytes(__import__("os").urandom(4), "little"))


def gate_of(g, gate, A_log, dt_bias, lower_bound):
    x = g.double() + (0 if dt_bias is None else dt_bias.double())
    if gate == "log_decay":
        return g.double()
    a = 1.0 if A_log is None else A_log.double().exp()[:, None]
    if gate == "lower_bound":
        return lower_bound * torch.sigmoid(a * x)
    return -a * F.softplus(x)


def recurrence(q, k, v, gd, beta, h0, scale, cu):
    """float64; q, k, gd [T, H, K], v [T, H, V], beta [T, H]; h0 [N, H, K, V] or None."""
    T, H, K = q.shape
    V = v.shape[-1]
    o = torch.zeros(T, H, V, dtype=torch.float64, device=q.device)
    finals = []
    for n in range(len(cu) - 1):
        S = torch.zeros(H, K, V, dtype=torch.float64, device=q.device) if h0 is None else h0[n].double().clone()
        for t in range(cu[n], cu[n + 1]):
            S = S * gd[t].exp()[:, :, None]
            kt = k[t]
            S = S + beta[t][:, None, None] * kt[:, :, None] * (v[t] - torch.einsum("hk,hkv->hv", kt, S))[:, None, :]
            o[t] = scale * torch.einsum("hk,hkv->hv", q[t], S)
        finals.append(S)
    return o, torch.stack(finals)


def rms_ratio(a, b):
    return ((a.double() - b.double()).norm() / b.double().norm()).item()


def case(name, lens, H, gate, l2norm=True, states=True, K=128, V=128):
    T = sum(lens)
    dev = "cuda"
    q = torch.randn(1, T, H, K, device=dev)
    k = torch.randn(1, T, H, K, device=dev)
    if not l2norm:  # the delta rule is stable only for |k| <= 1 (beta |k|^2 < 2): normalise here instead
        q, k = F.normalize(q, dim=-1), F.normalize(k, dim=-1)
    q, k = q.bfloat16(), k.bfloat16()
    v = torch.randn(1, T, H, V, device=dev).bfloat16()
    g = (torch.randn(1, T, H, K, device=dev) * (0.1 if gate == "log_decay" else 1.0)).float()
    if gate == "log_decay":
        g = -g.abs()
    beta = torch.randn(1, T, H, device=dev).float()
    A_log = torch.randn(H, device=dev) * 0.5 if gate != "log_decay" else None
    dt_bias = torch.randn(H, K, device=dev) * 0.5 if gate != "log_decay" else None
    cu = [0]
    for n in lens:
        cu.append(cu[-1] + n)
    h0 = torch.randn(len(lens), H, K, V, device=dev) * 0.1 if states else None
    cu_t = torch.tensor(cu, dtype=torch.int64, device=dev) if len(lens) > 1 else None
    o, hT = chunk_kda(q, k, v, g, beta, initial_state=h0, output_final_state=states, cu_seqlens=cu_t, gate=gate,
                      A_log=A_log, dt_bias=dt_bias, use_qk_l2norm_in_kernel=l2norm, use_beta_sigmoid_in_kernel=True)
    qq, kk = q[0].double(), k[0].double()
    if l2norm:
        qq = qq / (qq.pow(2).sum(-1, keepdim=True) + 1e-6).sqrt()
        kk = kk / (kk.pow(2).sum(-1, keepdim=True) + 1e-6).sqrt()
    gd = gate_of(g[0], gate, A_log, dt_bias, -5.0)
    ro, rT = recurrence(qq, kk, v[0].double(), gd, torch.sigmoid(beta[0].double()), h0, K ** -0.5, cu)
    e_o = rms_ratio(o[0], ro)
    e_s = rms_ratio(hT, rT) if states else 0.0
    ok = e_o <= 5e-3 and e_s <= 5e-3 and torch.isfinite(o).all().item()
    print(f"{name:48} out {e_o:.3e} state {e_s:.3e} {'PASS' if ok else 'FAIL'}", flush=True)
    return ok


results = [
    case("lower_bound gate, T 300, H 4, states", [300], 4, "lower_bound"),
    case("softplus gate, T 129, H 2, states", [129], 2, "softplus"),
    case("log-decay gate, T 200, H 2, no l2norm", [200], 2, "log_decay", l2norm=False),
    case("varlen [1, 63, 64, 65, 130], H 3, lower_bound", [1, 63, 64, 65, 130], 3, "lower_bound"),
    case("no states, T 77, H 2", [77], 2, "lower_bound", states=False),
]
try:
    from fla.ops.kda import chunk_kda as fla_chunk_kda
except Exception as e:  # FLA is optional here: carried as .fla only for side-by-side runs
    print(f"FLA not importable ({type(e).__name__}); FLA comparison skipped")
else:
    T, H, K = 2048, 8, 128
    q, k, v = (torch.randn(1, T, H, K, device="cuda").bfloat16() for _ in range(3))
    g = torch.randn(1, T, H, K, device="cuda").float()
    beta = torch.randn(1, T, H, device="cuda").float()
    A_log = torch.randn(H, device="cuda") * 0.5
    dt_bias = torch.randn(H * K, device="cuda") * 0.5
    o, hT = chunk_kda(q, k, v, g, beta, output_final_state=True, gate="lower_bound", A_log=A_log,
                      dt_bias=dt_bias, use_qk_l2norm_in_kernel=True, use_beta_sigmoid_in_kernel=True)
    fo, fT = fla_chunk_kda(q, k, v, g, beta, A_log=A_log, dt_bias=dt_bias, output_final_state=True,
                           use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True, use_beta_sigmoid_in_kernel=True,
                           lower_bound=-5.0)
    e_o, e_s = rms_ratio(o, fo), rms_ratio(hT, fT)
    ok = e_o <= 5e-3 and e_s <= 5e-3
    print(f"{'vs FLA chunk_kda, T 2048, H 8':48} out {e_o:.3e} state {e_s:.3e} {'PASS' if ok else 'FAIL'}")
    results.append(ok)
sys.exit(0 if all(results) else 1)
