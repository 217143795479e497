"""The Meta kernels (csrc/plan.cpp), which torch.compile's fake tensors run: for every call they
give the shape and dtype the CPU kernel gives, or raise the same exception type, because both
come from the same rules (check_reduction). And the op codes the wrappers use come from the
extension (csrc/op_list.h)."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import torch_reduce  # noqa: F401  (registers the ops)
from torch_reduce import _fast

OPS = (
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
)
DTYPES = (
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
    torch.float8_e4m3fn,
    torch.complex64,
)


def test_op_codes_come_from_the_extension():
    assert sorted(_fast.OPS) == sorted(OPS)
    assert sorted(_fast.OPS.values()) == list(range(len(OPS)))
    for name in OPS:
        assert hasattr(torch.ops.treduce, name)


def call(op: str, x: torch.Tensor, dim, keepdim: bool, dtype):
    f = getattr(torch.ops.treduce, op).default
    if op in ("argmax", "argmin"):
        return f(
            x, dim if dim is None or isinstance(dim, int) else (dim[0] if dim else None), keepdim
        )
    if op in ("amax", "amin"):
        return f(x, [] if dim is None else list(dim), keepdim)
    if op in ("sum", "mean", "prod"):
        return f(x, dim, keepdim, dtype=dtype)
    return f(x, dim, keepdim)


def outcome(op, x, dim, keepdim, dtype):
    try:
        out = call(op, x, dim, keepdim, dtype)
    except Exception as e:  # noqa: BLE001  (the type is what is compared)
        return type(e)
    return (tuple(out.shape), out.dtype)


def cpu_input(shape, dtype):
    if dtype.is_floating_point or dtype.is_complex:
        return torch.randn(shape).to(dtype)
    if dtype == torch.bool:
        return torch.rand(shape) > 0.5
    return torch.randint(0, 5, shape).to(dtype)


@settings(max_examples=400, deadline=None)
@given(data=st.data())
def test_meta_matches_cpu(data):
    op = data.draw(st.sampled_from(OPS))
    shape = tuple(data.draw(st.lists(st.integers(0, 3), max_size=4)))
    dtype = data.draw(st.sampled_from(DTYPES))
    ndim = len(shape)
    dim = data.draw(st.one_of(st.none(), st.lists(st.integers(-ndim - 1, ndim), max_size=3)))
    keepdim = data.draw(st.booleans())
    out_dtype = (
        data.draw(st.one_of(st.none(), st.sampled_from(DTYPES)))
        if op in ("sum", "mean", "prod")
        else None
    )
    x = cpu_input(shape, dtype)
    want = outcome(op, x, dim, keepdim, out_dtype)
    got = outcome(op, x.to("meta"), dim, keepdim, out_dtype)
    assert got == want, (op, shape, dtype, dim, keepdim, out_dtype)


def test_meta_with_symbolic_sizes():
    """A dynamic-shape compile traces through the Meta kernels (no Python fake kernels)."""
    torch._dynamo.reset()
    f = torch.compile(
        lambda t: torch_reduce.sum(t, 1) + torch_reduce.amax(t, [0]).sum(),
        fullgraph=True,
        dynamic=True,
    )
    for n in (3, 5, 9):
        x = torch.randn(n, n + 1)
        want = x.double().sum(1).float() + x.amax(0).sum()
        torch.testing.assert_close(f(x), want)


@pytest.mark.parametrize("op", ["amax", "argmax"])
def test_meta_empty_errors(op):
    x = torch.empty(0, 3, device="meta")
    with pytest.raises(IndexError):
        call(op, x, [0], False, None)
    with pytest.raises(IndexError if op == "argmax" else RuntimeError):
        call(op, x, None, False, None)
