"""DTensor inputs (torch_reduce.distributed): every op on 1-D meshes of 2 and 4 CPU ranks and a
2 x 2 mesh (gloo, loopback), spawned by the test itself, against the single-device result.

Placements: Replicate, Shard on a kept dim, Shard on a reduced dim (even, uneven and empty
shards), nested sharding, a Partial(sum) input to sum; the placements of the results; float32
and bfloat16 sums and means over a sharded dim with the single-device bits on 1-4 ranks (D1-D4
data); autograd through a sharded sum.
"""

import faulthandler
import os
import queue
import socket
import tempfile
import time
import traceback
import warnings
from fractions import Fraction

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from conftest import data_sets

pytestmark = pytest.mark.skipif(not dist.is_available(), reason="torch.distributed unavailable")

WORLD_SIZES = [2, 4]
SHAPES = [(8, 6), (7, 5), (3, 9, 4)]  # (7, 5) and 9 shard unevenly over 2 and 4 ranks
TIMEOUT_S = 300


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _close(got: torch.Tensor, want: torch.Tensor, op: str) -> bool:
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    if not got.is_floating_point():
        return torch.equal(got, want)
    return torch.allclose(got.double(), want.double(), rtol=1e-5, atol=1e-6, equal_nan=True)


def _worker(rank: int, world: int) -> None:
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor

    import torch_reduce

    mesh = init_device_mesh("cpu", (world,))
    # the wrappers register the sharding rules on the first DTensor they see
    first = torch_reduce.sum(distribute_tensor(torch.ones(world, 3), mesh, [Shard(0)]), [0])
    assert torch.equal(first.full_tensor(), torch.full((3,), float(world)))
    from torch_reduce.distributed import ReducePartial

    gen = torch.Generator().manual_seed(7)
    for shape in SHAPES:
        x = torch.randn(shape, generator=gen)
        xi = torch.randint(-20, 20, shape, generator=gen)
        x[0, 1] = float("nan") if len(shape) == 2 else x[0, 1]
        nd = len(shape)
        for placement in [Replicate()] + [Shard(d) for d in range(nd)]:
            dx = distribute_tensor(x, mesh, [placement])
            di = distribute_tensor(xi, mesh, [placement])
            for dims in [None, [0], [nd - 1], [0, nd - 1]]:
                for keepdim in (False, True):
                    cases = [
                        ("sum", dx, x, {}),
                        ("mean", dx, x, {}),
                        ("prod", dx, x, {}),
                        ("amax", dx, x, {}),
                        ("amin", dx, x, {}),
                        ("sum", di, xi, {}),
                        ("sum", di, xi, {"dtype": torch.float64}),
                        ("prod", di, xi, {}),
                        ("bitwise_and", di, xi, {}),
                        ("bitwise_or", di, xi, {}),
                        ("bitwise_xor", di, xi, {}),
                    ]
                    for op, d_in, t_in, kw in cases:
                        fn = getattr(torch_reduce, op)
                        got = fn(d_in, dims, keepdim, **kw)
                        assert isinstance(got, DTensor), (op, placement, dims)
                        want = fn(t_in, dims, keepdim, **kw)
                        full = got.full_tensor()
                        assert _close(full, want, op), (op, shape, placement, dims, keepdim)
                        red = range(nd) if dims is None else [d % nd for d in dims]
                        p = got.placements[0]
                        sd = placement.dim if isinstance(placement, Shard) else None
                        empty = sd is not None and any(
                            Shard.local_shard_size_and_offset(shape[sd], world, r)[0] == 0
                            for r in range(world)
                        )
                        if sd is not None and shape[sd] < world:
                            # DTensor takes no strategy that shards a dim over more ranks
                            # than it has elements: the dim is replicated first
                            assert isinstance(p, Replicate), (op, p)
                        elif sd in red and empty and op in ("amax", "amin"):
                            # no maximum of an empty shard: the dim is replicated first
                            assert isinstance(p, Replicate), (op, p)
                        elif sd in red and op in ("sum", "mean") and t_in.dtype == torch.float32:
                            # float64 partials, combined and rounded once (wide_sum)
                            assert isinstance(p, Replicate), (op, p)
                        elif sd in red and op == "prod" and t_in.is_floating_point():
                            # float products gather the dim (distributed._float_prod)
                            assert isinstance(p, Replicate), (op, p)
                        elif sd in red:
                            assert isinstance(p, ReducePartial) or (
                                op == "sum" and isinstance(p, Partial)
                            ), (op, p, shape, placement, dims, keepdim, kw)
                        elif isinstance(placement, Shard):
                            assert isinstance(p, Shard), (op, p)
                        else:
                            assert isinstance(p, Replicate), (op, p)
            for op in ("argmax", "argmin"):
                for d in [None] + list(range(nd)):
                    got = getattr(torch_reduce, op)(dx if op == "argmax" else di, d)
                    t = x if op == "argmax" else xi
                    want = getattr(torch, op)(t, d)
                    assert torch.equal(got.full_tensor(), want), (op, shape, placement, d)
    # A Partial(sum) input to sum: the sum of the partial sums.
    parts = torch.arange(12, dtype=torch.float64).reshape(3, 4) * (rank + 1)
    dp = DTensor.from_local(parts, mesh, [Partial("sum")])
    got = torch_reduce.sum(dp, [1]).full_tensor()
    want = (torch.arange(12, dtype=torch.float64).reshape(3, 4) * sum(range(1, world + 1))).sum(1)
    assert torch.equal(got, want), (got, want)
    # Sharding over kept dims gives the single-device bits.
    big = torch.randn(16, 1000, generator=gen)
    for op in ("sum", "mean"):
        got = getattr(torch_reduce, op)(distribute_tensor(big, mesh, [Shard(0)]), [1])
        assert torch.equal(got.full_tensor(), getattr(torch_reduce, op)(big, [1])), op
    # Float products over the sharded dim have the single-device value where a rank's own
    # product would overflow: finite when another rank's brings it back, zero when another rank
    # holds a zero (rounded partials gave inf and NaN); integer products still combine.
    for tail, want in ((1e-300, 1e100), (0.0, 0.0)):
        v = torch.tensor([1e200, 1e200] + [1.0] * (2 * world - 3) + [tail], dtype=torch.float64)
        for dims in (None, [0]):
            got = torch_reduce.prod(distribute_tensor(v, mesh, [Shard(0)]), dims).full_tensor()
            assert torch.equal(got, torch_reduce.prod(v, dims)), (got, want)
            assert got.item() == pytest.approx(want, rel=1e-12), got
    # A sum whose ranks' own sums overflow float16 where the whole does not: integers summed to
    # float16 (dtype= converts each, then the float64 partials combine; rounded per-rank
    # partials gave inf - inf = NaN).
    big16 = torch.tensor([40000] * world + [-40000] * world)
    for op in ("sum", "mean"):
        got = getattr(torch_reduce, op)(
            distribute_tensor(big16, mesh, [Shard(0)]), [0], dtype=torch.float16
        ).full_tensor()
        assert torch.equal(got, torch.zeros((), dtype=torch.float16)), (op, got)
    vi = torch.arange(1, 2 * world + 1)
    got = torch_reduce.prod(distribute_tensor(vi, mesh, [Shard(0)]), [0])
    assert got.full_tensor().item() == torch.prod(vi).item()
    assert isinstance(got.placements[0], ReducePartial), got.placements
    # NaN on one rank only: amax is NaN, as torch's.
    v = torch.zeros(world * 3)
    v[4] = float("nan")
    got = torch_reduce.amax(distribute_tensor(v, mesh, [Shard(0)]))
    assert torch.isnan(got.full_tensor()), got
    # argmax/argmin over the sharded dim: ties across ranks take the first index, a NaN on
    # a later rank wins, as torch's; the result is Replicate (pairs, not the whole input).
    n = 5 * world + 2
    t = torch.zeros(3, n)
    t[0, [1, n - 1]] = 7.0  # a tie on the first and the last rank
    t[1, n - 2] = float("nan")
    t[1, 0] = 9.0
    t[2] = torch.arange(n, 0, -1.0)
    dt = distribute_tensor(t, mesh, [Shard(1)])
    for op in ("argmax", "argmin"):
        for keepdim in (False, True):
            got = getattr(torch_reduce, op)(dt, 1, keepdim)
            assert isinstance(got.placements[0], Replicate), got.placements
            assert torch.equal(got.full_tensor(), getattr(torch, op)(t, 1, keepdim)), op
        got = getattr(torch_reduce, op)(distribute_tensor(t, mesh, [Shard(0)]), 1)
        assert torch.equal(got.full_tensor(), getattr(torch, op)(t, 1)), op
    # Autograd through a sum over the sharded dim.
    w = torch.randn(6, 5, generator=gen, requires_grad=True)
    dw = distribute_tensor(w.detach(), mesh, [Shard(0)]).requires_grad_()
    scale = distribute_tensor(torch.arange(5.0), mesh, [Replicate()])
    (torch_reduce.sum(dw, [0]) * scale).sum().full_tensor().backward()
    assert torch.equal(dw.grad.full_tensor(), torch.arange(5.0).expand(6, 5)), dw.grad


def _worker_2d(rank: int, world: int) -> None:
    """A 2 x 2 mesh: placements on both mesh dims, against the single-device result."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Replicate, Shard, distribute_tensor

    import torch_reduce

    mesh = init_device_mesh("cpu", (2, 2))
    gen = torch.Generator().manual_seed(11)
    x = torch.randn(6, 10, 4, generator=gen)
    xi = torch.randint(-9, 9, (6, 10, 4), generator=gen)
    placements = [
        [Shard(0), Shard(1)],
        [Shard(1), Shard(0)],
        [Shard(0), Replicate()],
        [Replicate(), Shard(2)],
        [Shard(1), Shard(1)],
    ]
    for pl in placements:
        dx = distribute_tensor(x, mesh, pl)
        di = distribute_tensor(xi, mesh, pl)
        for dims in (None, [0], [1], [0, 1], [2]):
            for op, d_in, t_in in [
                ("sum", dx, x),
                ("mean", dx, x),
                ("prod", dx, x),
                ("amax", dx, x),
                ("amin", dx, x),
                ("bitwise_xor", di, xi),
            ]:
                got = getattr(torch_reduce, op)(d_in, dims).full_tensor()
                want = getattr(torch_reduce, op)(t_in, dims)
                assert _close(got, want, op), (op, pl, dims)
        for d in (0, 1, 2):
            got = torch_reduce.argmax(dx, d).full_tensor()
            assert torch.equal(got, torch.argmax(x, d)), (pl, d)


def _worker_bits(rank: int, world: int) -> None:
    """float32 and bfloat16 sums and means over a sharded dim have the single-device bits, on
    bench/accuracy.py's D1-D4 data, even and uneven shards."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor

    import torch_reduce

    mesh = init_device_mesh("cpu", (world,))
    for n, seed in ((20011, 0), (4096, 1), (999, 2)):
        for name, x in data_sets(n, seed).items():
            for dtype in (torch.float32, torch.bfloat16):
                xd = x.to(dtype)
                dx = distribute_tensor(xd, mesh, [Shard(0)])
                for op in ("sum", "mean"):
                    fn = getattr(torch_reduce, op)
                    got, want = fn(dx).full_tensor(), fn(xd)
                    assert torch.equal(got, want), (op, name, dtype, n, got, want)
                rows = distribute_tensor(xd[: n - n % 8].view(-1, 8), mesh, [Shard(0)])
                got = torch_reduce.sum(rows, [0]).full_tensor()
                assert torch.equal(got, torch_reduce.sum(xd[: n - n % 8].view(-1, 8), [0]))
    # Means whose exact value is a float32 rounding midpoint (ties to even), which small means
    # meet often: partial means weighted in float64 by their shard's share landed on the other
    # side of this one on 2, 3 and 4 ranks, where float64 sums over the count do not.
    tie = torch.tensor([0.4988004267215729, 0.9312140345573425, -0.02057010680437088,
                        -1.01201593875885, -1.3030283451080322])  # fmt: skip
    exact = sum(map(Fraction, tie.tolist())) / len(tie)
    near = torch.tensor(float(exact))  # float(exact) is exact; float32 rounds it to even
    away = torch.tensor(float("inf") if Fraction(near.item()) < exact else -float("inf"))
    assert Fraction(near.item()) + Fraction(near.nextafter(away).item()) == 2 * exact
    assert torch.equal(torch_reduce.mean(tie), near)
    for dims in (None, [0]):
        got = torch_reduce.mean(distribute_tensor(tie, mesh, [Shard(0)]), dims).full_tensor()
        assert torch.equal(got, torch_reduce.mean(tie, dims)), (got.item(), world)


def _rank_main(target, rank: int, world: int, port: int, errors, fault_path: str) -> None:
    """One rank: joins the gloo group on loopback, runs target(rank, world) and reports any
    exception to the parent. A fatal signal leaves the Python stack of every thread in
    fault_path, so the parent can tell where a rank that died without a report was."""
    fault = open(fault_path, "w")  # noqa: SIM115 (open until the process ends)
    faulthandler.enable(file=fault, all_threads=True)
    try:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        dist.init_process_group("gloo", rank=rank, world_size=world)
        torch.set_num_threads(1)
        target(rank, world)
    except Exception:  # reported by the parent
        errors.put(f"rank {rank}: {traceback.format_exc()}")
        raise
    _finish(errors)


def _finish(errors) -> None:
    """Every check passed: the ranks leave together. os._exit skips the process group's
    teardown, in which gloo's background thread can abort (SIGABRT) a rank whose peers closed
    their sockets first: seen once in some hundred groups, after every check had passed."""
    dist.barrier()
    errors.close()
    errors.join_thread()
    os._exit(0)


def _faulting_stack(dump: str) -> str:
    """The stack of the thread that took the fatal signal, from a faulthandler dump."""
    block = dump.split("Current thread", 1)[1] if "Current thread" in dump else dump
    return block.split("\n\n", 1)[0]


def _transient(reports: list[str], exitcodes: dict[int, int], dumps: dict[int, str]) -> bool:
    """A gloo transport failure, not a finding: some rank died of a signal (exitcodes holds
    the ranks that ended on their own, not those the parent stopped) in a thread that was not
    running torch_reduce, and every report of the others is a gloo transport error. A wrong
    result (an assertion), any other exception, or a crash inside torch_reduce is never
    transient."""
    died = [r for r, c in exitcodes.items() if c is not None and c < 0]
    if not died or any("torch_reduce" in _faulting_stack(dumps.get(r, "")) for r in died):
        return False
    return all("gloo/transport" in m and "AssertionError" not in m for m in reports)


def _run_group(target, world: int, fault_dir: str) -> tuple[str, bool] | None:
    """Runs target on world ranks. None when every rank passed; else the report and whether
    the failure is a transient gloo transport failure (_transient)."""
    ctx = mp.get_context("spawn")
    errors = ctx.Queue()
    port = _free_port()
    paths = [os.path.join(fault_dir, f"rank{r}.txt") for r in range(world)]
    procs = [
        ctx.Process(target=_rank_main, args=(target, r, world, port, errors, paths[r]))
        for r in range(world)
    ]
    for p in procs:
        p.start()
    # A rank that fails leaves the others waiting in a collective: stop them at the first error.
    deadline = time.monotonic() + TIMEOUT_S
    msgs = []
    while any(p.is_alive() for p in procs) and time.monotonic() < deadline and not msgs:
        try:
            msgs.append(errors.get(timeout=0.2))
        except queue.Empty:
            pass
    time.sleep(1 if msgs else 0)  # the other ranks' reports, if they have one
    ended = {r: p.exitcode for r, p in enumerate(procs) if not p.is_alive()}
    alive = [r for r, p in enumerate(procs) if p.is_alive()]
    for r in alive:
        procs[r].kill()
        procs[r].join()
    while not errors.empty():
        msgs.append(errors.get())
    if not msgs and not alive and all(c == 0 for c in ended.values()):
        return None
    dumps = {r: open(paths[r]).read() for r in ended if ended[r] is not None and ended[r] < 0}
    report = "\n".join(
        msgs
        + [f"exit codes {ended}; stopped by the parent: {alive}"]
        + (["still running after the time limit"] if time.monotonic() >= deadline else [])
        + [f"rank {r} died of signal {-ended[r]}; faulthandler:\n{d}" for r, d in dumps.items()]
    )
    return report, _transient(msgs, ended, dumps)


def _spawn(target, world: int) -> None:
    """Runs target on world ranks and fails with their reports. A transient gloo transport
    failure (_transient) is rerun once, with a warning that carries its report."""
    with tempfile.TemporaryDirectory() as fault_dir:
        failed = _run_group(target, world, fault_dir)
        if failed is not None and failed[1]:
            warnings.warn(f"gloo transport failure, rerun once:\n{failed[0]}", stacklevel=2)
            failed = _run_group(target, world, fault_dir)
    assert failed is None, failed[0]


def test_transient_is_only_a_gloo_failure_outside_our_code():
    reset = "rank 0: ...\nRuntimeError: [gloo/transport/tcp/pair.cc:538] Read error: reset by peer"
    gloo_thread = "Fatal Python error: Aborted\n\nCurrent thread 0x7 (most recent call first):\n  <no Python frame>\n\nThread 0x1:\n  File torch_reduce/ops.py"
    ours = 'Fatal Python error: Segmentation fault\n\nCurrent thread 0x1 (most recent call first):\n  File "torch_reduce/ops.py", line 9 in sum'
    assert _transient([reset], {1: -6}, {1: gloo_thread})
    assert not _transient([reset], {1: -11}, {1: ours})  # a crash in our code
    assert not _transient(
        [reset, "rank 2: AssertionError: gloo/transport"], {1: -6}, {1: gloo_thread}
    )
    assert not _transient(["rank 0: AssertionError: (sum, ...)"], {}, {})  # a wrong result
    assert not _transient([reset], {1: 1}, {})  # no signal: the rank reported or exited
    assert not _transient([reset], {}, {})  # nobody died: stopped ranks are not counted


@pytest.mark.parametrize("world", WORLD_SIZES)
def test_dtensor_ops_on_gloo(world):
    _spawn(_worker, world)


def test_dtensor_ops_on_a_2d_mesh():
    _spawn(_worker_2d, 4)


@pytest.mark.parametrize("world", [1, 2, 3, 4])
def test_dtensor_float_sums_have_the_single_device_bits(world):
    _spawn(_worker_bits, world)


def test_tensor_parallel_example_runs():
    """examples/tensor_parallel_argmax.py, as written, on 2 CPU ranks (it checks its results).
    A run that fails with a gloo transport error and no assertion is rerun once, with a
    warning, as _spawn reruns its groups (a deterministic failure fails again)."""
    import subprocess
    import sys
    from pathlib import Path

    example = Path(__file__).resolve().parents[1] / "examples" / "tensor_parallel_argmax.py"

    def run():
        return subprocess.run(
            [sys.executable, str(example), "--world", "2", "--vocab", "4099", "--reps", "2"],
            capture_output=True,
            text=True,
            timeout=TIMEOUT_S,
        )

    r = run()
    if r.returncode != 0 and "gloo/transport" in r.stderr and "AssertionError" not in r.stderr:
        warnings.warn(f"gloo transport failure, rerun once:\n{r.stderr[-3000:]}", stacklevel=2)
        r = run()
    assert r.returncode == 0, r.stderr[-3000:]
    assert "match torch" in r.stdout, r.stdout


# Float results compared to rounding (the ranks' partials are rounded before they combine),
# by the result's dtype: (rtol, atol).
_FUZZ_TOL = {
    torch.float64: (1e-12, 1e-12),
    torch.float32: (1e-5, 1e-6),
    torch.float16: (2e-3, 1e-3),
    torch.bfloat16: (1.6e-2, 1e-2),
}


def _fuzz_input(data, st, shape: list[int], op: str, g: torch.Generator) -> torch.Tensor:
    """A drawn input of `shape` for op: its dtype (integers for the bitwise ops, also for sum,
    mean and prod), then its layout: contiguous, its dims reversed in memory, or every other element
    of a twice-as-long last dim."""
    if op.startswith("bitwise"):
        kind = torch.int64
    elif op in ("sum", "mean", "prod"):
        kind = data.draw(st.sampled_from([*_FUZZ_TOL, torch.int32]), "dtype")
    else:
        kind = data.draw(st.sampled_from(list(_FUZZ_TOL)), "dtype")
    layout = data.draw(st.sampled_from(["contiguous", "reversed", "step2"]), "layout")
    full = list(shape[:-1]) + [shape[-1] * (2 if layout == "step2" else 1)]
    if layout == "reversed":
        full = full[::-1]
    if kind.is_floating_point:
        x = torch.randn(full, generator=g).to(kind)
    else:
        x = torch.randint(-99 if op.startswith("bitwise") else -3, 99, full, generator=g).to(kind)
    if layout == "reversed":
        return x.permute(*reversed(range(len(shape))))
    return x[..., ::2] if layout == "step2" else x


def _worker_fuzz(rank: int, world: int) -> None:
    _fuzz(rank, (world,))


def _worker_fuzz_2d(rank: int, world: int) -> None:
    _fuzz(rank, (2, world // 2))


def _fuzz(rank: int, mesh_shape: tuple[int, ...]) -> None:
    """Property-based: random shapes (sizes 1-9, uneven shards included), input dtypes and
    layouts, placements on each mesh dim (a Partial(sum) input too on 1-D meshes), ops, dims,
    keepdim and dtype=; the DTensor result's full tensor
    against the single-device result: the same bits for integer results, the extremes and the
    arg ops, and the wrappers' float32, float16 and bfloat16 sums and means (wide_sum); others
    to rounding by dtype. Every rank draws the same examples (derandomized, no shrinking), so
    the collectives stay in step."""
    from hypothesis import Phase, given, settings
    from hypothesis import strategies as st
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import DTensor, Partial, Replicate, Shard, distribute_tensor

    import torch_reduce
    from torch_reduce.distributed import _EXACT_WIDENING, _NARROW_FLOATS

    mesh = init_device_mesh("cpu", mesh_shape)
    world = mesh.size()
    ops = ["sum", "mean", "prod", "amax", "amin", "argmax", "argmin", "bitwise_or"]

    @settings(
        max_examples=FUZZ_EXAMPLES,
        derandomize=True,
        database=None,
        phases=[Phase.generate],
        deadline=None,
    )
    @given(
        shape=st.lists(st.integers(1, 9), min_size=1, max_size=3),
        op=st.sampled_from(ops),
        data=st.data(),
    )
    def prop(shape, op, data):
        nd = len(shape)
        shards = [
            data.draw(st.sampled_from([None] + list(range(nd))), f"shard on mesh dim {m}")
            for m in range(len(mesh_shape))
        ]
        keepdim = data.draw(st.booleans(), "keepdim")
        seed = data.draw(st.integers(0, 2**16), "seed")
        g = torch.Generator().manual_seed(seed)
        x = _fuzz_input(data, st, shape, op, g)
        kw = {}
        if op in ("sum", "mean", "prod"):
            choices = [None, torch.float64, torch.float32, torch.float16, torch.bfloat16]
            if not x.is_floating_point() and op == "mean":
                choices.remove(None)  # an integer mean raises, as torch's
            kw["dtype"] = data.draw(st.sampled_from(choices), "dtype=")
        if op.startswith("arg"):
            dim_args = st.sampled_from([None] + list(range(-nd, nd)))
        else:
            dim_args = st.one_of(
                st.none(), st.lists(st.integers(0, nd - 1), min_size=1, unique=True)
            )
        placements = [Replicate() if d is None else Shard(d) for d in shards]
        dx = distribute_tensor(x, mesh, placements)
        if shards == [None] and data.draw(st.booleans(), "Partial(sum)"):
            # the same x as a pending sum over the ranks: integers split at random, floats
            # whole on rank 0 (so that the sum of the parts is x exactly)
            part = torch.zeros_like(x)
            if not x.is_floating_point():
                parts = torch.randint(-9, 9, (world, *x.shape), generator=g).to(x.dtype)
                part = parts[rank] if rank else x - parts[1:].sum(0, dtype=x.dtype)
            elif rank == 0:
                part = x.clone()
            placements = [Partial("sum")]
            dx = DTensor.from_local(part, mesh, placements, shape=x.shape, stride=x.stride())
        fn = getattr(torch_reduce, op)
        # two calls on the same DTensor with different dims: DTensor caches its sharding
        # decisions, and a key without the dims would give the second the first's
        for dims in (data.draw(dim_args, "dims"), data.draw(dim_args, "dims again")):
            got = fn(dx, dims, keepdim, **kw).full_tensor()
            want = fn(x, dims, keepdim, **kw)
            msg = (op, x.dtype, x.stride(), shape, placements, dims, keepdim, kw, got, want)
            assert got.dtype == want.dtype and got.shape == want.shape, msg
            # wide_sum: narrow float results, but not a pending sum whose parts would round
            exact = x.dtype == want.dtype or (x.dtype, want.dtype) in _EXACT_WIDENING
            wide = op in ("sum", "mean") and want.dtype in _NARROW_FLOATS
            wide = wide and (exact or not isinstance(placements[0], Partial))
            if wide or not got.is_floating_point() or op in ("amax", "amin"):
                assert torch.equal(got, want), msg
            else:
                rtol, atol = _FUZZ_TOL[want.dtype]
                assert torch.allclose(got.double(), want.double(), rtol=rtol, atol=atol), msg

    prop()


FUZZ_EXAMPLES = int(os.environ.get("TREDUCE_DIST_FUZZ_EXAMPLES", "600"))


@pytest.mark.parametrize("world", [2, 3])
def test_dtensor_fuzz(world):
    _spawn(_worker_fuzz, world)


def test_dtensor_fuzz_on_a_2d_mesh():
    _spawn(_worker_fuzz_2d, 4)
