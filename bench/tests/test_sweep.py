"""bench/sweep.py without a GPU: the shapes it draws are the issue's classes over their ranges,
the same for a seed, and every kind of case (each class's smallest shape, each view) runs through
the sweep's own calls on the CPU with torch's result; the summary renders its targets."""

import collections
import importlib.util
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import torch_reduce

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("treduce_sweep", ROOT / "bench" / "sweep.py")
sweep = importlib.util.module_from_spec(_spec)
sys.modules["treduce_sweep"] = sweep  # dataclasses look their module up by name
_spec.loader.exec_module(sweep)

CLASSES = {
    "norm stats",
    "softmax",
    "global pool",
    "batchnorm stats",
    "bias grad",
    "sequence pool",
    "fp8 scale",
    "moe routing",
    "vocab argmax",
    "loss",
}


def by_class(cases):
    out = collections.defaultdict(list)
    for c in cases:
        out[c.cls].append(c)
    return out


def test_the_shapes_are_the_issues_classes_over_their_ranges():
    cases = sweep.generate(0)
    assert len(cases) >= 200
    assert [c.name() for c in cases] == [c.name() for c in sweep.generate(0)]
    assert [c.name() for c in cases] != [c.name() for c in sweep.generate(1)]
    classes = by_class(cases)
    assert set(classes) == CLASSES
    assert {c.dtype for c in cases} == {sweep.F32, sweep.BF16}
    assert {"t", "step2", "nhwc", "blocks"} <= {c.view for c in cases}
    for c in classes["norm stats"]:
        assert 256 <= c.shape[-1] <= 16384 and c.dims == [1]
    for c in classes["moe routing"]:
        assert 8 <= c.shape[-1] <= 256
    for c in classes["vocab argmax"]:
        assert c.op == "argmax" and 32000 <= c.shape[-1] <= 262144
    for c in classes["loss"]:
        assert math.prod(c.shape) <= 65536
    blocks = [c for c in classes["fp8 scale"] if c.view == "blocks"]
    assert blocks and all(len(c.shape) == 4 and c.dims == [1, 3] for c in blocks)
    assert all(c.nbytes() <= 1 << 31 for c in cases)


def kinds(cases):
    """Each class's smallest case, and the smallest case of each view."""
    picked = {}
    for group in list(by_class(cases).values()) + [
        [c for c in cases if c.view == v] for v in sorted({c.view for c in cases})
    ]:
        c = min(group, key=lambda c: c.nbytes())
        picked[c.name()] = c
    return list(picked.values())


@pytest.mark.parametrize("case", kinds(sweep.generate(0)), ids=lambda c: f"{c.cls}: {c.name()}")
def test_each_kind_of_case_runs_with_torchs_result_on_the_cpu(case):
    torch.manual_seed(0)
    x = sweep.make_input(case, device="cpu")
    assert list(x.shape) == case.shape
    if case.view == "nhwc":
        assert x.is_contiguous(memory_format=torch.channels_last)
    ours, peer = sweep.reduction(case, torch_reduce), sweep.reduction(case, torch)
    assert sweep.agrees(case, x, ours, peer)
    # and the check can fail: a result off by a part in a hundred is not torch's
    if case.op in ("sum", "mean"):
        assert not sweep.agrees(case, x, lambda t: ours(t) * 1.05 + 1, peer)


def test_the_summary_renders_the_targets():
    rows = [
        {
            "cls": "loss",
            "case": "sum float32 (267,) d(all)",
            "correct": True,
            "treduce_ms": 0.004,
            "torch_ms": 0.006,
            "inductor_ms": 0.005,
        },
        {
            "cls": "loss",
            "case": "sum float32 (999,) d(all)",
            "correct": False,
            "treduce_ms": 0.010,
            "torch_ms": 0.006,
            "inductor_ms": 0.009,
        },
    ]
    small = [
        {"n": 1024, "impl": "torch_reduce.sum", "us": 3.5},
        {"n": 1024, "impl": "cupy.sum (CUB)", "us": 7.0},
    ]
    text = sweep.summary(rows, small)
    assert "| loss | 2 |" in text
    assert "results that differ from torch: 1" in text
    assert "below 0.97× the best peer" in text and "sum float32 (999,) d(all)" in text
    assert "| 2^10 | torch_reduce.sum | 3.50 | 1.00 |" in text
    assert "| 2^10 | cupy.sum (CUB) | 7.00 | 2.00 |" in text
    assert text.splitlines()[2].endswith("| — |")  # no stream measured: no bound
    # With the stream measured: the class's bound (best peer over the stream) and, for a shape
    # below the floor, each side's share of the stream.
    for r, stream_ms in zip(rows, (0.003, 0.004)):
        r["ceiling_ms"] = stream_ms
    text = sweep.summary(rows, [])
    bound = (0.005 / 0.003 * 0.006 / 0.004) ** 0.5
    assert text.splitlines()[2].endswith(f"| {bound:.2f} |")
    assert "| sum float32 (999,) d(all) | 0.60 | torch | 10.0 | 6.0 | 4.0 | 40% / 67% |" in text


def test_host_time_per_call_and_host_bound_peers():
    """host_us times a call's host side (a CPU call here: its whole time); the summary counts
    and marks the shapes whose peer's host time per call passes the run's L2 flush, where
    do_bench's time holds host time (an Inductor wrapper slower than the 256 MB flush)."""
    x = torch.randn(1 << 16)
    slow = sweep.host_us(lambda t: [t.sum() for _ in range(20)], x)
    fast = sweep.host_us(lambda t: t, x)
    assert slow > fast > 0
    rows = [
        {
            "cls": "loss",
            "case": f"sum float32 ({n},) d(all)",
            "correct": True,
            "treduce_ms": 0.008,
            "torch_ms": 0.007,
            "inductor_ms": ind_ms,
            "treduce_host_us": 7.0,
            "torch_host_us": 8.0,
            "inductor_host_us": ind_host,
            "flush_ms": 0.085,
        }
        for n, ind_ms, ind_host in ((1000, 0.040, 120.0), (2000, 0.006, 30.0))
    ]
    assert sweep.host_bound(rows[0], "inductor") and not sweep.host_bound(rows[1], "inductor")
    assert not sweep.host_bound(rows[0], "torch")
    assert not sweep.host_bound({"inductor_host_us": 1e9}, "inductor")  # no flush measured
    text = sweep.summary(rows, [])
    assert "past the L2 flush's 85 µs" in text and "treduce 0, torch 0, inductor 1" in text
    assert "| sum float32 (1000,) d(all) | 0.88 | torch (host: inductor) |" in text
    assert "| sum float32 (2000,) d(all) | 0.75 | inductor |" in text
    # a merge of a run with host times and one without: the first counts, the second is not marked
    del rows[0]["flush_ms"]
    assert "treduce 0, torch 0, inductor 0" in sweep.summary(rows, [])
    # runs without host times (the committed ones before it) render as before
    for r in rows[1:]:
        del r["flush_ms"]
    assert "host time" not in sweep.summary(rows, [])


def test_the_summary_says_why_a_class_misses():
    def row(cls, view, ours_us, peer_us, stream_us):
        return {
            "cls": cls,
            "case": f"{cls} {view} {ours_us}",
            "view": view,
            "correct": True,
            "treduce_ms": ours_us / 1e3,
            "torch_ms": peer_us / 1e3,
            "inductor_ms": 2 * peer_us / 1e3,
            "ceiling_ms": None if stream_us is None else stream_us / 1e3,
        }

    rows = [
        row("loss", "", 7.0, 5.0, 4.0),  # latency shape, below
        row("loss", "", 9.0, 5.0, 5.0),  # latency shape, below
        row("pool", "t", 60.0, 15.0, 14.0),  # bandwidth shape, below: ours at 23% of the stream
        row("pool", "", 20.0, 20.0, 19.0),  # at parity
        row("argmax", "", 10.0, 20.0, 8.0),  # 2x: the class meets its goal
    ]
    text = sweep.summary(rows, [])
    why = text[text.index("Why the classes") :]
    assert "| argmax |" not in why  # a class that meets its goal has no row
    assert (
        "| loss | 2 of 2 | stream bound 1.12× the best peer: the goal is above it; "
        "2 latency shapes (stream < 8 µs): ours 8.0 µs, the peer 5.0 (medians) | plain 2 |"
    ) in why
    assert (
        "| pool | 1 of 2 | stream bound 1.06× the best peer: the goal is above it; 1 bandwidth "
        "shapes: ours at 23% of the stream, the peer at 93% (medians) | t 1 |"
    ) in why
    assert "what would close it: docs/performance.md" in why
    rows[0]["ceiling_ms"] = None  # a shape without a stream time: no bound, its medians apart
    why = sweep.summary(rows, [])
    assert "| loss | 2 of 2 | 1 latency shapes (stream < 8 µs): ours 9.0 µs" in why
    assert "1 shapes without a stream time: ours 7.0 µs, the peer 5.0 (medians)" in why


def test_precompile_fills_the_cache_that_the_timing_compile_loads(tmp_path):
    """A --compile-only worker (another process, as --precompile starts them) fills Inductor's
    on-disk cache, and the same shape compiled again in a fresh process, as the timing pass does,
    loads it (an FX graph cache hit) instead of generating it. A fresh cache directory, so that
    the first compile must miss; both in processes of their own, away from this one's state."""
    case = sweep.generate(0, per_class=1)[-1]  # the loss class's one shape: a 1-d sum
    assert case.cls == "loss"
    worker = [sys.executable, str(ROOT / "bench" / "sweep.py"), "--per-class", "1"]
    worker += ["--compile-only", "9/10", "--device", "cpu"]
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor")}
    runs = [
        subprocess.run(worker, env=env, check=True, timeout=900, capture_output=True, text=True)
        for _ in range(2)
    ]
    assert "1 shapes, FX graph cache hits 0, misses 1" in runs[0].stdout, runs[0].stdout
    assert "1 shapes, FX graph cache hits 1, misses 0" in runs[1].stdout, runs[1].stdout


def test_the_kernel_table_counts_per_call_and_takes_off_the_flushes():
    """Two calls traced, each after a flush: the flush's kernels come off by count, the rest
    are per call, with their mean duration and the first one's launch shape."""

    def ev(name, dur, cat="kernel", grid=(1, 1, 1)):
        return {"cat": cat, "name": name, "dur": dur, "args": {"grid": list(grid), "block": [256]}}

    events = [
        {"cat": "cuda_runtime", "name": "cudaLaunchKernel", "dur": 3.0},
        ev("fill", 80.0),
        ev("reduce", 4.0, grid=(132, 1, 1)),
        ev("merge", 1.0),
        ev("fill", 80.0),
        ev("reduce", 6.0),
        ev("merge", 3.0),
        ev("Memset (Device)", 0.5, cat="gpu_memset"),
    ]
    table = sweep.kernel_table(events, calls=2, minus={"fill": 2})
    assert [r["name"] for r in table] == ["reduce", "merge", "Memset (Device)"]
    reduce, merge, memset = table
    assert reduce["n"] == 1 and reduce["us"] == 5.0 and reduce["grid"] == [132, 1, 1]
    assert merge["n"] == 1 and merge["us"] == 2.0
    assert memset["n"] == 0.5
    # a kernel of the flush's name that the impl launches too stays, past the flushes' count
    extra = sweep.kernel_table(events + [ev("fill", 2.0)], 2, {"fill": 2})
    assert [(r["n"], r["us"]) for r in extra if r["name"] == "fill"] == [(0.5, 2.0)]


def test_worst_picks_each_classs_shapes_furthest_below_the_best_peer():
    def row(cls, n, ours, torch_ms, inductor_ms):
        return {
            "cls": cls,
            "shape": [n],
            "dtype": sweep.F32,
            "op": "sum",
            "dims": None,
            "view": "",
            "treduce_ms": ours,
            "torch_ms": torch_ms,
            "inductor_ms": inductor_ms,
        }

    rows = [
        row("loss", 1, 1.0, 2.0, 2.0),
        row("loss", 2, 3.0, 2.0, 1.0),
        row("loss", 3, 2.0, 1.0, 5.0),
        row("softmax", 4, 1.0, 1.0, 1.0),
    ]
    picked = sweep.worst(rows, per_class=2)
    assert [(c.cls, c.shape) for c in picked] == [("loss", [2]), ("loss", [3]), ("softmax", [4])]


def test_the_profile_table_renders_each_kernel_beside_the_sweeps_time():
    rows = [
        {
            "case": "sum float32 (267,) d(all)",
            "impl": "treduce",
            "sweep_us": 6.9,
            "kernels": [{"name": "canon_small", "n": 1.0, "us": 2.1, "grid": [1], "block": [64]}],
        },
        {"case": "sum float32 (267,) d(all)", "impl": "torch", "kernels": []},
    ]
    lines = sweep.fmt_profile(rows).splitlines()
    assert (
        lines[2]
        == "| sum float32 (267,) d(all) | treduce | 6.9 | canon_small ×1, 2.1 µs, [1] × [64] |"
    )
    assert lines[3] == "| sum float32 (267,) d(all) | torch | — | — |"


def test_profile_walks_each_impl_of_a_case_on_the_cpu():
    """--profile's loop (input, the three impls, Inductor compiled, the traced calls) on the CPU,
    where the trace holds no kernels: an error in it shows here, not first on the GPU machine."""
    case = sweep.generate(0, per_class=1)[-1]  # the loss class's one shape: a 1-d sum
    rows = sweep.profile_cases([case], calls=2, device="cpu")
    assert [(r["case"], r["impl"]) for r in rows] == [
        (case.name(), impl) for impl in ("treduce", "torch", "inductor")
    ]
    assert all(r["kernels"] == [] for r in rows)
