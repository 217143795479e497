"""The rest of the family: mean, prod, amin, argmax, argmin, bitwise_and/or/xor, and float8 inputs,
against torch (or numpy for the bitwise reductions, which torch lacks).

Every test runs on the CPU and, marked `cuda` (skipped without a GPU), on CUDA.
"""

import math

import numpy as np
import pytest
import torch
from conftest import DEVICES, FLOAT_DTYPES, INT_DTYPES, LAYOUTS, assert_same_bits, cases, make_input
from hypothesis import given, settings
from hypothesis import strategies as st

import torch_reduce

FAMILY_DEVICES = DEVICES


def dim_list(dim):
    return None if dim is None else ([dim] if isinstance(dim, int) else dim)


def reduced(x, dim):
    nd = max(x.dim(), 1)
    if not dim_list(dim):
        return list(range(x.dim()))
    return sorted({d % nd for d in dim_list(dim)} & set(range(x.dim())))


@pytest.mark.parametrize("device", FAMILY_DEVICES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_mean_matches_torch(device, dtype, layout):
    for shape, dim, keepdim in cases(layout):
        x = make_input(shape, dtype, device, layout)
        d = dim_list(dim)
        ours = torch.ops.treduce.mean(x, d, keepdim)
        theirs = torch.mean(x, d, keepdim)
        msg = f"mean {dtype} {layout} {shape} dim={dim} keepdim={keepdim}"
        assert ours.dtype == theirs.dtype and ours.shape == theirs.shape, msg
        exact = torch.mean(x.double(), d, keepdim)
        tol = {
            torch.float32: 4e-6,
            torch.float64: 1e-14,
            torch.float16: 1e-3,
            torch.bfloat16: 8e-3,
        }[dtype]
        scale = torch.mean(x.double().abs(), d, keepdim)
        assert ((ours.double() - exact).abs() <= tol * scale + 1e-30).all(), msg


@pytest.mark.parametrize("device", FAMILY_DEVICES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", ALL := FLOAT_DTYPES + INT_DTYPES + [torch.bool], ids=str)
def test_amin_argmax_argmin_match_torch(device, dtype, layout):
    for shape, dim, keepdim in cases(layout):
        x = make_input(shape, dtype, device, layout)
        if dtype.is_floating_point:  # ties: few distinct values
            x = (x * 2).round().to(dtype)
        d = dim_list(dim) or []
        msg = f"{dtype} {layout} {shape} dim={dim} keepdim={keepdim}"
        assert_same_bits(
            torch.ops.treduce.amin(x, d, keepdim), torch.amin(x, d, keepdim), "amin " + msg
        )
        if dtype == torch.bool:
            continue
        for one in [None] if x.dim() == 0 else [None, 0, -1]:
            for name in ("argmax", "argmin"):
                ours = getattr(torch.ops.treduce, name)(x, one, keepdim)
                theirs = getattr(torch, name)(x, one, keepdim)
                assert_same_bits(ours, theirs, f"{name} dim={one} " + msg)


@pytest.mark.parametrize("device", FAMILY_DEVICES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.float64, torch.int32, torch.int8, torch.bool], ids=str
)
def test_prod_matches_torch(device, dtype, layout):
    for shape, dim, keepdim in cases(layout):
        if dtype.is_floating_point:  # values near 1, so that products stay finite
            x = (1 + 0.02 * make_input(shape, torch.float32, device, layout)).to(dtype)
        elif dtype == torch.bool:
            x = make_input(shape, dtype, device, layout)
        else:
            x = (make_input(shape, dtype, device, layout) % 3) - 1  # -1, 0, 1 and some 2s: wraps
        dims = reduced(x, dim)
        # torch.prod takes one dim: reduce the dims one at a time, innermost first.
        theirs = x.to(torch.float64 if dtype.is_floating_point else torch.int64)
        for dd in sorted(dims, reverse=True):
            theirs = theirs.prod(dd, keepdim=True)
        if not keepdim:
            theirs = theirs.reshape([s for i, s in enumerate(x.shape) if i not in dims])
        ours = torch.ops.treduce.prod(x, dim_list(dim), keepdim)
        msg = f"prod {dtype} {layout} {shape} dim={dim} keepdim={keepdim}"
        assert ours.dtype == (dtype if dtype.is_floating_point else torch.int64), msg
        assert ours.shape == theirs.shape, msg
        if dtype.is_floating_point:
            tol = 2e-4 if dtype == torch.float32 else 1e-12  # about K ulps at K = 33153
            want = theirs.to(dtype).double()  # overflow or underflow where the dtype does
            # Subnormal products (the expanded layout repeats values 257 times) keep no relative
            # precision: below the smallest normal only the absolute error is bounded.
            tiny = torch.finfo(dtype).tiny
            assert torch.allclose(ours.double(), want, rtol=tol, atol=tiny), msg
        else:
            assert torch.equal(ours, theirs), msg


@pytest.mark.parametrize("device", FAMILY_DEVICES)
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", INT_DTYPES + [torch.bool], ids=str)
def test_bitwise_against_numpy(device, dtype, layout):
    for shape, dim, keepdim in cases(layout):
        x = make_input(shape, dtype, device, layout)
        if dtype != torch.bool:  # every bit pattern, not only small values
            x = (x.to(torch.int64) * 2654435761 % 251).to(dtype)
        axis = tuple(reduced(x, dim))
        a = x.cpu().numpy()
        for name, uf in (
            ("bitwise_and", np.bitwise_and),
            ("bitwise_or", np.bitwise_or),
            ("bitwise_xor", np.bitwise_xor),
        ):
            ours = getattr(torch.ops.treduce, name)(x, dim_list(dim), keepdim)
            want = torch.from_numpy(np.asarray(uf.reduce(a, axis=axis, keepdims=keepdim)))
            msg = f"{name} {dtype} {layout} {shape} dim={dim} keepdim={keepdim}"
            assert ours.dtype == dtype and ours.shape == want.shape, msg
            assert torch.equal(ours.cpu(), want.to(dtype)), msg


# ------------------------------------------------------------------------------------------------
# Semantics probes


@pytest.mark.parametrize("device", FAMILY_DEVICES)
def test_nan_inf_and_ties(device):
    x = torch.tensor(
        [
            [1.0, 3.0, 3.0, float("nan"), 0.5, float("nan")],
            [-float("inf"), 2.0, -float("inf"), 2.0, 1.0, 0.0],
            [5.0, 5.0, 5.0, 5.0, 5.0, 5.0],
        ],
        device=device,
    )
    for name in ("argmax", "argmin"):
        for dim in (None, 0, 1):
            assert_same_bits(
                getattr(torch.ops.treduce, name)(x, dim),
                getattr(torch, name)(x, dim),
                f"{name} dim={dim}",
            )
    # Every value equal to the accumulator's starting value (-inf, +inf, the lowest integer).
    info = torch.iinfo(torch.int32)
    for y in (
        torch.full((3, 70), -float("inf"), device=device),
        torch.full((3, 70), float("inf"), device=device),
        torch.full((3, 70), info.min, dtype=torch.int32, device=device),
        torch.full((3, 70), info.max, dtype=torch.int32, device=device),
    ):
        for name in ("argmax", "argmin"):
            for dim in (None, 0, 1):
                assert_same_bits(
                    getattr(torch.ops.treduce, name)(y, dim),
                    getattr(torch, name)(y, dim),
                    f"{name} {y.dtype} dim={dim}",
                )
    for dim in ([], [0], [1]):
        assert_same_bits(torch.ops.treduce.amin(x, dim), torch.amin(x, dim))
        # mean: the canonical sum divided by the count, rounded once, on both devices
        # (torch's CUDA mean multiplies by a rounded 1/K instead; README)
        assert_same_bits(
            torch.ops.treduce.mean(x, dim or None), torch.mean(x.double(), dim or None).to(x.dtype)
        )
        assert_same_bits(
            torch.ops.treduce.prod(x, dim[:1] or None),
            torch.prod(x, dim[0]) if dim else torch.prod(x),
        )


@pytest.mark.parametrize("device", FAMILY_DEVICES)
@pytest.mark.parametrize(
    "dtype",
    [torch.float32, torch.bfloat16, torch.float16, torch.float64, torch.int8, torch.int32],
    ids=str,
)
def test_arg_long_rows_nan_and_ties(device, dtype):
    """argmax/argmin over long rows (the CUDA row kernel reads them as 16-byte vectors, keeps the
    best vector and searches it once; rows split over blocks): the best value in several vectors
    and at several positions of one vector, NaNs at random places, +0 and -0 ties, and views whose
    rows start off a 16-byte boundary (single elements before the first vector)."""
    g = torch.Generator().manual_seed(7)
    for rows, cols in ((64, 4099), (3, 50021), (1, 1 << 17)):
        base = torch.randint(-3, 4, (rows, cols + 3), generator=g)  # few values: many ties
        x = base.to(dtype).to(device)
        variants = [x, x[:, 1:], x[:, 3:]]
        if dtype.is_floating_point:
            z = torch.zeros(rows, cols, dtype=dtype)  # zeros of both signs only
            z[torch.rand(rows, cols, generator=g) < 0.5] = -0.0
            variants.append(z.to(device))
            y = x.clone()
            for r in range(rows):  # one to three NaNs per row, anywhere
                where = torch.randint(0, cols, (1 + r % 3,), generator=g)
                y[r, where] = float("nan")
            variants += [y, y[:, 1:]]
        for v in variants:
            for name in ("argmax", "argmin"):
                for dim in (1, None):
                    assert_same_bits(
                        getattr(torch.ops.treduce, name)(v, dim),
                        getattr(torch, name)(v, dim),
                        f"{name} {dtype} {tuple(v.shape)} dim={dim}",
                    )


@pytest.mark.parametrize("device", FAMILY_DEVICES)
def test_empty_tensors(device):
    e = torch.empty((0, 3), device=device)
    assert_same_bits(torch.ops.treduce.prod(e, [0]), torch.prod(e, 0))
    assert_same_bits(torch.ops.treduce.prod(e), torch.prod(e))
    assert_same_bits(torch.ops.treduce.mean(e, [0]), torch.mean(e, 0))
    assert_same_bits(torch.ops.treduce.mean(e), torch.mean(e))
    assert_same_bits(torch.ops.treduce.amin(e, [1]), torch.amin(e, 1))
    assert_same_bits(torch.ops.treduce.argmax(e, 1), torch.argmax(e, 1))
    for call in (
        lambda m: m.amin(e),
        lambda m: m.amin(e, [0]),
        lambda m: m.argmax(e),
        lambda m: m.argmin(e, 0),
    ):
        with pytest.raises(Exception) as theirs:
            call(torch)
        with pytest.raises(theirs.type, match=str(theirs.value).split("(")[0]):
            call(torch.ops.treduce)
    for dtype, ones in ((torch.uint8, 255), (torch.int32, -1), (torch.bool, True)):
        z = torch.empty((0, 2), dtype=dtype, device=device)
        assert torch.ops.treduce.bitwise_and(z, [0]).tolist() == [ones, ones]
        assert torch.ops.treduce.bitwise_or(z, [0]).tolist() == [0, 0]
        assert torch.ops.treduce.bitwise_xor(z).item() == 0


@pytest.mark.parametrize("device", FAMILY_DEVICES)
def test_errors_match_torch(device):
    i = torch.arange(6, device=device)
    for call in (
        lambda m: m.mean(i),
        lambda m: m.mean(i.float(), dtype=torch.int32),
        lambda m: m.argmax(torch.ones(3, dtype=torch.bool, device=device)),
        lambda m: m.argmax(i, 1),
        lambda m: m.amin(i, [0, 0]),
    ):
        with pytest.raises(Exception) as theirs:
            call(torch)
        with pytest.raises(theirs.type):
            call(torch.ops.treduce)
    assert torch.ops.treduce.mean(i, dtype=torch.float64).item() == 2.5
    with pytest.raises(TypeError, match="integer and bool"):
        torch.ops.treduce.bitwise_and(i.float())
    with pytest.raises(TypeError, match="float8"):
        torch.ops.treduce.prod(torch.ones(2, device=device).to(torch.float8_e4m3fn))


@pytest.mark.parametrize("device", FAMILY_DEVICES)
@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2], ids=str)
def test_float8_inputs(device, dtype):
    x = (torch.randn(37, 129, device=device) * 4).to(dtype)
    x[3, 5] = float("nan") if dtype == torch.float8_e4m3fn else x[3, 5]
    f = x.float()  # exact
    for dim in ([], [0], [1]):
        assert_same_bits(torch.ops.treduce.amax(x, dim), torch.amax(f, dim).to(dtype))
        assert_same_bits(torch.ops.treduce.amin(x, dim), torch.amin(f, dim).to(dtype))
        d = dim or None
        s = torch.ops.treduce.sum(x, d)
        assert s.dtype == torch.float32
        ok = torch.isnan(s) == torch.isnan(torch.sum(f, d))
        assert ok.all()
        y = x.float().nan_to_num(0.0).to(dtype)  # finite data for the value check
        assert torch.allclose(
            torch.ops.treduce.sum(y, d), torch.sum(y.double(), d).float(), rtol=1e-5, atol=1e-4
        )
        m = torch.ops.treduce.mean(y, d, dtype=torch.float64)
        assert m.dtype == torch.float64
        assert torch.allclose(m, torch.mean(y.double(), d), rtol=1e-12, atol=1e-12)


# ------------------------------------------------------------------------------------------------
# Autograd, opcheck, compile


@pytest.mark.parametrize("device", FAMILY_DEVICES)
def test_gradcheck(device):
    x = torch.randn(3, 4, 5, dtype=torch.float64, device=device, requires_grad=True)
    for dim, keepdim in (([1], False), ([0, 2], True), (None, False)):
        assert torch.autograd.gradcheck(lambda t: torch.ops.treduce.mean(t, dim, keepdim), (x,))
        assert torch.autograd.gradcheck(lambda t: torch.ops.treduce.prod(t, dim, keepdim), (x,))
        assert torch.autograd.gradgradcheck(lambda t: torch.ops.treduce.prod(t, dim, keepdim), (x,))
    distinct = (torch.randperm(60, device=device).double() / 7).reshape(3, 4, 5).requires_grad_()
    for dim in ([1], [0, 2], []):
        assert torch.autograd.gradcheck(lambda t: torch.ops.treduce.amin(t, dim), (distinct,))


@pytest.mark.parametrize("device", FAMILY_DEVICES)
def test_prod_gradient_with_zeros_like_torch(device):
    base = torch.tensor(
        [[2.0, 0.0, 3.0, 4.0], [0.0, 5.0, 0.0, 1.0], [1.5, 2.0, -1.0, 3.0]], device=device
    )
    for dim in (None, 0, 1):
        a, b = base.clone().requires_grad_(), base.clone().requires_grad_()
        (torch.ops.treduce.prod(a, None if dim is None else [dim]) * 1.5).sum().backward()
        ((torch.prod(b) if dim is None else torch.prod(b, dim)) * 1.5).sum().backward()
        assert torch.equal(a.grad, b.grad), f"dim={dim}"


@pytest.mark.parametrize("device", FAMILY_DEVICES)
def test_amin_gradient_splits_ties_like_torch(device):
    base = torch.tensor([[1.0, 1.0, 2.0], [0.0, 3.0, 0.0]], device=device)
    for dim in ([1], [0], []):
        a, b = base.clone().requires_grad_(), base.clone().requires_grad_()
        torch.ops.treduce.amin(a, dim).sum().backward()
        torch.amin(b, dim).sum().backward()
        assert torch.equal(a.grad, b.grad)


def test_not_differentiable_ops_say_so():
    x = torch.randn(4, 5, requires_grad=True)
    out = torch_reduce.argmax(x, 1)
    assert out.dtype == torch.int64 and not out.requires_grad


OPCHECK = [
    ("mean", (4, 5), ([1], False), {}),
    ("mean", (3, 4, 5), ([0, 2], True), {"dtype": torch.float64}),
    ("prod", (4, 5), ([1], False), {}),
    ("prod", (3, 4, 5), (None, False), {}),
    ("amin", (4, 5), ([0], True), {}),
    ("argmax", (4, 5), (1, False), {}),
    ("argmin", (4, 5), (None, True), {}),
]


@pytest.mark.parametrize("device", FAMILY_DEVICES)
@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("case", range(len(OPCHECK)))
def test_opcheck(device, requires_grad, case):
    op, shape, args, kwargs = OPCHECK[case]
    x = torch.randn(shape, device=device, requires_grad=requires_grad)
    torch.library.opcheck(getattr(torch.ops.treduce, op).default, (x, *args), kwargs)


@pytest.mark.parametrize("device", FAMILY_DEVICES)
def test_opcheck_bitwise(device):
    x = torch.randint(0, 100, (5, 6), device=device, dtype=torch.int32)
    for op in ("bitwise_and", "bitwise_or", "bitwise_xor"):
        torch.library.opcheck(getattr(torch.ops.treduce, op).default, (x, [1], False))


@pytest.mark.parametrize("device", FAMILY_DEVICES)
def test_compile_fullgraph_dynamic(device):
    from torch._dynamo.testing import CompileCounterWithBackend

    def f(x, w):
        h = x * w
        return (
            torch_reduce.mean(h, 1).sum()
            + torch_reduce.prod(h[:, :3], 1).sum()
            + torch_reduce.amin(h, 0).sum()
            + torch_reduce.argmax(h, 1).sum()
            + torch_reduce.argmin(h).float()
        )

    torch._dynamo.reset()
    counter = CompileCounterWithBackend("inductor")
    g = torch.compile(f, backend=counter, fullgraph=True, dynamic=True)
    for rows in (6, 11, 20):
        x = torch.randn(rows, 8, device=device, requires_grad=True)
        w = torch.randn(8, device=device, requires_grad=True)
        out = g(x, w)
        out.backward()
        x2, w2 = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
        h = x2 * w2
        ref = (
            h.mean(1).sum()
            + h[:, :3].prod(1).sum()
            + h.amin(0).sum()
            + h.argmax(1).sum()
            + h.argmin().float()
        )
        ref.backward()
        assert torch.allclose(out, ref, rtol=1e-4, atol=1e-4)
        assert torch.allclose(x.grad, x2.grad, rtol=1e-4, atol=1e-4)
    assert counter.frame_count == 1


def _extreme_model(vals, kmax):
    """The CPU backend's max/min order for a power-of-two number of whole leaves inside one chunk:
    a leaf's element j goes to accumulator j % 8, the eight meet in ((a0 a1) (a2 a3)) ((a4 a5)
    (a6 a7)), leaves meet pairwise; combine(a, b) takes b when a is not NaN and b is better or NaN,
    so ties keep a (which of +0 and -0 comes out depends on that order alone)."""

    def comb(a, b):
        better = b > a if kmax else b < a
        return b if not math.isnan(a) and (better or math.isnan(b)) else a

    ident = -math.inf if kmax else math.inf
    leaves = []
    for i in range(0, len(vals), 64):
        a = [ident] * 8
        for j, v in enumerate(vals[i : i + 64]):
            a[j % 8] = comb(a[j % 8], v)
        leaves.append(
            comb(comb(comb(a[0], a[1]), comb(a[2], a[3])), comb(comb(a[4], a[5]), comb(a[6], a[7])))
        )
    while len(leaves) > 1:
        leaves = [comb(leaves[k], leaves[k + 1]) for k in range(0, len(leaves), 2)]
    return leaves[0]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("kmax", [True, False], ids=["amax", "amin"])
def test_cpu_extreme_zero_ties_and_nan_follow_the_order(dtype, kmax):
    """The CPU max/min fold (SSE lanes: MAXPS/MINPS while no NaN is seen, the exact selects
    again for a batch that met one) gives the scalar order's bits: the sign of a tied zero, NaN.
    Rows of 16 whole leaves, each row a different mix of +0, -0 and worse values."""
    g = torch.Generator().manual_seed(11)
    worse = [-1.0, -2.5] if kmax else [1.0, 2.5]
    pool = torch.tensor([0.0, -0.0] + worse, dtype=torch.float64)
    rows = pool[torch.randint(0, 4, (24, 1024), generator=g)]
    rows[3, 700] = float("nan")  # one row with a NaN: the exact pass
    rows[5] = -0.0
    rows[6] = 0.0
    x = rows.to(dtype)
    op = torch_reduce.amax if kmax else torch_reduce.amin
    got = op(x, 1)
    for i in range(x.shape[0]):
        want = _extreme_model([float(v) for v in x[i].tolist()], kmax)
        g_i = float(got[i])
        if math.isnan(want):
            assert math.isnan(g_i), i
        else:
            assert g_i == want and math.copysign(1, g_i) == math.copysign(1, want), (i, g_i, want)
    full = op(x[0].contiguous(), ())
    want = _extreme_model([float(v) for v in x[0].tolist()], kmax)
    assert math.copysign(1, float(full)) == math.copysign(1, want) and float(full) == want


def _arg_inputs(n, dtype, seed):
    """Contiguous runs for the CPU's argmax/argmin lanes: many ties, tied zeros of both signs,
    infinities, and NaN where a lane, a batch of eight leaves (512 elements) or a chunk (16384)
    begins or ends."""
    g = torch.Generator().manual_seed(seed)
    pick = lambda pool: torch.tensor(pool, dtype=torch.float64)[  # noqa: E731
        torch.randint(0, len(pool), (n,), generator=g)
    ]
    out = {
        "ties": torch.randint(-3, 4, (n,), generator=g).double(),
        "zeros": pick([0.0, -0.0, -1.0, 1.0]),
        "all -inf": torch.full((n,), -math.inf, dtype=torch.float64),
        "all +inf": torch.full((n,), math.inf, dtype=torch.float64),
        "inf": pick([math.inf, -math.inf, 0.0, 5.0]),
    }
    for at in {0, n - 1, n // 2, 7, 8, 15, 16, 511, 512, 513, 16383, 16384, 16385}:
        if at < n:
            x = torch.randn(n, generator=g, dtype=torch.float64)
            x[at] = math.nan
            if at + 100 < n:
                x[at + 100] = math.nan  # a later NaN: the first one wins
            out[f"nan at {at}"] = x
    return {k: v.to(dtype) for k, v in out.items()}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=str)
@pytest.mark.parametrize("n", [1, 7, 16, 511, 512, 513, 4096, 16383, 16384, 16385, 100003])
def test_arg_lanes_match_torch(dtype, n):
    """argmax/argmin of contiguous float32/float64 on the CPU, where whole batches of eight
    leaves go through vector lanes that each keep their first best index: torch's index on every
    input above, over everything and over rows."""
    for name, x in _arg_inputs(n, dtype, seed=n).items():
        for op in ("argmax", "argmin"):
            ours, theirs = getattr(torch_reduce, op)(x), getattr(torch, op)(x)
            assert ours.item() == theirs.item(), (op, name, ours.item(), theirs.item())
            if n % 4 == 0:
                rows = x.view(4, -1)
                ours, theirs = getattr(torch_reduce, op)(rows, 1), getattr(torch, op)(rows, 1)
                assert torch.equal(ours, theirs), (op, name, "rows")


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(1, 20000),
    pool=st.sampled_from(["randn", "ties", "zeros", "nan"]),
    dtype=st.sampled_from([torch.float32, torch.float64]),
    seed=st.integers(0, 2**32 - 1),
)
def test_arg_lanes_any_run(n, pool, dtype, seed):
    """Drawn lengths and values (ties from a few integers, zeros of both signs, rare NaN):
    argmax and argmin give torch's index."""
    g = np.random.default_rng(seed)
    if pool == "ties":
        x = g.integers(-2, 3, n).astype(np.float64)
    elif pool == "zeros":
        x = g.choice([0.0, -0.0, -1.0], n)
    else:
        x = g.standard_normal(n)
        if pool == "nan":
            x[g.random(n) < 1 / 2000] = np.nan
    t = torch.from_numpy(x).to(dtype)
    for op in ("argmax", "argmin"):
        assert getattr(torch_reduce, op)(t).item() == getattr(torch, op)(t).item(), op


@settings(max_examples=120, deadline=None)
@given(
    leaves=st.sampled_from([1, 2, 4, 8, 16, 32, 64, 256]),
    pool=st.sampled_from(["randn", "zeros", "zeros and worse", "inf", "nan"]),
    dtype=st.sampled_from([torch.float32, torch.float64, torch.bfloat16]),
    kmax=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_cpu_extreme_lanes_follow_the_order(leaves, pool, dtype, kmax, seed):
    """amax/amin of contiguous runs (rows) of float32, float64 and bfloat16 on the CPU, whose
    whole batches of eight leaves go through vector lanes in any order where that gives the in-order bits (no NaN, a nonzero
    result) and the ordered fold elsewhere: the bits of _extreme_model, the sign of a tied zero
    included. Eight rows a draw (one for the longest runs), each a run of its own."""
    g = np.random.default_rng(seed)
    rows, n = (1 if leaves > 64 else 8), 64 * leaves
    worse = -1.0 if kmax else 1.0
    shape = (rows, n)
    x = {
        "randn": lambda: g.standard_normal(shape),
        "zeros": lambda: g.choice([0.0, -0.0], shape),
        "zeros and worse": lambda: g.choice([0.0, -0.0, worse, 2 * worse], shape),
        "inf": lambda: g.choice([np.inf, -np.inf, 1.0, -0.0], shape),
        "nan": lambda: np.where(g.random(shape) < 0.002, np.nan, g.standard_normal(shape)),
    }[pool]()
    t = torch.from_numpy(x).to(dtype)
    got = (torch_reduce.amax if kmax else torch_reduce.amin)(t, 1).tolist()
    for i in range(rows):
        want = _extreme_model([float(v) for v in t[i].tolist()], kmax)
        if math.isnan(want):
            assert math.isnan(got[i]), i
        else:
            same_sign = math.copysign(1, got[i]) == math.copysign(1, want)
            assert got[i] == want and same_sign, (i, got[i], want)
