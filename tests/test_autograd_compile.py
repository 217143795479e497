"""Autograd (gradcheck, ties), opcheck, and torch.compile (fullgraph, dynamic, forward+backward)."""

import pytest
import torch
from conftest import DEVICES, make_input
from torch._dynamo.testing import CompileCounterWithBackend

import torch_reduce


def distinct_f64(shape, device):
    """float64 values without ties, so amax is differentiable at them."""
    n = 1
    for s in shape:
        n *= s
    return (
        (
            torch.randperm(n, device=device).double() / n
            + 0.01 * torch.rand(n, device=device, dtype=torch.float64)
        )
        .reshape(shape)
        .requires_grad_()
    )


@pytest.mark.parametrize("device", DEVICES)
def test_gradcheck_sum(device):
    for shape, dim, keepdim in [
        ((4, 5), [1], False),
        ((4, 5), [0], True),
        ((3, 4, 5), [0, 2], False),
        ((3, 4, 5), None, False),
        ((6,), [], True),
        ((), None, False),
    ]:
        x = torch.randn(shape, dtype=torch.float64, device=device, requires_grad=True)
        f = lambda t: torch.ops.treduce.sum(t, dim, keepdim)  # noqa: E731
        assert torch.autograd.gradcheck(f, (x,))
        assert torch.autograd.gradgradcheck(f, (x,))


@pytest.mark.parametrize("device", DEVICES)
def test_gradcheck_amax(device):
    for shape, dim, keepdim in [
        ((4, 5), [1], False),
        ((4, 5), [0], True),
        ((3, 4, 5), [0, 2], False),
        ((3, 4, 5), [], False),
        ((7,), [0], True),
    ]:
        x = distinct_f64(shape, device)
        f = lambda t: torch.ops.treduce.amax(t, dim, keepdim)  # noqa: E731
        assert torch.autograd.gradcheck(f, (x,))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("keepdim", [False, True])
def test_amax_gradient_splits_ties_like_torch(device, keepdim):
    base = torch.tensor(
        [[1.0, 3.0, 3.0, 2.0], [5.0, 5.0, 5.0, 0.0], [float("nan"), 1.0, 2.0, 3.0]], device=device
    )
    for dim in ([1], [0], [], [0, 1]):
        g = torch.randn_like(torch.amax(base, dim, keepdim))
        a = base.clone().requires_grad_()
        b = base.clone().requires_grad_()
        torch.ops.treduce.amax(a, dim, keepdim).backward(g)
        torch.amax(b, dim, keepdim).backward(g)
        same = (a.grad == b.grad) | (a.grad.isnan() & b.grad.isnan())
        assert same.all(), f"dim={dim}: {a.grad} vs {b.grad}"


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
def test_sum_backward_dtype_and_shape(device, dtype):
    x = make_input((4, 6, 5), dtype, device).requires_grad_()
    out = torch_reduce.sum(x, (0, 2), dtype=torch.float64)
    g = torch.randn_like(out)
    out.backward(g)
    assert x.grad.dtype == dtype and x.grad.shape == x.shape
    assert torch.equal(x.grad, g[None, :, None].expand(x.shape).to(dtype))


@pytest.mark.parametrize("device", DEVICES)
def test_loss_aggregation_training_step(device):
    torch.manual_seed(0)
    model = torch.nn.Linear(16, 4).to(device)
    ref = torch.nn.Linear(16, 4).to(device)
    ref.load_state_dict(model.state_dict())
    x, y = torch.randn(64, 16, device=device), torch.randn(64, 4, device=device)
    for m, reduce in ((model, torch_reduce.sum), (ref, torch.sum)):
        per_sample = ((m(x) - y) ** 2).mean(1)
        reduce(per_sample).backward()
    for p, q in zip(model.parameters(), ref.parameters()):
        assert torch.allclose(p.grad, q.grad, rtol=1e-5, atol=1e-6)


OPCHECK_CASES = [
    ("sum", (4, 5), ([1], False), {}),
    ("sum", (4, 5, 3), ([0, 2], True), {}),
    ("sum", (6, 7), (None, False), {"dtype": torch.float64}),
    ("sum", (), (None, False), {}),
    ("amax", (4, 5), ([1], False), {}),
    ("amax", (3, 4, 5), ([0, -1], True), {}),
    ("amax", (8,), ([], False), {}),
]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("requires_grad", [False, True])
@pytest.mark.parametrize("case", range(len(OPCHECK_CASES)))
def test_opcheck(device, requires_grad, case):
    op, shape, args, kwargs = OPCHECK_CASES[case]
    x = torch.randn(shape, device=device, requires_grad=requires_grad)
    torch.library.opcheck(getattr(torch.ops.treduce, op).default, (x, *args), kwargs)


@pytest.mark.parametrize("device", DEVICES)
def test_opcheck_integer_input(device):
    x = torch.randint(-5, 5, (5, 6), device=device, dtype=torch.int32)
    torch.library.opcheck(torch.ops.treduce.sum.default, (x, [1], False))
    torch.library.opcheck(torch.ops.treduce.amax.default, (x, [0], True))


def _loss(x, w):
    h = x * w
    return torch_reduce.sum(h, dim=1).pow(2).mean() + torch_reduce.amax(h, dim=(0,)).sum()


@pytest.mark.parametrize("device", DEVICES)
def test_compile_fullgraph_dynamic_forward_backward(device):
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("inductor")
    compiled = torch.compile(_loss, backend=counter, fullgraph=True, dynamic=True)
    for rows in (8, 13, 32, 57):
        x = torch.randn(rows, 24, device=device, requires_grad=True)
        w = torch.randn(24, device=device, requires_grad=True)
        out = compiled(x, w)
        out.backward()
        x2, w2 = x.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
        ref = (x2 * w2).sum(1).pow(2).mean() + (x2 * w2).amax(0).sum()
        ref.backward()
        assert torch.allclose(out, ref, rtol=1e-4, atol=1e-4)
        assert torch.allclose(x.grad, x2.grad, rtol=1e-4, atol=1e-4)
        assert torch.allclose(w.grad, w2.grad, rtol=1e-4, atol=1e-4)
    assert counter.frame_count == 1, f"recompiled: {counter.frame_count} frames for 4 sizes"


@pytest.mark.parametrize("device", DEVICES)
def test_compile_sees_our_ops(device):
    """The compiled graph calls treduce, not a decomposition into aten.sum."""
    from torch._dynamo.testing import EagerAndRecordGraphs

    torch._dynamo.reset()
    backend = EagerAndRecordGraphs()
    f = torch.compile(
        lambda t: torch_reduce.sum(t, 0, dtype=torch.float64) + torch_reduce.amax(t),
        backend=backend,
        fullgraph=True,
        dynamic=True,
    )
    x = torch.randn(9, 5, device=device)
    f(x)
    code = backend.graphs[0].code
    assert "treduce.sum" in code and "treduce.amax" in code


@pytest.mark.parametrize("device", DEVICES)
def test_gradients_match_torch_on_drawn_calls(device):
    """Property-based: the gradient of (op(x) * w).sum() against torch's, for drawn ops (sum,
    mean, prod, amax, amin), float dtypes, shapes (empty ones included), layouts, dims, keepdim
    and dtype=, with ties (for the extremes' split) and zeros (for prod's) drawn too; the same
    dtype and shape, values to a tolerance by dtype."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    tol = {torch.float64: 1e-10, torch.float32: 1e-4, torch.bfloat16: 2e-2, torch.float16: 4e-3}

    @settings(max_examples=200, deadline=None, database=None)
    @given(data=st.data())
    def prop(data):
        op = data.draw(st.sampled_from(["sum", "mean", "prod", "amax", "amin"]), "op")
        dtype = data.draw(st.sampled_from(list(tol)), "dtype")
        shape = data.draw(st.lists(st.integers(0 if op in ("sum", "mean") else 1, 5), max_size=3))
        layout = data.draw(st.sampled_from(["contiguous", "transposed", "sliced"]), "layout")
        ties = data.draw(st.booleans(), "ties")
        g = torch.Generator().manual_seed(data.draw(st.integers(0, 2**16), "seed"))
        full = list(shape)
        if layout == "sliced" and full:
            full[-1] *= 2
        base = torch.randn(full[::-1] if layout == "transposed" else full, generator=g)
        if ties:  # a few values only: ties for the extremes, zeros for prod
            base = base.round()
        base = base.to(device, dtype)
        if layout == "transposed":
            base = base.permute(list(reversed(range(len(shape)))))
        elif layout == "sliced" and full:
            base = base[..., ::2]
        nd = len(shape)
        if op == "prod":  # torch.prod takes one dim or none
            dim = data.draw(st.one_of(st.none(), st.integers(-max(nd, 1), max(nd, 1) - 1)))
        else:
            dim = data.draw(
                st.one_of(st.none(), st.lists(st.integers(0, max(nd, 1) - 1), unique=True))
            )
        keepdim = data.draw(st.booleans(), "keepdim")
        kw = {}
        if op in ("sum", "mean") and data.draw(st.booleans(), "dtype="):
            kw["dtype"] = torch.float64
        if op in ("amax", "amin") and dim is None:
            dim = []
        ours_x = base.clone().requires_grad_()
        ref_x = base.clone().requires_grad_()
        if op == "prod" and dim is None:
            out, ref = torch_reduce.prod(ours_x), torch.prod(ref_x)
        else:
            out = getattr(torch_reduce, op)(ours_x, dim, keepdim, **kw)
            ref = getattr(torch, op)(ref_x, dim, keepdim, **kw)
        w = torch.randn(ref.shape, generator=g).to(device, ref.dtype)
        (out * w).sum().backward()
        (ref * w).sum().backward()
        msg = (op, dtype, shape, layout, dim, keepdim, kw, ties)
        assert ours_x.grad.dtype == ref_x.grad.dtype and ours_x.grad.shape == base.shape, msg
        torch.testing.assert_close(
            ours_x.grad, ref_x.grad, rtol=tol[dtype], atol=tol[dtype], equal_nan=True, msg=str(msg)
        )

    prop()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("op", ["sum", "mean", "prod", "amax", "argmin", "bitwise_xor"])
def test_compiled_calls_give_eagers_bits(op, device):
    """Property-based: a drawn call (fuzz_cases: dtypes, layouts, dims, keepdim, dtype=) compiled
    whole (fullgraph, static shapes) gives eager's dtype, shape and bits (calls that raise
    eagerly are left out: Dynamo wraps the exception)."""
    from fuzz_cases import _error_of, bits, calls, run
    from hypothesis import HealthCheck, given, settings

    @settings(
        max_examples=30,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(call=calls(op, device))
    def prop(call):
        if _error_of(lambda: run(call, call.x)) is not None:
            return
        want = run(call, call.x)
        torch._dynamo.reset()
        got = torch.compile(lambda t: run(call, t), fullgraph=True, dynamic=False)(call.x)
        assert got.dtype == want.dtype and got.shape == want.shape, (call, got, want)
        assert torch.equal(bits(got), bits(want)), (call, got, want)

    prop()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("fp8", [torch.float8_e4m3fn, torch.float8_e5m2], ids=str)
@pytest.mark.parametrize(
    "dtype", [torch.int16, torch.int64, torch.float64, torch.float32, torch.bfloat16], ids=str
)
def test_compiled_float8_sums_with_dtype_give_eagers_bits(dtype, fp8, device):
    """float8 inputs with dtype= compile (fullgraph) and give eager's bits, a 0-d input too,
    with dtype= passed to the op (torch.compile) and as a conversion (torch.export, then
    Inductor: its CUDA kernels have no direct float8 cast to the integers or float64, and it folds
    a chain of floating casts into one, so the conversion keeps a float32 step)."""

    class Sum(torch.nn.Module):
        def __init__(self, dim):
            super().__init__()
            self.dim = dim

        def forward(self, t):
            return torch_reduce.sum(t, self.dim, dtype=dtype)

    for shape, dim in (((6, 40), None), ((6, 40), [1]), ((), None)):
        x = (torch.randn(shape, device=device) * 4).to(fp8)
        want = torch_reduce.sum(x, dim, dtype=dtype)
        torch._dynamo.reset()
        got = torch.compile(
            lambda t, d=dim: torch_reduce.sum(t, d, dtype=dtype), fullgraph=True, dynamic=False
        )(x)
        exported = torch.export.export(Sum(dim), (x,)).module()
        torch._dynamo.reset()
        got_exported = torch.compile(exported, fullgraph=True, dynamic=False)(x)
        for g in (got, got_exported):
            assert g.dtype == want.dtype and g.shape == want.shape, (shape, dim)
            assert torch.equal(g.cpu(), want.cpu()), (shape, dim, g, want)


def test_compiled_dtype_calls_pass_dtype_to_the_op():
    """Under torch.compile a dtype= call reaches the op with dtype= (no conversion kernel before
    it); only torch.export records the conversion (torch 2.11's AOTInductor, torch_reduce/ops.py),
    though Dynamo answers True for torch.compiler.is_exporting() while it traces."""
    seen = []

    def backend(gm, example_inputs):
        seen.extend(n for n in gm.graph.nodes if n.op == "call_function")
        return gm.forward

    x = torch.randn(6, 40, dtype=torch.bfloat16)
    torch._dynamo.reset()
    got = torch.compile(
        lambda t: torch_reduce.sum(t, 1, dtype=torch.float32), backend=backend, fullgraph=True
    )(x)
    ours = [n for n in seen if getattr(n.target, "namespace", None) == "treduce"]
    assert ours, [n.target for n in seen]
    assert all(n.kwargs.get("dtype") == torch.float32 for n in ours), [n.kwargs for n in ours]
    assert torch.equal(got, torch_reduce.sum(x, 1, dtype=torch.float32))
