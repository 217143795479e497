"""torch.export and AOTInductor: a module that calls every treduce op, exported with a dynamic batch
dim, compiled into an AOTInductor package, loaded and run from Python and checked against torch.
The same kind of package is loaded from C++ by examples/cpp/aoti_run.cpp (scripts/cpp_check.sh)."""

import pytest
import torch
from conftest import ALL_DTYPES, DEVICES, LAYOUTS, assert_same_bits, make_input
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

import torch_reduce

TREDUCE_OPS = set(torch_reduce._fast.OPS)  # the op list (csrc/op_list.h)


class Stats(torch.nn.Module):
    """Every op once on a (batch, 24) float32 input, over and along the batch, and dtype= of each
    kind: float64 from float32, float32 from int32, a narrower integer that wraps, bool."""

    def forward(self, x):
        bits = (x * 8).to(torch.int32)
        return (
            torch_reduce.sum(x, 1),
            torch_reduce.mean(x, (0,), keepdim=True, dtype=torch.float64),
            torch_reduce.prod(x[:, :6] * 0.25 + 1, 1),
            torch_reduce.amax(x, 1),
            torch_reduce.amin(x, 0),
            torch_reduce.argmax(x, 1),
            torch_reduce.argmin(x),
            torch_reduce.bitwise_and(bits, 1),
            torch_reduce.bitwise_or(bits, 0),
            torch_reduce.bitwise_xor(bits),
            torch_reduce.sum(x, 1, dtype=torch.float64),
            torch_reduce.prod(bits.to(torch.int8), 1, dtype=torch.int32),
            torch_reduce.sum(bits > 0, 0, dtype=torch.bool),
            torch_reduce.mean(bits, 1, dtype=torch.float32),
        )


def reference(x):
    """Stats in torch, each with how to compare: float sums against float64 with a tolerance, the
    rest exactly (dtype included)."""
    x64 = x.double()
    bits = (x * 8).to(torch.int32)

    def fold(op, t, dim):
        out = t.select(dim, 0)
        for i in range(1, t.shape[dim]):
            out = op(out, t.select(dim, i))
        return out

    return [
        (x64.sum(1), torch.float32),
        (x64.mean(0, keepdim=True), torch.float64),
        ((x64[:, :6] * 0.25 + 1).prod(1), torch.float32),
        (x.amax(1), None),
        (x.amin(0), None),
        (x.argmax(1), None),
        (x.argmin(), None),
        (fold(torch.bitwise_and, bits, 1), None),
        (fold(torch.bitwise_or, bits, 0), None),
        (fold(torch.bitwise_xor, bits.flatten(), 0), None),
        (x64.sum(1), torch.float64),
        (torch.prod(bits.to(torch.int8), 1, dtype=torch.int32), None),
        (torch.sum(bits > 0, 0, dtype=torch.bool), None),
        (bits.double().mean(1), torch.float32),
    ]


def check(outputs, x):
    want = reference(x)
    assert len(outputs) == len(want)
    for i, (got, (ref, float_dtype)) in enumerate(zip(outputs, want)):
        assert got.device == x.device, i
        if float_dtype is None:
            assert got.dtype == ref.dtype and torch.equal(got, ref), i
        else:
            assert got.dtype == float_dtype and got.shape == ref.shape, (i, got.dtype)
            tol = 1e-12 if float_dtype == torch.float64 else 1e-5
            torch.testing.assert_close(got.double(), ref.double(), rtol=tol, atol=tol)


def export(device):
    x = torch.randn(8, 24, device=device)
    batch = torch.export.Dim("batch", min=2)
    return torch.export.export(Stats(), (x,), dynamic_shapes=({0: batch},))


@pytest.mark.parametrize("device", DEVICES)
def test_export_keeps_treduce_ops_and_a_dynamic_batch(device):
    program = export(device)
    called = {
        node.target._opname
        for node in program.graph.nodes
        if node.op == "call_function" and getattr(node.target, "namespace", None) == "treduce"
    }
    assert called == TREDUCE_OPS
    module = program.module()
    for batch in (2, 5, 300):
        x = torch.randn(batch, 24, device=device)
        check(module(x), x)


@pytest.mark.parametrize("device", DEVICES)
def test_aoti_package_runs_with_any_batch(device, tmp_path):
    path = str(tmp_path / "stats.pt2")
    torch._inductor.aoti_compile_and_package(export(device), package_path=path)
    runner = torch._inductor.aoti_load_package(path)
    for batch in (2, 9, 1000):
        x = torch.randn(batch, 24, device=device)
        check(runner(x), x)


class DtypeCall(torch.nn.Module):
    def __init__(self, op, dim, keepdim, dtype):
        super().__init__()
        self.op, self.dim, self.keepdim, self.dtype = op, dim, keepdim, dtype

    def forward(self, x):
        return getattr(torch_reduce, self.op)(x, self.dim, self.keepdim, dtype=self.dtype)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    op=st.sampled_from(["sum", "mean", "prod"]),
    in_dtype=st.sampled_from(ALL_DTYPES),
    dtype=st.sampled_from(ALL_DTYPES),
    shape=st.lists(st.integers(1, 9), min_size=1, max_size=3),
    layout=st.sampled_from(LAYOUTS),
    dim_pick=st.integers(0, 3),
    keepdim=st.booleans(),
)
def test_exported_dtype_calls_match_eager_bits(
    op, in_dtype, dtype, shape, layout, dim_pick, keepdim
):
    """An exported call with dtype= (recorded as a conversion while torch's AOTInductor passes
    dtype enums shifted, see torch_reduce/ops.py) gives eager's dtype, shape and bits."""
    x = make_input(shape, in_dtype, "cpu", layout)
    dim = None if dim_pick == len(shape) or dim_pick > len(shape) else dim_pick
    module = DtypeCall(op, dim, keepdim, dtype)
    try:
        want = module(x)
    except (RuntimeError, TypeError) as e:  # an invalid pair raises while exporting, as eagerly
        event("raises")
        with pytest.raises(type(e)):
            torch.export.export(module, (x,))
        return
    event("exported")
    program = torch.export.export(module, (x,))
    if torch_reduce.ops._EXPORT_DTYPE_AS_CONVERSION:
        calls = [n for n in program.graph.nodes if n.op == "call_function"]
        ours = [n for n in calls if getattr(n.target, "namespace", None) == "treduce"]
        assert len(ours) == 1 and ours[0].kwargs.get("dtype") is None, program.graph
    assert_same_bits(program.module()(x), want, f"{op}({in_dtype}, dtype={dtype})")
