"""Typed wrappers for torch.ops.treduce.

The schemas live in csrc/ops.cpp; the rules for output shapes, dtypes and errors in csrc/plan.cpp,
which also registers the Meta kernels that torch.compile's fake tensors run; the autograd
formulas in csrc/autograd.cpp. This module parses arguments as torch's bindings do and calls
the ops.
"""

from __future__ import annotations

import builtins
import operator
from collections.abc import Sequence

import torch

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
]

DimArg = int | Sequence[int] | None

# The overloads themselves: calling an OpOverload skips the packet's overload resolution, and
# leaving out dtype=None skips keyword handling (~1.5 µs of host time per call together).
_SUM = torch.ops.treduce.sum.default
_MEAN = torch.ops.treduce.mean.default
_PROD = torch.ops.treduce.prod.default
_AMAX = torch.ops.treduce.amax.default
_AMIN = torch.ops.treduce.amin.default
_ARGMAX = torch.ops.treduce.argmax.default
_ARGMIN = torch.ops.treduce.argmin.default
_AND = torch.ops.treduce.bitwise_and.default
_OR = torch.ops.treduce.bitwise_or.default
_XOR = torch.ops.treduce.bitwise_xor.default


# The direct entry (csrc/python/fast.cpp): the common calls go straight to the dispatcher, ~0.5 µs
# less host time than torch.ops' argument parsing (measured on the H200 host); it answers NotImplemented for
# anything else (tensor subclasses, torch-function modes, unusual argument types), which then
# takes the torch.ops path below. Under torch.compile the wrappers trace the torch.ops path.
from . import _fast  # noqa: E402

_call = _fast.call
_compiling = torch.compiler.is_compiling
# The op codes, from the extension (csrc/op_list.h): a missing name fails here, at import.
_K_SUM, _K_MEAN, _K_PROD = _fast.OPS["sum"], _fast.OPS["mean"], _fast.OPS["prod"]
_K_AMAX, _K_AMIN = _fast.OPS["amax"], _fast.OPS["amin"]
_K_ARGMAX, _K_ARGMIN = _fast.OPS["argmax"], _fast.OPS["argmin"]
_K_AND, _K_OR, _K_XOR = _fast.OPS["bitwise_and"], _fast.OPS["bitwise_or"], _fast.OPS["bitwise_xor"]


# ----------------------------------------------------------------------------------------------
# Arguments, checked as torch's own bindings check them (the same exception types), for the calls
# that the direct entry leaves to the torch.ops path. torch.ops' generic parser takes what
# torch.ops.aten takes (True as a dim, a set of dims, keepdim=None); the wrappers take what
# torch.sum and torch.amax take.

_INT64 = (-(2**63), 2**63 - 1)
_NAMED = ("sum", "mean", "prod")  # torch's overloads with named dims: a str dim is a name there


def _type_name(v) -> str:
    t = type(v)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _index(op: str, v, pos: int | None) -> int | torch.SymInt:
    """One dim, as torch parses an int: Python and NumPy integers and single-element integer
    tensors, never bools. `pos`: its position in a sequence (1-based), None for a bare dim."""
    if isinstance(v, (bool, float, complex, str)) or v is None:
        raise TypeError(
            f"{op}(): argument 'dim' must be int or a sequence of ints, not {_type_name(v)}"
        )
    if isinstance(v, torch.SymInt):
        return v
    try:
        d = operator.index(v)
    except TypeError:
        raise TypeError(
            f"{op}(): argument 'dim' must be int or a sequence of ints, not {_type_name(v)}"
        ) from None
    if not _INT64[0] <= d <= _INT64[1]:
        if pos is None:
            raise ValueError("Overflow when unpacking long long")
        raise TypeError(
            f"{op}(): argument 'dim' failed to unpack the object at pos {pos} with "
            'error "Overflow when unpacking long long"'
        )
    return d


def _dim_list(op: str, dim) -> list[int | torch.SymInt] | None:
    """dim for the int[1]? schemas: None, one dim, or a list or tuple of dims."""
    if dim is None:
        return None
    if isinstance(dim, str) or (
        isinstance(dim, (list, tuple)) and builtins.any(isinstance(d, str) for d in dim)
    ):
        if op in _NAMED:
            raise RuntimeError(
                f"treduce.{op}: named dims are not supported (got {dim!r}); pass dims as ints"
            )
        raise TypeError(
            f"{op}(): argument 'dim' must be int or a sequence of ints, not {_type_name(dim)}"
        )
    if isinstance(dim, (list, tuple)):
        return [_index(op, d, i + 1) for i, d in enumerate(dim)]
    return [_index(op, dim, None)]


def _dim_one(op: str, dim) -> int | torch.SymInt | None:
    """dim for argmax and argmin: None or one int (a 0-d integer tensor too, not a bool)."""
    if dim is None:
        return None
    if isinstance(dim, torch.Tensor) and (dim.dim() != 0 or dim.dtype == torch.bool):
        raise TypeError(f"{op}(): argument 'dim' must be int, not Tensor")
    if isinstance(dim, (list, tuple, set, range)):
        raise TypeError(f"{op}(): argument 'dim' must be int, not {_type_name(dim)}")
    return _index(op, dim, None)


def _check_call(op: str, input, keepdim, dtype=None) -> None:
    if not isinstance(input, torch.Tensor):
        raise TypeError(
            f"{op}(): argument 'input' (position 1) must be Tensor, not {_type_name(input)}"
        )
    if type(input) is not torch.Tensor and type(input).__module__.startswith(
        "torch.distributed.tensor"
    ):
        # a DTensor: the sharding rules (torch_reduce.distributed), registered on first use so
        # that "import torch_reduce" does not import torch.distributed.tensor (~0.5 s)
        from . import distributed  # noqa: F401
    if not isinstance(keepdim, bool):
        raise TypeError(f"{op}(): argument 'keepdim' must be bool, not {_type_name(keepdim)}")
    if dtype is not None and not isinstance(dtype, torch.dtype):
        raise TypeError(f"{op}(): argument 'dtype' must be torch.dtype, not {_type_name(dtype)}")


# AOTInductor's proxy executor in torch 2.11 passes a ScalarType argument to a custom op as the
# serialised enum's value, which is c10's plus one (pytorch#169157, fixed after 2.11 by
# pytorch#173562): dtype=torch.float32 arrives as float64, float16 as float32. So while exporting,
# a wrapper call with dtype= records the conversion instead. torch defines dtype= as converting
# the input first; an integer sum or product wraps in int64 to the same low bits as in the
# narrower type, and a bool one is nonzero where the narrower one is True.
_EXPORT_DTYPE_AS_CONVERSION = tuple(int(v) for v in torch.__version__.split(".")[:2]) < (2, 12)


def _exporting() -> bool:
    """Whether torch.export is tracing, and not torch.compile: Dynamo answers True for
    torch.compiler.is_exporting() while it traces for either (torch 2.11), so this reads the
    flag that torch.export sets, where torch has it."""
    flag = getattr(torch.compiler, "_is_exporting_flag", None)
    return torch.compiler.is_exporting() if flag is None else bool(flag)


# The dtypes the treduce ops take besides float8 (csrc/plan.cpp checks them and raises for the
# others); override.py routes by them too.
SUPPORTED_DTYPES = frozenset(
    {
        torch.float32,
        torch.float64,
        torch.float16,
        torch.bfloat16,
        torch.int8,
        torch.int16,
        torch.int32,
        torch.int64,
        torch.uint8,
        torch.bool,
    }
)


def _export_conversion(op: str, overload, input, dims, keepdim, dtype):
    """The dtype= call as a conversion and a call without dtype= (see above), or None."""
    if not (_EXPORT_DTYPE_AS_CONVERSION and dtype in SUPPORTED_DTYPES):
        return None
    if not _exporting() or not isinstance(input, torch.Tensor):
        return None
    if input.dtype.is_floating_point and input.dtype.itemsize == 1:
        # float8 through float32, which holds every float8 value exactly: Triton has no direct
        # cast from float8 to the integers or to float64 (Inductor's CUDA kernels failed to
        # compile), and float32 to any other dtype= rounds as float8 to it would.
        input = input.to(torch.float32)
        if dtype == torch.float64:
            # Inductor folds a chain of floating conversions into one (pointless_convert), here
            # back into the float8 -> float64 cast; an exact product by one keeps the step.
            input = input * 1.0
    if dtype.is_floating_point:
        return overload(input.to(dtype), dims, keepdim)
    if op == "mean":  # an integer mean raises, as in torch: the plain call says so
        return None
    return overload(input.to(dtype), dims, keepdim).to(dtype)


def _by_dims(op: str, overload, input, dim, keepdim, dtype=None):
    """The torch.ops call of an op with int[1]? dims, after torch's argument checks."""
    _check_call(op, input, keepdim, dtype)
    dims = _dim_list(op, dim)
    if op in ("sum", "mean") and type(input).__module__.startswith("torch.distributed.tensor"):
        from .distributed import wide_sum

        out = wide_sum(op, input, dims, keepdim, dtype)
        if out is not None:
            return out
    if dtype is None:
        return overload(input, dims, keepdim)
    out = _export_conversion(op, overload, input, dims, keepdim, dtype)
    if out is not None:
        return out
    return overload(input, dims, keepdim, dtype=dtype)


def _by_one(op: str, overload, input, dim, keepdim):
    """The torch.ops call of argmax/argmin, after torch's argument checks; a DTensor sharded
    along `dim` takes (value, index) pairs across its ranks instead of being gathered whole."""
    d = _dim_one(op, dim)
    if type(input).__module__.startswith("torch.distributed.tensor"):
        from .distributed import arg_sharded

        out = arg_sharded(op, input, d, keepdim)
        if out is not None:
            return out
    return overload(input, d, keepdim)


def sum(
    input: torch.Tensor,
    dim: DimArg = None,
    keepdim: bool = False,
    *,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """Sum of ``input`` over ``dim``; the same result and semantics as :func:`torch.sum`.

    Args:
        input: a float32, float64, float16, bfloat16, integer or bool tensor, on CPU or CUDA,
            in any strided layout.
        dim: a dim or a sequence of dims to reduce; ``None`` or ``[]`` reduce every dim.
        keepdim: keep each reduced dim with size 1.
        dtype: the output dtype; the input is taken as converted to it first, as in torch.
            Default: int64 for integer and bool inputs, otherwise the input's dtype.

    float16 and bfloat16 accumulate in float32, integers in int64. The sum over an empty dim is 0.
    """
    if not _compiling():
        out = _call(_K_SUM, input, dim, keepdim, dtype)
        if out is not NotImplemented:
            return out
    return _by_dims("sum", _SUM, input, dim, keepdim, dtype)


def amax(input: torch.Tensor, dim: DimArg = (), keepdim: bool = False) -> torch.Tensor:
    """Maximum of ``input`` over ``dim``; the same result and semantics as :func:`torch.amax`.

    NaN propagates. ``dim=()`` reduces every dim. The output keeps the input's dtype. Reducing an
    empty dim raises ``IndexError``, as in torch. The gradient is split evenly among tied maxima.
    """
    if not _compiling():
        out = _call(_K_AMAX, input, dim, keepdim, None)
        if out is not NotImplemented:
            return out
    _check_call("amax", input, keepdim)
    return _AMAX(input, _dim_list("amax", dim) or [], keepdim)


def mean(
    input: torch.Tensor,
    dim: DimArg = None,
    keepdim: bool = False,
    *,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """Mean of ``input`` over ``dim``; the same result and semantics as :func:`torch.mean`.

    Floating inputs only, unless ``dtype=`` names a floating dtype (integers raise, as in torch).
    On both devices the compensated, canonical-order sum is divided by the count in double and
    rounded once, so CPU and CUDA give the same bits (torch's CUDA mean multiplies by a rounded
    1/count instead). float8 inputs are accepted (torch raises) and give float32 unless
    ``dtype=`` says otherwise. An empty mean is NaN.
    """
    if not _compiling():
        out = _call(_K_MEAN, input, dim, keepdim, dtype)
        if out is not NotImplemented:
            return out
    return _by_dims("mean", _MEAN, input, dim, keepdim, dtype)


def prod(
    input: torch.Tensor,
    dim: DimArg = None,
    keepdim: bool = False,
    *,
    dtype: torch.dtype | None = None,
) -> torch.Tensor:
    """Product of ``input`` over ``dim`` (several dims at once allowed), as :func:`torch.prod`.

    Integer and bool inputs give int64 (with wrap-around). The product over an empty dim is 1.
    Floating products never overflow or underflow part way: the result is inf (or 0) only if the
    product itself is out of range, NaN if an element is NaN or the elements hold both 0 and inf,
    with the same bits on CPU and CUDA (README, Semantics).
    """
    if not _compiling():
        out = _call(_K_PROD, input, dim, keepdim, dtype)
        if out is not NotImplemented:
            return out
    return _by_dims("prod", _PROD, input, dim, keepdim, dtype)


def amin(input: torch.Tensor, dim: DimArg = (), keepdim: bool = False) -> torch.Tensor:
    """Minimum of ``input`` over ``dim``; the same result and semantics as :func:`torch.amin`.

    NaN propagates; the gradient is split evenly among tied minima; float8 inputs are accepted.
    """
    if not _compiling():
        out = _call(_K_AMIN, input, dim, keepdim, None)
        if out is not NotImplemented:
            return out
    _check_call("amin", input, keepdim)
    return _AMIN(input, _dim_list("amin", dim) or [], keepdim)


def argmax(input: torch.Tensor, dim: int | None = None, keepdim: bool = False) -> torch.Tensor:
    """Index of the maximum along ``dim`` (of the flattened input when ``dim`` is None), as
    :func:`torch.argmax`: the first index among ties, and the first NaN if there is one. Not
    differentiable (the result is int64)."""
    if not _compiling():
        out = _call(_K_ARGMAX, input, dim, keepdim, None)
        if out is not NotImplemented:
            return out
    _check_call("argmax", input, keepdim)
    return _by_one("argmax", _ARGMAX, input, dim, keepdim)


def argmin(input: torch.Tensor, dim: int | None = None, keepdim: bool = False) -> torch.Tensor:
    """Index of the minimum along ``dim``, as :func:`torch.argmin` (first index among ties, the
    first NaN if there is one). Not differentiable."""
    if not _compiling():
        out = _call(_K_ARGMIN, input, dim, keepdim, None)
        if out is not NotImplemented:
            return out
    _check_call("argmin", input, keepdim)
    return _by_one("argmin", _ARGMIN, input, dim, keepdim)


def bitwise_and(input: torch.Tensor, dim: DimArg = None, keepdim: bool = False) -> torch.Tensor:
    """AND of the bits of integer or bool ``input`` over ``dim`` (torch has no such reduction).
    The result keeps the input dtype; over an empty dim it is all ones (True for bool)."""
    if not _compiling():
        out = _call(_K_AND, input, dim, keepdim, None)
        if out is not NotImplemented:
            return out
    return _by_dims("bitwise_and", _AND, input, dim, keepdim)


def bitwise_or(input: torch.Tensor, dim: DimArg = None, keepdim: bool = False) -> torch.Tensor:
    """OR of the bits of integer or bool ``input`` over ``dim``; 0 over an empty dim."""
    if not _compiling():
        out = _call(_K_OR, input, dim, keepdim, None)
        if out is not NotImplemented:
            return out
    return _by_dims("bitwise_or", _OR, input, dim, keepdim)


def bitwise_xor(input: torch.Tensor, dim: DimArg = None, keepdim: bool = False) -> torch.Tensor:
    """XOR of the bits of integer or bool ``input`` over ``dim``; 0 over an empty dim."""
    if not _compiling():
        out = _call(_K_XOR, input, dim, keepdim, None)
        if out is not NotImplemented:
            return out
    return _by_dims("bitwise_xor", _XOR, input, dim, keepdim)
