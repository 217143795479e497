"""The wrappers' direct entry (torch_reduce._fast, csrc/python/fast.cpp): plain calls go straight to
the dispatcher and give exactly what torch.ops.treduce gives; everything else (tensor subclasses,
torch-function modes, unusual argument types) is declined and takes the torch.ops path."""

import pytest
import torch
from conftest import DEVICES
from torch.overrides import TorchFunctionMode

import torch_reduce
from torch_reduce import _fast
from torch_reduce import ops as tro

OPS = torch.ops.treduce
CODES = {
    "sum": tro._K_SUM,
    "mean": tro._K_MEAN,
    "prod": tro._K_PROD,
    "amax": tro._K_AMAX,
    "amin": tro._K_AMIN,
    "argmax": tro._K_ARGMAX,
    "argmin": tro._K_ARGMIN,
    "bitwise_and": tro._K_AND,
    "bitwise_or": tro._K_OR,
    "bitwise_xor": tro._K_XOR,
}


def as_list(dim):
    return None if dim is None else [dim] if isinstance(dim, int) else list(dim)


# (op, dims, keepdim, dtype) for a (4, 5, 6) input; the reference call through torch.ops.
CALLS = (
    [
        (op, dim, keep, dt)
        for op in ("sum", "mean", "prod")
        for dim in (None, 1, -1, [0, 2], (2, 0), [], ())
        for keep in (False, True)
        for dt in (None, torch.float64)
    ]
    + [
        (op, dim, keep, None)
        for op in ("amax", "amin")
        for dim in (None, 0, -2, (0, 2), [1], ())
        for keep in (False, True)
    ]
    + [
        (op, dim, keep, None)
        for op in ("argmax", "argmin")
        for dim in (None, 0, -1)
        for keep in (False, True)
    ]
    + [
        (op, dim, keep, None)
        for op in ("bitwise_and", "bitwise_or", "bitwise_xor")
        for dim in (None, 1, [0, 2])
        for keep in (False, True)
    ]
)


def reference(op, x, dim, keep, dt):
    if op in ("sum", "mean", "prod"):
        f = getattr(OPS, op)
        return f(x, as_list(dim), keep) if dt is None else f(x, as_list(dim), keep, dtype=dt)
    if op in ("amax", "amin"):
        return getattr(OPS, op)(x, as_list(dim) or [], keep)
    if op in ("argmax", "argmin"):
        return getattr(OPS, op)(x, dim, keep)
    return getattr(OPS, op)(x, as_list(dim), keep)


def wrapper_call(op, x, dim, keep, dt):
    f = getattr(torch_reduce, op)
    return f(x, dim, keep) if dt is None else f(x, dim, keep, dtype=dt)


@pytest.mark.parametrize("device", DEVICES)
def test_plain_calls_take_the_direct_entry_and_match_torch_ops(device):
    g = torch.Generator().manual_seed(7)
    xf = torch.randn(4, 5, 6, generator=g).to(device)
    xi = torch.randint(-50, 50, (4, 5, 6), generator=g, dtype=torch.int32).to(device)
    for op, dim, keep, dt in CALLS:
        x = xi if op.startswith("bitwise") else xf
        msg = f"{op} dim={dim!r} keepdim={keep} dtype={dt}"
        direct = _fast.call(CODES[op], x, dim, keep, dt)
        assert direct is not NotImplemented, msg
        want = reference(op, x, dim, keep, dt)
        for got in (direct, wrapper_call(op, x, dim, keep, dt)):
            assert got.dtype == want.dtype and got.shape == want.shape, msg
            assert got.device == want.device, msg
            assert torch.equal(got, want), msg


def test_unusual_arguments_are_declined():
    x = torch.randn(3, 4)
    declined = [
        (tro._K_SUM, x, [True], False, None),  # a bool is not a dim here
        (tro._K_SUM, x, torch.tensor(1), False, None),
        (tro._K_SUM, x, [0, "1"], False, None),
        (tro._K_SUM, x, 2**70, False, None),  # past int64
        (tro._K_SUM, x, [2**64], False, None),
        (tro._K_SUM, x, None, 1, None),  # keepdim must be a bool
        (tro._K_SUM, x, None, False, "float64"),
        (tro._K_AMAX, x, None, False, torch.float64),  # amax has no dtype
        (tro._K_ARGMAX, x, [0], False, None),  # argmax takes one int
        (99, x, None, False, None),
        (-1, x, None, False, None),
        (tro._K_SUM, x.numpy(), None, False, None),
        (tro._K_SUM, x.as_subclass(type("Sub", (torch.Tensor,), {})), None, False, None),
    ]
    for args in declined:
        assert _fast.call(*args) is NotImplemented, repr(args[2:])
    assert _fast.call(tro._K_SUM, x, None, False) is NotImplemented  # four arguments
    # nn.Parameter is a plain tensor to torch's C++ (its __torch_function__ is disabled)
    p = torch.nn.Parameter(x.clone())
    assert _fast.call(tro._K_SUM, p, 1, False, None) is not NotImplemented


def test_declined_calls_still_work_through_torch_ops():
    x = torch.randn(3, 4)
    assert torch.equal(torch_reduce.sum(x, torch.Size([1])), OPS.sum(x, [1]))
    with pytest.raises((TypeError, RuntimeError)):
        torch_reduce.sum(x, "1")
    with pytest.raises((TypeError, RuntimeError)):
        OPS.sum(x, "1")


def test_subclasses_and_modes_see_the_call():
    seen = []

    class Logged(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append(func)
            return super().__torch_function__(func, types, args, kwargs or {})

    x = torch.randn(3, 4)
    out = torch_reduce.sum(x.as_subclass(Logged), 1)
    assert OPS.sum.default in seen
    assert torch.equal(out.as_subclass(torch.Tensor), OPS.sum(x, [1]))

    class Mode(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            seen.append(("mode", func))
            return func(*args, **(kwargs or {}))

    seen.clear()
    with Mode():
        out = torch_reduce.amax(x, 0)
    assert ("mode", OPS.amax.default) in seen
    assert torch.equal(out, OPS.amax(x, [0]))


@pytest.mark.parametrize("device", DEVICES)
def test_errors_are_those_of_torch_ops(device):
    x = torch.randn(3, 4, device=device)
    xi = torch.arange(12, device=device).view(3, 4)
    empty = torch.empty(0, 4, device=device)
    pairs = [
        (lambda: torch_reduce.sum(x, 5), lambda: OPS.sum(x, [5])),
        (lambda: torch_reduce.sum(x, [0, 0]), lambda: OPS.sum(x, [0, 0])),
        (lambda: torch_reduce.mean(xi), lambda: OPS.mean(xi)),
        (lambda: torch_reduce.amax(empty, 0), lambda: OPS.amax(empty, [0])),
        (lambda: torch_reduce.argmax(empty), lambda: OPS.argmax(empty)),
        (lambda: torch_reduce.bitwise_and(x), lambda: OPS.bitwise_and(x)),
        (
            lambda: torch_reduce.sum(x, dtype=torch.complex64),
            lambda: OPS.sum(x, dtype=torch.complex64),
        ),
    ]
    for ours, theirs in pairs:
        with pytest.raises(Exception) as want:
            theirs()
        with pytest.raises(want.type) as got:
            ours()
        assert str(got.value) == str(want.value)


@pytest.mark.parametrize("device", DEVICES)
def test_autograd_through_the_direct_entry(device):
    x = torch.randn(5, 6, device=device, dtype=torch.float64, requires_grad=True)
    for ours, theirs in (
        (lambda t: torch_reduce.sum(t, 1), lambda t: t.sum(1)),
        (lambda t: torch_reduce.mean(t, (0, 1)), lambda t: t.mean((0, 1))),
        (lambda t: torch_reduce.amax(t, 0), lambda t: t.amax(0)),
        (lambda t: torch_reduce.prod(t, 1), lambda t: t.prod(1)),
    ):
        (g_ours,) = torch.autograd.grad(ours(x).sum(), x)
        (g_ref,) = torch.autograd.grad(theirs(x).sum(), x)
        torch.testing.assert_close(g_ours, g_ref)
    with torch.no_grad():
        assert not torch_reduce.sum(x, 1).requires_grad
