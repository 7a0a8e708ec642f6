"""longhaul_kernels: our CUDA KDA and MLA kernels for PyTorch, through their C APIs (ctypes).

Nothing here builds against torch: the shared libraries (libkda_cuda.so, libmla_cuda.so, built by
kernels/kda/build_gpu.sh and kernels/mla/build_gpu.sh) are loaded from $LONGHAUL_KERNELS_LIB, else
from build_gpu/ (KDA) and build_gpu/mla/ (MLA) at the repository root.

    from longhaul_kernels import chunk_kda, mla_decode
"""
from .kda import chunk_kda
from .mla import mla_decode, mla_workspace_bytes

__all__ = ["chunk_kda", "mla_decode", "mla_workspace_bytes"]
