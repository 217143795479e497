"""torch_reduce.override(): routing, fallback, counts, gradients, torch.compile, the MLP
example's loss curve against plain torch, and drawn calls spelt in torch's API against torch.
"""

import sys
from pathlib import Path

import pytest
import torch
from conftest import DEVICES

import torch_reduce

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))


@pytest.mark.parametrize("device", DEVICES)
def test_routes_functions_and_methods(device):
    x = torch.randn(4, 6, device=device)
    calls = [
        ("sum", lambda: torch.sum(x), lambda: x.sum()),
        ("sum", lambda: torch.sum(x, 1, True), lambda: x.sum(dim=(0, 1), dtype=torch.float64)),
        ("amax", lambda: torch.amax(x, 1), lambda: x.amax(dim=(0,), keepdim=True)),
        ("mean", lambda: torch.mean(x, 0), lambda: x.mean()),
        ("prod", lambda: torch.prod(x, 1), lambda: x.prod()),
        ("amin", lambda: torch.amin(x, 0), lambda: x.amin()),
        ("argmax", lambda: torch.argmax(x, 1), lambda: x.argmax()),
        ("argmin", lambda: torch.argmin(x), lambda: x.argmin(dim=0, keepdim=True)),
    ]
    for name, f, g in calls:
        want_f, want_g = f(), g()
        with torch_reduce.override() as mode:
            got_f, got_g = f(), g()
        has_kernel = torch._C._dispatch_has_kernel_for_dispatch_key(
            f"treduce::{name}", "CUDA" if device == "cuda" else "CPU"
        )
        assert mode.routed[name] == (2 if has_kernel else 0), name
        assert mode.fallback[name] == (0 if has_kernel else 2), name
        for got, want in ((got_f, want_f), (got_g, want_g)):
            assert got.dtype == want.dtype and got.shape == want.shape, name
            assert torch.allclose(got.double(), want.double(), rtol=1e-5, atol=1e-6), name


def test_falls_back_when_unsupported():
    x = torch.randn(3, 4)
    out = torch.empty(3)
    with torch_reduce.override() as mode:
        torch.sum(x, 1, out=out)  # out=
        torch.sum(torch.randn(3, dtype=torch.complex64))  # complex
        torch.sum(x.to_sparse())  # sparse layout
        torch.sum(torch.ones(3, device="meta"))  # no treduce kernel there
        torch.sum(x)  # routed
    assert mode.routed["sum"] == 1
    assert mode.fallback["sum"] == 4
    with torch_reduce.override() as mode, pytest.raises(RuntimeError, match="mean"):
        torch.mean(torch.arange(4))  # torch's own error, from torch
    assert mode.fallback["mean"] == 1


def test_gradients_flow_like_torch():
    x = torch.randn(5, 7, requires_grad=True)
    y = x.detach().clone().requires_grad_()
    with torch_reduce.override() as mode:
        (x.sum(1).pow(2).mean() + x.amax(0).sum() + x.amin() + x.prod(1).sum()).backward()
    (y.sum(1).pow(2).mean() + y.amax(0).sum() + y.amin() + y.prod(1).sum()).backward()
    assert sum(mode.routed.values()) >= 6
    assert torch.allclose(x.grad, y.grad, rtol=1e-5, atol=1e-6)


def test_under_torch_compile():
    def f(x):
        return torch.sum(x * 2, 1).mean() + x.amax() + x.argmax().float()

    torch._dynamo.reset()
    compiled = torch.compile(f, fullgraph=True, dynamic=True)
    with torch_reduce.override() as mode:
        for n in (6, 9, 12):
            x = torch.randn(n, 7, requires_grad=True)
            out = compiled(x)
            out.backward()
            assert torch.allclose(out, f(x.detach()), rtol=1e-5)
    assert mode.routed["sum"] >= 3 and mode.routed["amax"] >= 3


@pytest.mark.parametrize("device", DEVICES)
def test_mlp_example_matches_plain_torch(device):
    import train_mlp

    assert train_mlp.main(steps=20, device=device) < 1e-4


OVERRIDE_OPS = ["sum", "mean", "prod", "amax", "amin", "argmax", "argmin"]


def _torch_form(data, call):
    """A spelling of `call` in torch's API: function or method; dim and keepdim positional, by
    keyword, or left out where they are the defaults; dtype= by keyword. Returns a function of
    no arguments that makes the torch call."""
    from hypothesis import strategies as st

    method = data.draw(st.booleans(), "method")
    style = data.draw(st.sampled_from(["positional", "keyword", "default"]), "style")
    args, kwargs = [], {}
    if style == "positional":
        args.append(call.dim)
        if call.keepdim or data.draw(st.booleans(), "keepdim spelt"):
            if data.draw(st.booleans(), "keepdim by keyword"):
                kwargs["keepdim"] = call.keepdim
            else:
                args.append(call.keepdim)
    elif style == "keyword" or call.dim is not None or call.keepdim:
        kwargs["dim"] = call.dim
        if call.keepdim or data.draw(st.booleans(), "keepdim spelt"):
            kwargs["keepdim"] = call.keepdim
    if call.dtype is not None:
        kwargs["dtype"] = call.dtype
    if method:
        return lambda: getattr(call.x, call.op)(*args, **kwargs)
    return lambda: getattr(torch, call.op)(call.x, *args, **kwargs)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", OVERRIDE_OPS)
def test_override_matches_torch_on_drawn_calls(op, device):
    """Property-based: a drawn call (fuzz_cases: dtypes, layouts, dims, keepdim, dtype=) spelt in
    torch's API (_torch_form) gives under override() what torch gives without it: the same
    exception type, or a routed result within the fuzz tests' tolerances of torch's (exact for
    integers and the extremes), or torch's own result where it falls back. The one deliberate
    difference: float8 sums, means and extremes, which torch refuses, are routed (README)."""
    from conftest import FP8_DTYPES
    from fuzz_cases import FUZZ_SETTINGS, _error_of, calls, check_against_torch, expected
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(FUZZ_SETTINGS, max_examples=150)
    @given(call=calls(op, device), data=st.data())
    def prop(call, data):
        torch_call = _torch_form(data, call)
        plain_err = _error_of(torch_call)
        got = None
        with torch_reduce.override() as mode:
            try:
                got = torch_call()
                over_err = None
            except Exception as e:  # noqa: BLE001 (the type is compared)
                over_err = type(e)
        routed = mode.routed[op] == 1
        # a spelling that torch's argument parser refuses never reaches the mode
        seen = mode.routed[op] + mode.fallback[op]
        assert seen == 1 or (seen == 0 and over_err == plain_err is not None), (call, mode.routed)
        if plain_err is not None:
            if over_err is None:  # torch refused what we took: float8 only
                assert routed and call.x.dtype in FP8_DTYPES, (call, plain_err)
                return
            assert over_err == plain_err, (call, over_err, plain_err)
            return
        assert over_err is None, (call, over_err)
        if not routed:
            torch.testing.assert_close(got, torch_call(), rtol=0, atol=0, equal_nan=True)
            return
        err, theirs, exact, absref = expected(call)
        assert err is None, (call, err)
        check_against_torch(call, got, theirs, exact, absref)

    prop()
