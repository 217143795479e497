"""torch-reduce: hand-written CUDA (and CPU) reductions registered as ``torch.ops.treduce.*``.

import torch, torch_reduce
torch.ops.treduce.sum(x, [1])          # same as x.sum(1)
torch_reduce.amax(x, dim=(0, 2), keepdim=True)
torch_reduce.argmax(x, dim=1)
"""

import torch  # noqa: F401  (loads libtorch before our extension, so "import torch_reduce" works alone)


def _load_extension() -> None:
    # _C registers the ops with the dispatcher; _fast (the wrappers' direct entry) looks them up.
    module = "_C"
    try:
        from . import _C  # noqa: F401

        module = "_fast"
        from . import _fast  # noqa: F401
    except ImportError as e:
        try:
            from . import _build_info

            built = f"torch {_build_info.TORCH_VERSION} (CUDA {_build_info.CUDA_VERSION})"
        except ImportError:
            built = "an unknown torch (torch_reduce/_build_info.py is missing: was it built?)"
        raise ImportError(
            f"torch_reduce: the compiled extension torch_reduce.{module} could not be loaded.\n"
            f"  built against: {built}\n"
            f"  found at runtime: torch {torch.__version__} (CUDA {torch.version.cuda})\n"
            "  Rebuild it against the installed torch: "
            "pip install --no-build-isolation --no-deps -e .\n"
            f"  cause: {e}"
        ) from e


_load_extension()

from . import ops  # noqa: E402  (the wrappers need the schemas from _C)
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
]
__version__ = "0.1.0"
