"""Drop-in mode: route torch's reductions to treduce where treduce supports the call.

    with torch_reduce.override() as mode:
        loss = model(x).sum()          # torch.sum / Tensor.sum -> torch.ops.treduce.sum
    print(mode.routed, mode.fallback)  # Counters by op name

Routed: torch.sum, mean, prod, amax, amin, argmax, argmin and the matching Tensor methods. A call
goes to treduce when its input is a plain strided tensor of a supported dtype on a device for
which treduce has a kernel for that op, and its arguments have a treduce equivalent (no ``out=``,
no unknown keywords); anything else falls back to torch unchanged. Results, errors and gradients
are those of the treduce ops, which follow torch's semantics.
"""

from __future__ import annotations

import collections

import torch
from torch.overrides import TorchFunctionMode

from . import ops

_NAMES = ("sum", "mean", "prod", "amax", "amin", "argmax", "argmin")
_TAKES_DTYPE = ("sum", "mean", "prod")
_ROUTES = {}
for _name in _NAMES:
    _ROUTES[getattr(torch, _name)] = _name
    _ROUTES[getattr(torch.Tensor, _name)] = _name

# The dtypes the treduce ops take decide the routing: any other dtype goes to torch.
_SUPPORTED = ops.SUPPORTED_DTYPES
_FP8 = {torch.float8_e4m3fn, torch.float8_e5m2}
_TAKES_FP8 = {"sum", "mean", "amax", "amin"}
# Which (op, device type) pairs have a treduce kernel, read once from the dispatcher (a plain
# dict, so that torch.compile can trace the lookup).
_KERNELS = {
    (name, dev): torch._C._dispatch_has_kernel_for_dispatch_key(f"treduce::{name}", key)
    for name in _NAMES
    for dev, key in (("cpu", "CPU"), ("cuda", "CUDA"))
}


def _is_int(d) -> bool:
    return isinstance(d, int) and not isinstance(d, bool)  # torch takes no bool as a dim


def _is_dims(dim) -> bool:
    return (
        dim is None
        or _is_int(dim)
        or (isinstance(dim, (tuple, list)) and all(_is_int(d) for d in dim))
    )


def _plan_call(name: str, args, kwargs):
    """The treduce call for this torch call, or None when treduce cannot take it."""
    if not 1 <= len(args) <= 3:
        return None
    vals = dict(zip(("input", "dim", "keepdim"), args))
    for k, v in kwargs.items():  # out=, axis= and the like are not ours
        if (
            k in vals
            or k not in ("dim", "keepdim", "dtype")
            or (k == "dtype" and name not in _TAKES_DTYPE)
        ):
            return None
        vals[k] = v
    x = vals["input"]
    dim, keepdim, dtype = vals.get("dim"), vals.get("keepdim", False), vals.get("dtype")
    if type(x) is not torch.Tensor or x.layout != torch.strided or not isinstance(keepdim, bool):
        return None
    if x.dtype not in _SUPPORTED and not (x.dtype in _FP8 and name in _TAKES_FP8):
        return None
    if not _KERNELS.get((name, x.device.type), False) or not _is_dims(dim):
        return None
    if name in ("argmax", "argmin"):
        if not (dim is None or _is_int(dim)) or x.dtype == torch.bool:
            return None
        return lambda: getattr(ops, name)(x, dim, keepdim)
    if name == "prod" and not ("dim" not in vals or _is_int(dim)):
        return None  # torch.prod takes one int dim, or none at all (not None, not a list)
    if name in ("amax", "amin"):
        return lambda: getattr(ops, name)(x, () if dim is None else dim, keepdim)
    if dtype is not None and dtype not in _SUPPORTED:
        return None
    if name == "mean" and not (dtype if dtype is not None else x.dtype).is_floating_point:
        return None  # torch raises; let it
    return lambda: getattr(ops, name)(x, dim, keepdim, dtype=dtype)


class override(TorchFunctionMode):
    """Route torch.sum, mean, prod, amax, amin, argmax, argmin (functions and Tensor methods) to
    torch.ops.treduce where supported. ``routed`` and ``fallback`` count calls by op name."""

    def __init__(self):
        super().__init__()
        self.routed: collections.Counter = collections.Counter()
        self.fallback: collections.Counter = collections.Counter()

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = _ROUTES.get(func)
        if name is not None:
            call = _plan_call(name, args, kwargs)
            if call is not None:
                self.routed[name] += 1
                return call()
            self.fallback[name] += 1
        return func(*args, **kwargs)
