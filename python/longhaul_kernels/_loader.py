"""Finding and opening the shared libraries, and turning a C status into a Python exception."""
import ctypes
import os
from pathlib import Path

_REPO = Path(__file__).resolve().parents[2]


class KernelError(RuntimeError):
    """A C API call returned a status other than OK; the message is the library's own detail."""


def open_library(name: str, default_dir: Path) -> ctypes.CDLL:
    folder = Path(os.environ.get("LONGHAUL_KERNELS_LIB", default_dir))
    path = folder / name
    if not path.exists():
        raise FileNotFoundError(
            f"{path} not found: build it with kernels/*/build_gpu.sh or point LONGHAUL_KERNELS_LIB at its folder")
    return ctypes.CDLL(str(path))


def repo_path(*parts: str) -> Path:
    return _REPO.joinpath(*parts)


def check(lib: ctypes.CDLL, prefix: str, status: int, call: str) -> None:
    if status == 0:
        return
    sentence = getattr(lib, f"{prefix}_status_string")
    detail = getattr(lib, f"{prefix}_last_error")
    sentence.restype = detail.restype = ctypes.c_char_p
    raise KernelError(f"{call}: {sentence(status).decode()}: {detail().decode()}")


def ptr(t) -> ctypes.c_void_p:
    return ctypes.c_void_p(0 if t is None else t.data_ptr())


def strides3(t) -> tuple:
    """The {b, t|s, h} element strides of a 4-d tensor (or a 3-d one: [b, t, h])."""
    return tuple(t.stride()[:3])
