"""torch-reduce: hand-written CUDA (and CPU) reductions registered as ``torch.ops.treduce.*``.

import torch, torch_reduce
torch.ops.treduce.sum(x, [1])          # same as x.sum(1)
torch_reduce.amax(x, dim=(0, 2), keepdim=True)
torch_reduce.argmax(x, dim=1)
"""

import os
import re

import torch

# The native library (ops, kernels, registrations and the C++ API), the same file that C++ programs
# link; its CMake package (find_package(TorchReduce)) and header lie beside it.
library_path = os.path.join(os.path.dirname(__file__), "lib", "libtorch_reduce.so")
cmake_prefix_path = os.path.join(os.path.dirname(__file__), "share", "cmake")
include_path = os.path.join(os.path.dirname(__file__), "include")


def _load_extension() -> None:
    # The library registers the ops with the dispatcher; _fast (the wrappers' direct entry) looks
    # them up.
    what = library_path
    try:
        torch.ops.load_library(library_path)
        what = "torch_reduce._fast"
        from . import _fast  # noqa: F401
    except (ImportError, OSError) as e:
        try:
            from . import _build_info

            built = f"torch {_build_info.TORCH_VERSION} (CUDA {_build_info.CUDA_VERSION})"
        except ImportError:
            built = "an unknown torch (torch_reduce/_build_info.py is missing: was it built?)"
        raise ImportError(
            f"torch_reduce: the compiled library could not be loaded: {what}\n"
            f"  built against: {built}\n"
            f"  found at runtime: torch {torch.__version__} (CUDA {torch.version.cuda})\n"
            "  Rebuild it against the installed torch: "
            "pip install --no-build-isolation --no-deps -e .\n"
            f"  cause: {e}"
        ) from e


def _build_mismatch(built_torch: str, built_cuda: str | None) -> str | None:
    """Why the extension cannot serve this runtime, or None: it links against one torch's C++
    ABI, so a wheel built for another torch must not load (it may crash instead of failing)."""
    if built_torch != torch.__version__ or built_cuda != torch.version.cuda:
        return (
            f"torch_reduce was built for torch {built_torch} (CUDA {built_cuda}), but this "
            f"process has torch {torch.__version__} (CUDA {torch.version.cuda}).\n"
            "  Install the torch it was built for, or rebuild it against this one: "
            "pip install --no-build-isolation --no-deps -e ."
        )
    return None


def _arch_mismatch(arch_list: str | None) -> str | None:
    """A warning when the GPU's architecture has no code in this build (CPU ops still work)."""
    if not arch_list or not torch.cuda.is_available():
        return None
    major, minor = torch.cuda.get_device_capability()
    archs = [a.strip() for a in arch_list.replace(";", " ").split()]
    cap = major * 10 + minor
    for a in archs:
        # "9.0", "9.0+PTX" (PTX: newer GPUs compile it), the arch-specific "9.0a" (that GPU only,
        # its PTX too) and the family-specific "10.0f" (GPUs of that major from that minor on)
        m = re.fullmatch(r"(\d+)\.(\d)([af]?)(\+PTX)?", a)
        if m is None:
            return None  # a name torch also takes ("Hopper"): not ours to second-guess
        arch_major, kind, ptx = int(m[1]), m[3], m[4]
        num = arch_major * 10 + int(m[2])
        if num == cap or (kind == "f" and arch_major == major and num <= cap):
            return None
        if ptx and not kind and num <= cap:
            return None
    return (
        f"torch_reduce was built for CUDA architectures {arch_list}, which do not include this "
        f"GPU's sm_{cap}: its CUDA ops will fail. Rebuild with TORCH_CUDA_ARCH_LIST={major}.{minor}."
    )


def _check_build() -> None:
    try:
        from . import _build_info
    except ImportError:  # a build without the record (setup.py writes it): nothing to compare
        return
    problem = _build_mismatch(_build_info.TORCH_VERSION, _build_info.CUDA_VERSION)
    if problem:
        raise ImportError(problem)
    warning = _arch_mismatch(_build_info.CUDA_ARCH_LIST)
    if warning:
        import warnings

        warnings.warn(warning, RuntimeWarning, stacklevel=3)


_check_build()  # before loading: a mismatched extension may crash instead of failing
_load_extension()

from . import ops  # noqa: E402  (the wrappers need the schemas from the library)
from ._version import __version__  # noqa: E402
from .ops import amax, amin, argmax, argmin, bitwise_and, bitwise_or, bitwise_xor, mean, prod, sum  # noqa: E402
from .override import override  # noqa: E402

__all__ = [
    "sum",
    "mean",
    "prod",
    "amax",
    "amin",
    "argmax",
    "argmin",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "override",
    "ops",
    "__version__",
    "cmake_prefix_path",
    "include_path",
    "library_path",
]
