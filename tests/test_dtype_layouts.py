"""sum, mean and prod with every (input dtype, dtype=) pair, on every layout, against torch.

The pairs without a kernel of their own (int -> float, float64 -> float32, float32 -> float16,
int64 -> int8, ...) convert the input first; the converted copy has a layout of its own, which is
what the kernel must read. Every layout here is one that the conversion changes (step slices,
expanded and overlapping views become contiguous) or keeps (permutations, channels_last).
"""

import math

import pytest
import torch
from conftest import ALL_DTYPES, ALL_LAYOUTS, DEVICES, FP8_DTYPES, assert_sum_close, make_input
from hypothesis import given, settings
from hypothesis import strategies as st

import torch_reduce

# (shape, dims): rows, columns, several dims, everything; 4-d shapes for channels_last.
CASES = [
    ((6, 35), [1]),
    ((6, 35), [0]),
    ((5, 6, 7), [0, 2]),
    ((5, 6, 7), None),
    ((3, 4, 5, 6), [1]),
    ((3, 4, 5, 6), [0, 2, 3]),
    ((2, 3, 4, 5), None),
]
OUT_DTYPES = [None] + ALL_DTYPES
IN_DTYPES = ALL_DTYPES + FP8_DTYPES


def prod_values(x):
    """Products that stay finite and keep precision: floats near 1, integers in -1..2."""
    if x.dtype.is_floating_point:
        return (1 + 0.05 * x.float()).to(x.dtype)
    if x.dtype == torch.bool:
        return x
    return (x % 4 - 1).to(x.dtype)


def reference(op, x, dims, dtype):
    """torch's result (its dtype, shape and any error), and the exact value in float64/int64.

    torch has no float8 sums and prod takes one dim: those are computed on the converted input
    one dim at a time, as our semantics define them (convert, then reduce)."""
    src = x.to(dtype) if dtype is not None else x
    if x.dtype in FP8_DTYPES and dtype is None:
        src = x.float()
    if op == "prod":
        wide = src.double() if src.is_floating_point() else src.long()
        want = wide
        for d in sorted(dims if dims else range(x.dim()), reverse=True):
            want = want.prod(d)
        if dtype is None and not x.dtype.is_floating_point:
            out_dtype = torch.int64
        else:
            out_dtype = src.dtype
        return want, None, out_dtype
    fn = torch.sum if op == "sum" else torch.mean
    if x.dtype in FP8_DTYPES:
        theirs = fn(src, dims, dtype=dtype)
    else:
        theirs = fn(x, dims, dtype=dtype)
    wide = src.double() if src.is_floating_point() else src.long()
    if op == "sum":
        return (
            fn(wide, dims),
            fn(wide.abs(), dims) if wide.is_floating_point() else None,
            theirs.dtype,
        )
    return fn(wide, dims), fn(wide.abs(), dims), theirs.dtype


def expect_error(op, x, dims, dtype):
    """The exception type torch raises for this call, or None."""
    if x.dtype in FP8_DTYPES:  # ours accepts float8: the error is that of the converted call
        x = x.float()
    try:
        if op == "prod":
            torch.prod(x, dtype=dtype)
        else:
            (torch.sum if op == "sum" else torch.mean)(x, dims, dtype=dtype)
    except Exception as e:  # noqa: BLE001 (the type is what is compared)
        return type(e)
    return None


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("layout", ALL_LAYOUTS)
@pytest.mark.parametrize("op", ["sum", "mean", "prod"])
def test_dtype_pairs_on_every_layout(device, op, layout):
    for in_dtype in IN_DTYPES:
        if op == "prod" and in_dtype in FP8_DTYPES:
            continue  # float8 prod raises (tested in test_family)
        for out_dtype in OUT_DTYPES:
            for shape, dims in CASES:
                if layout == "channels_last" and len(shape) != 4:
                    continue
                x = make_input(shape, in_dtype, device, layout)
                if op == "prod":
                    x = prod_values(x)
                msg = f"{op} {in_dtype}->{out_dtype} {layout} {shape} dims={dims}"
                fn = getattr(torch_reduce, op)
                error = expect_error(op, x, dims, out_dtype)
                if error is not None:
                    with pytest.raises(error):
                        fn(x, dims, dtype=out_dtype)
                    continue
                ours = fn(x, dims, dtype=out_dtype)
                ref, absref, want_dtype = reference(op, x, dims, out_dtype)
                assert ours.dtype == want_dtype and ours.shape == ref.shape, msg
                assert ours.device == x.device, msg
                if want_dtype == torch.bool:  # a bool result: whether the sum or product is 0
                    assert torch.equal(ours.cpu(), ref.cpu() != 0), msg
                elif op == "prod" and want_dtype.is_floating_point:
                    # the result's rounding, and one 53-bit rounding per factor (both ours and
                    # the float64 reference)
                    k = x.numel() // max(1, ref.numel())
                    rtol = 4 * torch.finfo(want_dtype).eps + 2 * k * 2.0**-53
                    want = ref.to(want_dtype).double()
                    assert torch.allclose(ours.double(), want, rtol=rtol, atol=0), msg
                elif op == "mean":
                    eps = torch.finfo(want_dtype).eps
                    err = (ours.double() - ref).abs()
                    assert not torch.isnan(ours).any(), msg
                    assert (err <= eps * ref.abs() + 1e-6 * absref).all(), msg
                else:
                    assert_sum_close(ours, ref, absref, msg)


@pytest.mark.parametrize("device", DEVICES)
def test_issue_examples(device):
    """The reported cases: step slices, expanded views and a wide step with dtype= conversions."""
    x = torch.arange(20, dtype=torch.int32, device=device)[::2]
    assert torch_reduce.sum(x, dtype=torch.float32).item() == 90.0
    e = torch.arange(3, device=device).view(3, 1).expand(3, 4)
    assert torch_reduce.sum(e, 1, dtype=torch.float64).tolist() == [0.0, 4.0, 8.0]
    z = torch.arange(10**7, dtype=torch.int32, device=device)[:: 10**6]
    assert torch_reduce.sum(z, dtype=torch.float32).item() == float(sum(range(0, 10**7, 10**6)))
    p = torch.randint(-50, 50, (31, 201), device=device)[:, 1::2]
    ours = torch_reduce.prod(p, 0, dtype=torch.float64)
    # The exact products need up to 175 bits, so each float64 order rounds them differently
    # (torch's CUDA order is not its CPU order): within 31 roundings of the exact value.
    exact = torch.tensor([float(math.prod(c)) for c in p.T.tolist()], dtype=torch.float64)
    torch.testing.assert_close(ours.cpu(), exact, rtol=31 * 2.0**-53, atol=0)
    torch.testing.assert_close(
        torch.prod(p, 0, dtype=torch.float64).cpu(), exact, rtol=31 * 2.0**-53, atol=0
    )


@pytest.mark.parametrize("device", DEVICES)
def test_override_and_autograd_with_dtype_on_views(device):
    """The same conversions reached through override() and autograd."""
    x = torch.arange(40, dtype=torch.int32, device=device).view(8, 5)[::2, 1:]
    with torch_reduce.override() as mode:
        got = x.sum(1, dtype=torch.float32)
    assert mode.routed["sum"] == 1
    assert torch.equal(got, x.sum(1, dtype=torch.float32))
    w = torch.randn(10, 6, dtype=torch.float64, device=device, requires_grad=True)
    v = w[::2, ::3]
    rows = torch_reduce.sum(v, 1, dtype=torch.float32)
    # Each row holds two values: their float32 sum is correctly rounded in either order.
    assert torch.equal(rows, v.detach().sum(1, dtype=torch.float32))
    rows.sum().backward()
    want = torch.zeros_like(w)
    want[::2, ::3] = 1
    assert torch.equal(w.grad, want)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", FP8_DTYPES)
@pytest.mark.parametrize("op", ["amax", "amin"])
def test_fp8_extremes_keep_infinities(device, dtype, op):
    """float8 results are stored without saturation: an infinite float8_e5m2 maximum stays
    infinite (cuda_fp8.h's conversions saturate to 57344 unless told not to)."""
    big = float("inf") if dtype == torch.float8_e5m2 else float("nan")
    values = [[0.375, -big], [-0.3125, 1.25]] if op == "amin" else [[0.375, big], [-0.3125, 1.25]]
    x = torch.tensor(values).to(dtype).to(device)
    fn = getattr(torch_reduce, op)
    for dims in (None, [0], [1]):
        got = fn(x) if dims is None else fn(x, dims)
        want = getattr(torch, op)(x.float(), dims if dims is not None else []).to(dtype)
        assert got.dtype == dtype
        assert torch.equal(got.float().isnan(), want.float().isnan()), dims
        ok = ~want.float().isnan()
        assert torch.equal(got.float()[ok], want.float()[ok]), dims
    s = torch.tensor(big).to(dtype).to(device)  # a 0-dim input
    assert torch.equal(fn(s).float().isnan(), s.float().isnan())
    if dtype == torch.float8_e5m2:
        assert fn(s).float().item() == big


# The floating widenings of dtype=: sum and mean have kernels for them, prod converts first.
WIDENINGS = [
    (torch.bfloat16, torch.float32),
    (torch.float16, torch.float32),
    (torch.float32, torch.float64),
    (torch.float8_e4m3fn, torch.float32),
    (torch.float8_e5m2, torch.float32),
]


@pytest.mark.parametrize("device", DEVICES)
@settings(max_examples=60, deadline=None)
@given(
    op=st.sampled_from(["sum", "mean", "prod"]),
    pair=st.sampled_from(WIDENINGS),
    case=st.sampled_from(CASES),
    layout=st.sampled_from(ALL_LAYOUTS),
    keepdim=st.booleans(),
)
def test_widening_dtype_has_the_bits_of_converting_first(device, op, pair, case, layout, keepdim):
    """A floating dtype= wider than the input gives the bits of the op on the input converted
    first: the conversion is exact and the canonical order does not depend on the input dtype.
    prod takes these pairs that way (dispatch.h); sum and mean have kernels of their own, which
    must keep the same order."""
    src, dst = pair
    if op == "prod" and src in FP8_DTYPES:
        return  # torch has no float8 prod, and neither do we
    shape, dims = case
    x = make_input(shape, src, device, layout)
    if op == "prod":
        x = prod_values(x)
    fn = getattr(torch_reduce, op)
    got = fn(x, dims, keepdim, dtype=dst)
    want = fn(x.to(dst), dims, keepdim)
    assert got.dtype == want.dtype == dst and got.shape == want.shape
    assert torch.equal(got.isnan(), want.isnan())
    ok = ~want.isnan()
    bits = torch.int64 if dst == torch.float64 else torch.int32
    assert torch.equal(got[ok].view(bits), want[ok].view(bits)), (op, pair, case, layout)
