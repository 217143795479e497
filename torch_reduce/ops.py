"""Typed wrappers for torch.ops.treduce, and their fake (meta) kernels and autograd formulas.

The schemas live in csrc/ops.cpp, which names this module with ``set_python_module``; the fake
kernels and autograd formulas registered here make the ops work under torch.compile and autograd.
"""
from __future__ import annotations

import builtins
import operator
from collections.abc import Sequence

import torch

__all__ = ["sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "bitwise_and", "bitwise_or",
           "bitwise_xor"]

DimArg = int | Sequence[int] | None

_SUPPORTED = {
    torch.float32, torch.float64, torch.float16, torch.bfloat16,
    torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool,
}
_FP8 = {torch.float8_e4m3fn, torch.float8_e5m2}
_TAKES_FP8 = {"sum", "mean", "amax", "amin"}


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
# less host time than torch.ops' argument parsing (NOTES step 36); it answers NotImplemented for
# anything else (tensor subclasses, torch-function modes, unusual argument types), which then
# takes the torch.ops path below. Under torch.compile the wrappers trace the torch.ops path.
from . import _fast  # noqa: E402

_call = _fast.call
_compiling = torch.compiler.is_compiling
(_K_SUM, _K_MEAN, _K_PROD, _K_AMAX, _K_AMIN, _K_ARGMAX, _K_ARGMIN, _K_AND, _K_OR,
 _K_XOR) = range(10)


# ----------------------------------------------------------------------------------------------
# Arguments, checked as torch's own bindings check them (the same exception types), for the calls
# that the direct entry leaves to the torch.ops path. torch.ops' generic parser takes what
# torch.ops.aten takes (True as a dim, a set of dims, keepdim=None); the wrappers take what
# torch.sum and torch.amax take.

_INT64 = (-2**63, 2**63 - 1)
_NAMED = ("sum", "mean", "prod")  # torch's overloads with named dims: a str dim is a name there


def _type_name(v) -> str:
    t = type(v)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _index(op: str, v, pos: int | None) -> int:
    """One dim, as torch parses an int: Python and NumPy integers and single-element integer
    tensors, never bools. `pos`: its position in a sequence (1-based), None for a bare dim."""
    if isinstance(v, (bool, float, complex, str)) or v is None:
        raise TypeError(f"{op}(): argument 'dim' must be int or a sequence of ints, "
                        f"not {_type_name(v)}")
    if isinstance(v, torch.SymInt):
        return v
    try:
        d = operator.index(v)
    except TypeError:
        raise TypeError(f"{op}(): argument 'dim' must be int or a sequence of ints, "
                        f"not {_type_name(v)}") from None
    if not _INT64[0] <= d <= _INT64[1]:
        if pos is None:
            raise ValueError("Overflow when unpacking long long")
        raise TypeError(f"{op}(): argument 'dim' failed to unpack the object at pos {pos} with "
                        "error \"Overflow when unpacking long long\"")
    return d


def _dim_list(op: str, dim) -> list[int] | None:
    """dim for the int[1]? schemas: None, one dim, or a list or tuple of dims."""
    if dim is None:
        return None
    if isinstance(dim, str) or (isinstance(dim, (list, tuple)) and builtins.any(
            isinstance(d, str) for d in dim)):
        if op in _NAMED:
            raise RuntimeError(f"treduce.{op}: named dims are not supported (got {dim!r}); "
                               "pass dims as ints")
        raise TypeError(f"{op}(): argument 'dim' must be int or a sequence of ints, not "
                        f"{_type_name(dim)}")
    if isinstance(dim, (list, tuple)):
        return [_index(op, d, i + 1) for i, d in enumerate(dim)]
    return [_index(op, dim, None)]


def _dim_one(op: str, dim) -> int | None:
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
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not "
                        f"{_type_name(input)}")
    if not isinstance(keepdim, bool):
        raise TypeError(f"{op}(): argument 'keepdim' must be bool, not {_type_name(keepdim)}")
    if dtype is not None and not isinstance(dtype, torch.dtype):
        raise TypeError(f"{op}(): argument 'dtype' must be torch.dtype, not {_type_name(dtype)}")


def _by_dims(op: str, overload, input, dim, keepdim, dtype=None):
    """The torch.ops call of an op with int[1]? dims, after torch's argument checks."""
    _check_call(op, input, keepdim, dtype)
    dims = _dim_list(op, dim)
    if dtype is None:
        return overload(input, dims, keepdim)
    return overload(input, dims, keepdim, dtype=dtype)


def sum(input: torch.Tensor, dim: DimArg = None, keepdim: bool = False, *,
        dtype: torch.dtype | None = None) -> torch.Tensor:
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


def mean(input: torch.Tensor, dim: DimArg = None, keepdim: bool = False, *,
         dtype: torch.dtype | None = None) -> torch.Tensor:
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


def prod(input: torch.Tensor, dim: DimArg = None, keepdim: bool = False, *,
         dtype: torch.dtype | None = None) -> torch.Tensor:
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
    return _ARGMAX(input, _dim_one("argmax", dim), keepdim)


def argmin(input: torch.Tensor, dim: int | None = None, keepdim: bool = False) -> torch.Tensor:
    """Index of the minimum along ``dim``, as :func:`torch.argmin` (first index among ties, the
    first NaN if there is one). Not differentiable."""
    if not _compiling():
        out = _call(_K_ARGMIN, input, dim, keepdim, None)
        if out is not NotImplemented:
            return out
    _check_call("argmin", input, keepdim)
    return _ARGMIN(input, _dim_one("argmin", dim), keepdim)


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


# ----------------------------------------------------------------------------------------------
# Shape logic shared by the fake kernels and the autograd formulas. It only looks at sizes, so it
# works with SymInts, and raises what the C++ plan (csrc/plan.cpp) raises.

def _wrap_dim(d: int, ndim: int) -> int:
    n = builtins.max(ndim, 1)  # a 0-d tensor accepts dims -1 and 0
    if not -n <= d < n:
        raise IndexError(
            f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})")
    return d + n if d < 0 else d


def _reduced_dims(x: torch.Tensor, dim: Sequence[int] | None) -> list[int]:
    ndim = x.dim()
    if not dim:
        return list(range(ndim))
    wrapped = [_wrap_dim(d, ndim) for d in dim]  # every dim wrapped first, then the repeats
    seen: list[int] = []
    for w in wrapped:
        if w in seen:
            raise RuntimeError(f"dim {w} appears multiple times in the list of dims")
        seen.append(w)
    return sorted(w for w in seen if w < ndim)


def _out_shape(x: torch.Tensor, dims: list[int], keepdim: bool) -> list:
    if keepdim:
        return [1 if i in dims else s for i, s in enumerate(x.shape)]
    return [s for i, s in enumerate(x.shape) if i not in dims]


def _check_dtype(op: str, dtype: torch.dtype, what: str) -> None:
    if dtype.is_complex:
        raise TypeError(f"treduce.{op}: complex {what} is not supported (got {dtype})")
    if dtype in _FP8:
        if op in _TAKES_FP8 and what == "input":
            return
        raise TypeError(f"treduce.{op}: float8 {what} is not supported (got {dtype})")
    if dtype not in _SUPPORTED:
        raise TypeError(f"treduce.{op}: {what} dtype {dtype} is not supported")


def _result_dtype(op: str, x: torch.Tensor, dtype: torch.dtype | None) -> torch.dtype:
    """The dtype rules (and errors) of csrc/plan.cpp's result_dtype."""
    _check_dtype(op, x.dtype, "input")
    if dtype is not None:
        _check_dtype(op, dtype, "output")
    if op in ("sum", "prod"):
        if dtype is not None:
            return dtype
        if not x.dtype.is_floating_point:
            return torch.int64
        return torch.float32 if x.dtype in _FP8 else x.dtype
    if op == "mean":
        if dtype is not None:
            if not dtype.is_floating_point:
                raise RuntimeError("mean(): could not infer output dtype. Optional dtype must be "
                                   f"either a floating point or complex dtype. Got: {_name(dtype)}")
            return dtype
        if not x.dtype.is_floating_point:
            raise RuntimeError("mean(): could not infer output dtype. Input dtype must be either "
                               f"a floating point or complex dtype. Got: {_name(x.dtype)}")
        return torch.float32 if x.dtype in _FP8 else x.dtype
    if op in ("argmax", "argmin"):
        if x.dtype == torch.bool:
            raise RuntimeError(f"{op}(): does not support bool input")
        return torch.int64
    if op.startswith("bitwise"):
        if x.dtype.is_floating_point:
            raise TypeError(f"treduce.{op}: only integer and bool inputs are supported "
                            f"(got {x.dtype})")
    return x.dtype


def _name(dtype: torch.dtype) -> str:
    return {torch.int64: "Long", torch.int32: "Int", torch.int16: "Short", torch.int8: "Char",
            torch.uint8: "Byte", torch.bool: "Bool"}.get(dtype, str(dtype))


def _check_nonempty(op: str, x: torch.Tensor, dim, dims: list[int]) -> None:
    if x.numel() != 0:
        return
    if not dim:
        if op in ("argmax", "argmin"):
            raise IndexError(f"{op}(): Expected reduction dim to be specified for "
                             "input.numel() == 0.")
        raise RuntimeError(f"{op}(): Expected reduction dim to be specified for input.numel() "
                           "== 0. Specify the reduction dim with the 'dim' argument.")
    for d in dims:
        if x.dim() > 0 and x.shape[d] == 0:
            raise IndexError(f"{op}(): Expected reduction dim {d} to have non-zero size.")


def _fake(op: str, x, dim, keepdim, dtype=None):
    out_dtype = _result_dtype(op, x, dtype)
    if op in ("amax", "amin", "argmax", "argmin"):  # before the repeats, as torch
        _check_nonempty(op, x, dim, [_wrap_dim(d, x.dim()) for d in dim or ()])
    dims = _reduced_dims(x, dim)
    return x.new_empty(_out_shape(x, dims, keepdim), dtype=out_dtype)


for _op in ("sum", "mean", "prod"):
    torch.library.register_fake(f"treduce::{_op}")(
        lambda x, dim=None, keepdim=False, *, dtype=None, _op=_op: _fake(_op, x, dim, keepdim,
                                                                         dtype))
for _op in ("amax", "amin", "bitwise_and", "bitwise_or", "bitwise_xor"):
    torch.library.register_fake(f"treduce::{_op}")(
        lambda x, dim=None, keepdim=False, _op=_op: _fake(_op, x, dim, keepdim))
for _op in ("argmax", "argmin"):
    torch.library.register_fake(f"treduce::{_op}")(
        lambda x, dim=None, keepdim=False, _op=_op: _fake(
            _op, x, None if dim is None else [dim], keepdim))


# ----------------------------------------------------------------------------------------------
# Autograd for prod (the others: csrc/autograd.cpp). The backward formula is plain torch ops, so
# it is traceable and differentiable again (double backward).

def _prod_setup(ctx, inputs, keyword_only_inputs, output):
    x, dim, keepdim = inputs
    ctx.dims = _reduced_dims(x, dim)
    ctx.keepdim = keepdim
    ctx.save_for_backward(x)


def _prod_backward(ctx, grad):
    """d prod / d x_i = the product of all the other elements, computed with exclusive products
    from both ends, so that zeros (one or several) need no division, as in torch."""
    (x,) = ctx.saved_tensors
    dims = ctx.dims
    if not dims:
        return grad.to(x.dtype), None, None
    keep = [d for d in range(x.dim()) if d not in dims]
    perm = keep + dims
    xp = x.permute(perm)
    kept_shape = list(xp.shape[:len(keep)])
    flat = xp.reshape(kept_shape + [-1]).to(grad.dtype)
    if flat.shape[-1] == 0:
        return torch.zeros_like(x), None, None
    ones = torch.ones_like(flat[..., :1])
    left = torch.cumprod(torch.cat([ones, flat[..., :-1]], -1), -1)
    right = torch.cumprod(torch.cat([ones, flat.flip(-1)[..., :-1]], -1), -1).flip(-1)
    g = grad.reshape(kept_shape + [1]) * (left * right)
    inv = [perm.index(i) for i in range(x.dim())]
    return g.reshape(xp.shape).permute(inv).to(x.dtype), None, None


# sum, mean, amax and amin have C++ autograd kernels (csrc/autograd.cpp): the Python layer that
# register_autograd installs cost ~5 µs of host time per call. prod keeps its formula here.
torch.library.register_autograd("treduce::prod", _prod_backward, setup_context=_prod_setup)
