"""Typed wrappers for torch.ops.treduce, and their fake (meta) kernels and autograd formulas.

The schemas live in csrc/ops.cpp, which names this module with ``set_python_module``; the fake
kernels and autograd formulas registered here make the ops work under torch.compile and autograd.
"""
from __future__ import annotations

import builtins
from collections.abc import Sequence

import torch

__all__ = ["sum", "amax"]

DimArg = int | Sequence[int] | None

_SUPPORTED = {
    torch.float32, torch.float64, torch.float16, torch.bfloat16,
    torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool,
}


def _dim_list(dim: DimArg) -> list[int] | None:
    if dim is None:
        return None
    if isinstance(dim, int):
        return [dim]
    return list(dim)


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
    return torch.ops.treduce.sum(input, _dim_list(dim), keepdim, dtype=dtype)


def amax(input: torch.Tensor, dim: DimArg = (), keepdim: bool = False) -> torch.Tensor:
    """Maximum of ``input`` over ``dim``; the same result and semantics as :func:`torch.amax`.

    NaN propagates. ``dim=()`` reduces every dim. The output keeps the input's dtype. Reducing an
    empty dim raises ``IndexError``, as in torch. The gradient is split evenly among tied maxima.
    """
    return torch.ops.treduce.amax(input, _dim_list(dim) or [], keepdim)


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
    seen: list[int] = []
    for d in dim:
        w = _wrap_dim(d, ndim)
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
    if dtype not in _SUPPORTED:
        raise TypeError(f"treduce.{op}: {what} dtype {dtype} is not supported")


def _sum_dtype(x: torch.Tensor, dtype: torch.dtype | None) -> torch.dtype:
    _check_dtype("sum", x.dtype, "input")
    if dtype is not None:
        _check_dtype("sum", dtype, "output")
        return dtype
    return torch.int64 if not x.dtype.is_floating_point else x.dtype


@torch.library.register_fake("treduce::sum")
def _sum_fake(x, dim=None, keepdim=False, *, dtype=None):
    out_dtype = _sum_dtype(x, dtype)
    return x.new_empty(_out_shape(x, _reduced_dims(x, dim), keepdim), dtype=out_dtype)


@torch.library.register_fake("treduce::amax")
def _amax_fake(x, dim=(), keepdim=False):
    _check_dtype("amax", x.dtype, "input")
    dims = _reduced_dims(x, dim)
    if x.numel() == 0:
        if not dim:
            raise RuntimeError(
                "amax(): Expected reduction dim to be specified for input.numel() == 0. "
                "Specify the reduction dim with the 'dim' argument.")
        for d in dims:
            if x.shape[d] == 0:
                raise IndexError(f"amax(): Expected reduction dim {d} to have non-zero size.")
    return x.new_empty(_out_shape(x, dims, keepdim))


# ----------------------------------------------------------------------------------------------
# Autograd. The backward formulas are plain torch ops, so they are traceable and differentiable
# again (double backward).

def _restore_dims(t: torch.Tensor, dims: list[int], keepdim: bool) -> torch.Tensor:
    """Gives a reduced result back its reduced dims, as size 1, for broadcasting."""
    if not keepdim:
        for d in dims:  # ascending, so each index is already final
            t = t.unsqueeze(d)
    return t


def _sum_setup(ctx, inputs, keyword_only_inputs, output):
    x, dim, keepdim = inputs
    ctx.dims = _reduced_dims(x, dim)
    ctx.keepdim = keepdim
    ctx.shape = x.shape
    ctx.in_dtype = x.dtype


def _sum_backward(ctx, grad):
    g = _restore_dims(grad, ctx.dims, ctx.keepdim).expand(ctx.shape)
    return g.to(ctx.in_dtype), None, None


def _amax_setup(ctx, inputs, output):
    x, dim, keepdim = inputs
    ctx.dims = _reduced_dims(x, dim)
    ctx.keepdim = keepdim
    ctx.save_for_backward(x, output)


def _amax_backward(ctx, grad):
    # As torch: the gradient goes to every element equal to the maximum, split evenly among ties.
    x, out = ctx.saved_tensors
    mask = (x == _restore_dims(out, ctx.dims, ctx.keepdim)).to(grad.dtype)
    count = mask.sum(ctx.dims, keepdim=True) if ctx.dims else mask
    g = _restore_dims(grad, ctx.dims, ctx.keepdim) / count
    return g * mask, None, None


torch.library.register_autograd("treduce::sum", _sum_backward, setup_context=_sum_setup)
torch.library.register_autograd("treduce::amax", _amax_backward, setup_context=_amax_setup)
