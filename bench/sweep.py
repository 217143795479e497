"""The workload sweep: reductions on shapes drawn from real model classes, treduce against torch
eager and Inductor in the same run (issue 55).

    python bench/sweep.py --dry-run              # the shapes, per class (no GPU needed)
    python bench/sweep.py --out DIR [--shard K/N] [--seed S]
    python bench/sweep.py --merge DIR/sweep-*.json --out DIR
    python bench/sweep.py --compile-only I/W [--device cpu]  # (what --precompile runs)
    python bench/sweep.py --profile DIR/sweep.json [--worst 3] --out DIR

Each shape is timed with do_bench medians (L2 flushed) for treduce, torch eager and a fresh
torch.compile(dynamic=False) of the same reduction (compiled per shape, never reused). Before
timing, --precompile W worker processes compile the shard's shapes side by side (--compile-only),
which fills Inductor's on-disk caches: the timing pass's own compile of each shape then loads its
kernels instead of generating them one shape at a time on one core. --shard
splits the shapes over several calls (each call of the GPU machine is limited in time); --merge
joins the shards and writes sweep.json, sweep.md (per-class geometric means, the slowest shapes,
the targets) and sweep.png. The small-call latency table (torch_reduce.sum of 2^10-2^14 float32,
torch.ops.treduce.sum, torch.sum and CuPy/CUB) is measured by the shard 0 call. --profile lists,
for each class's shapes furthest below their best peer in a merged sweep, the kernels (name,
count per call, µs, grid and block) that treduce, torch and Inductor launch per call: the "why"
behind a miss.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import random
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

F32, BF16 = "float32", "bfloat16"

# The targets: per class, the geometric mean over shapes of ours / best peer; no shape
# below the floor (parity within the noise between H200 hosts counts as parity); over the whole
# sweep, the geometric mean against torch eager; small eager sums at most this many µs.
CLASS_GOAL = 1.2
SHAPE_FLOOR = 0.97
PARITY = 0.02
SWEEP_GOAL_VS_TORCH = 1.5
SMALL_CALL_US = 4.0
# A shape whose read-only stream takes less than this is a latency shape: its time is the launch
# and one memory round trip, not its bytes (H200: an empty launch 3.2-3.4 µs eager, the stream of
# 2^16 float32 4.9 µs; bench/results/results.md, goal 5).
LATENCY_STREAM_US = 8.0


@dataclass
class Case:
    cls: str
    shape: list[int]
    dtype: str
    op: str  # sum, mean, amax, argmax
    dims: list[int] | None  # None: every dim (argmax: the flattened index)
    view: str = ""  # "", "t" (last two dims swapped), "step2" (every other last-dim element),
    # "nhwc" (channels_last), "blocks" (the 128 x 128 block view of fp8 scaling)

    def name(self) -> str:
        view = f" {self.view}" if self.view else ""
        dims = "all" if self.dims is None else ",".join(map(str, self.dims))
        return f"{self.op} {self.dtype} {tuple(self.shape)}{view} d({dims})"

    def nbytes(self) -> int:
        return math.prod(self.shape) * (4 if self.dtype == F32 else 2)


def _pow2(rng: random.Random, lo: int, hi: int) -> int:
    return 1 << rng.randint(lo.bit_length() - 1, hi.bit_length() - 1)


def _mult(rng: random.Random, lo: int, hi: int, step: int) -> int:
    return rng.randrange(lo // step, hi // step + 1) * step


# Per class: a generator of one case from the rng. Sizes over realistic ranges; each keeps the
# input between a few KB and about 1 GB.
def _norm(rng):
    c = _mult(rng, 256, 16384, 64)
    rows = rng.choice([512, 1024, 2048, 4096, 8192, 16384, 32768])
    rows = max(1, min(rows, (1 << 28) // c))
    return Case("norm stats", [rows, c], rng.choice([F32, BF16]), rng.choice(["sum", "mean"]), [1])


def _softmax(rng):
    t = _pow2(rng, 128, 8192)
    bh = rng.choice([8, 16, 32, 64]) * rng.choice([1, 2, 4, 8])
    rows = max(1, min(bh * t, (1 << 28) // t))
    return Case("softmax", [rows, t], rng.choice([F32, BF16]), rng.choice(["amax", "sum"]), [1])


def _pool(rng):
    n, c = rng.choice([8, 16, 32, 64, 128]), rng.choice([64, 128, 256, 512, 1024, 2048])
    hw = rng.choice([7, 14, 28, 56])
    while n * c * hw * hw > (1 << 28):
        n //= 2
    nhwc = rng.random() < 0.5
    return Case(
        "global pool",
        [max(n, 1), c, hw, hw],
        rng.choice([F32, BF16]),
        "mean",
        [2, 3],
        "nhwc" if nhwc else "",
    )


def _batchnorm(rng):
    case = _pool(rng)
    return Case("batchnorm stats", case.shape, case.dtype, "sum", [0, 2, 3], case.view)


def _bias_grad(rng):
    b, t, c = rng.choice([1, 2, 4, 8, 16]), _pow2(rng, 128, 8192), _mult(rng, 256, 8192, 128)
    while b * t * c > (1 << 28):
        t //= 2
    return Case("bias grad", [b, t, c], rng.choice([F32, BF16]), "sum", [0, 1])


def _seq_pool(rng):
    b, t, c = rng.choice([1, 4, 8, 32, 64]), _pow2(rng, 64, 4096), _mult(rng, 256, 8192, 128)
    while b * t * c > (1 << 28):
        b = max(1, b // 2)
        t //= 2
    return Case(
        "sequence pool", [b, t, c], rng.choice([F32, BF16]), rng.choice(["sum", "mean"]), [1]
    )


def _fp8_scale(rng):
    m, n = _mult(rng, 1024, 16384, 128), _mult(rng, 1024, 16384, 128)
    while m * n > (1 << 28):
        m //= 2
    m = max(128, m // 128 * 128)
    kind = rng.choice(["tensor", "row", "group", "block"])
    dtype = rng.choice([F32, BF16])
    if kind == "tensor":
        return Case("fp8 scale", [m, n], dtype, "amax", None)
    if kind == "row":
        return Case("fp8 scale", [m, n], dtype, "amax", [1])
    if kind == "group":  # per 1 x 128 group
        return Case("fp8 scale", [m, n // 128, 128], dtype, "amax", [2])
    return Case("fp8 scale", [m // 128, 128, n // 128, 128], dtype, "amax", [1, 3], "blocks")


def _moe(rng):
    t, e = rng.choice([1024, 4096, 16384, 65536]), rng.choice([8, 16, 32, 64, 128, 256])
    return Case(
        "moe routing", [t, e], rng.choice([F32, BF16]), rng.choice(["amax", "sum", "argmax"]), [1]
    )


def _vocab(rng):
    b, v = rng.choice([1, 4, 16, 64, 128]), rng.randint(32000, 262144)
    return Case("vocab argmax", [b, v], rng.choice([F32, BF16]), "argmax", [1])


def _loss(rng):
    n = rng.randint(64, 65536)
    return Case("loss", [n], rng.choice([F32, BF16]), rng.choice(["sum", "mean"]), None)


CLASSES = [
    _norm,
    _softmax,
    _pool,
    _batchnorm,
    _bias_grad,
    _seq_pool,
    _fp8_scale,
    _moe,
    _vocab,
    _loss,
]
VIEW_SHARE = 0.2  # the share of shapes taken as transposed or sliced views


def generate(seed: int = 0, per_class: int = 22) -> list[Case]:
    """The sweep's cases: per_class from each class, a share of them as a transposed or sliced
    view ("views of the above"). Deterministic for a seed."""
    rng = random.Random(seed)
    cases = []
    for make in CLASSES:
        for _ in range(per_class):
            c = make(rng)
            if not c.view and len(c.shape) >= 2 and rng.random() < VIEW_SHARE:
                c.view = rng.choice(["t", "step2"])
                if c.view == "step2":
                    c.shape[-1] -= c.shape[-1] % 2
            cases.append(c)
    return cases


def make_input(c: Case, device: str = "cuda") -> torch.Tensor:
    dtype = torch.float32 if c.dtype == F32 else torch.bfloat16
    if c.view == "step2":  # every other element of a twice-as-wide last dim
        base = torch.randn(*c.shape[:-1], 2 * c.shape[-1], device=device).to(dtype)
        return base[..., ::2]
    x = torch.randn(c.shape, device=device).to(dtype)
    if c.view == "t":  # same logical shape, last two dims swapped in memory
        return x.transpose(-1, -2).contiguous().transpose(-1, -2)
    if c.view == "nhwc":
        return x.contiguous(memory_format=torch.channels_last)
    return x


def reduction(c: Case, lib):
    """f(x) computing the case with `lib` (torch or torch_reduce)."""
    if c.op == "argmax":
        d = None if c.dims is None else c.dims[0]
        return lambda x: lib.argmax(x) if d is None else lib.argmax(x, d)
    fn = getattr(lib, c.op)
    if c.dims is None:
        return (lambda x: fn(x, ())) if c.op == "amax" else (lambda x: fn(x))
    return lambda x: fn(x, c.dims)


def agrees(c: Case, x: torch.Tensor, ours, peer) -> bool:
    """Whether our result for case c on x is torch's: the same for amax and argmax, within the
    dtype's tolerance of torch's float64 result for sums and means."""
    got, want = ours(x), peer(x)
    if c.op in ("amax", "argmax"):
        return torch.equal(got, want)
    ref = peer(x.double())
    tol = 1e-2 if c.dtype == BF16 else 1e-4
    return got.dtype == want.dtype and bool(torch.allclose(got.double(), ref, rtol=tol, atol=1e-3))


def compile_only(cases: list[Case], device: str) -> None:
    """Compiles each case's torch reduction with Inductor, as measure() does, without timing it:
    a --precompile worker's part. A case that fails here fails again, reported, in measure().
    Prints how many of the compiles Inductor's FX graph cache served."""
    from torch._dynamo.utils import counters

    for c in cases:
        try:
            torch.manual_seed(0)
            x = make_input(c, device)
            torch._dynamo.reset()
            torch.compile(reduction(c, torch), dynamic=False)(x)
        except Exception as e:
            print(f"compile-only: {c.name()}: {type(e).__name__}: {e}", file=sys.stderr)
    hits, misses = (counters["inductor"][f"fxgraph_cache_{k}"] for k in ("hit", "miss"))
    print(f"compile-only: {len(cases)} shapes, FX graph cache hits {hits}, misses {misses}")


def precompile(argv: list[str], workers: int) -> float:
    """Runs `workers` processes of this script with --compile-only i/workers (the same shapes:
    argv holds --seed, --per-class and --shard) and waits for them; returns the seconds. Each
    worker's Inductor compiles in one thread, so that the workers share the cores."""
    start = time.monotonic()
    env = {**os.environ, "TORCHINDUCTOR_COMPILE_THREADS": "1"}
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, *argv, "--compile-only", f"{i}/{workers}"], env=env
        )
        for i in range(workers)
    ]
    for p in procs:
        p.wait()
    return time.monotonic() - start


# Calls per host-time loop (host_us): few enough that the launch queue never fills.
HOST_CALLS = 50


def host_us(fn, x) -> float:
    """The host's time per call of fn(x), in µs: HOST_CALLS calls back to back after a warm-up,
    one synchronisation before and after (the GPU's work overlaps the loop). do_bench's L2 flush
    (a 256 MB write) hides a call's host time only while that is shorter than the flush; past it,
    do_bench's time holds host time too (host_bound)."""
    for _ in range(3):
        fn(x)
    if x.is_cuda:
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(HOST_CALLS):
        fn(x)
    elapsed = time.perf_counter() - start
    if x.is_cuda:
        torch.cuda.synchronize()
    return elapsed / HOST_CALLS * 1e6


def flush_ms() -> float:
    """The GPU time of do_bench's L2 flush (zeroing 256 MB, as triton.testing.do_bench does)."""
    from triton.testing import do_bench

    cache = torch.empty(int(256e6 // 4), dtype=torch.int, device="cuda")
    return do_bench(cache.zero_, return_mode="median")


def host_bound(r: dict, impl: str) -> bool:
    """Whether impl's time in row r may hold host time: its host time per call (host_us) past the
    run's flush time. False where the run did not measure them."""
    host, flush = r.get(f"{impl}_host_us"), r.get("flush_ms")
    return host is not None and flush is not None and host > flush * 1e3


def measure(cases: list[Case], save=lambda rows: None) -> list[dict]:
    """Times each shape; `save(rows)` after each one, so that a call cut short by the GPU
    machine's time limit still brings back the shapes it finished."""
    from torch._dynamo.utils import counters
    from triton.testing import do_bench

    import torch_reduce

    try:
        from tqdm import tqdm
    except ImportError:

        def tqdm(it, **_):
            return it

    # bench.py's read-only streams over the same bytes (CuPy; None without it): the faster of
    # the grid-stride stream and the stream sized to the input is the ceiling
    from bench import ceiling_fn, sized_stream_fn

    rows = []
    flush = flush_ms()
    for c in tqdm(cases, desc="sweep", file=sys.stderr):
        torch.manual_seed(0)
        x = make_input(c)
        ours, peer = reduction(c, torch_reduce), reduction(c, torch)
        ok = agrees(c, x, ours, peer)
        torch._dynamo.reset()
        hits = counters["inductor"]["fxgraph_cache_hit"]
        compiled = torch.compile(peer, dynamic=False)
        compiled(x)
        cached = counters["inductor"]["fxgraph_cache_hit"] > hits  # --precompile's work
        impls = (("treduce", ours), ("torch", peer), ("inductor", compiled))
        t = {name: do_bench(lambda f=f: f(x), return_mode="median") for name, f in impls}
        host = {f"{name}_host_us": host_us(f, x) for name, f in impls}
        streams = {"grid": ceiling_fn(x), "sized": sized_stream_fn(x)}
        stream_ms = {
            name: None if fn is None else do_bench(fn, return_mode="median")
            for name, fn in streams.items()
        }
        t.update({f"stream_{name}": ms for name, ms in stream_ms.items()})
        timed = [ms for ms in stream_ms.values() if ms is not None]
        t["ceiling"] = min(timed) if timed else None
        rows.append(
            {
                **asdict(c),
                "case": c.name(),
                "bytes": c.nbytes(),
                "correct": ok,
                "inductor_cache_hit": cached,
                **{f"{k}_ms": v for k, v in t.items()},
                **host,
                "flush_ms": flush,
            }
        )
        save(rows)
        x = compiled = None  # the memory back before the next shape
        torch.cuda.empty_cache()
    cached = sum(r["inductor_cache_hit"] for r in rows)
    print(f"Inductor compiles served by the cache: {cached} of {len(rows)}", file=sys.stderr)
    return rows


def small_calls() -> list[dict]:
    """Host-inclusive time per call of small full sums: the mean over 2,000 back-to-back calls
    (one synchronisation at the end), the median of 7 such loops."""
    import torch_reduce

    try:
        import cupy
    except ImportError:
        cupy = None
    rows = []
    for e in (10, 12, 14):
        x = torch.randn(1 << e, device="cuda")
        impls = {
            "torch_reduce.sum": lambda: torch_reduce.sum(x),
            "torch.ops.treduce.sum": lambda: torch.ops.treduce.sum(x),
            "torch.sum": lambda: torch.sum(x),
        }
        if cupy is not None:
            cx = cupy.from_dlpack(x)
            impls["cupy.sum (CUB)"] = lambda: cx.sum()
        for name, fn in impls.items():
            loops = []
            for _ in range(7):
                for _ in range(50):
                    fn()
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                for _ in range(2000):
                    fn()
                torch.cuda.synchronize()
                loops.append((time.perf_counter() - t0) / 2000 * 1e6)
            rows.append({"n": 1 << e, "impl": name, "us": sorted(loops)[3]})
    return rows


KERNEL_CATS = ("kernel", "gpu_memset", "gpu_memcpy")


def kernel_table(events: list[dict], calls: int, minus: dict[str, int] | None = None) -> list[dict]:
    """The GPU work of one call from a profiler trace of `calls` calls (chrome-trace events): per
    kernel (or memset, memcpy) name, how many a call launches and their mean µs, with the grid
    and block of the first. `minus` holds counts per name to take off first (the L2 flushes that
    the trace also recorded)."""
    minus = dict(minus or {})
    out: dict[str, dict] = {}
    for e in events:
        if e.get("cat") not in KERNEL_CATS:
            continue
        name = e.get("name", "?")
        if minus.get(name, 0) > 0:
            minus[name] -= 1
            continue
        args = e.get("args", {})
        row = out.setdefault(
            name,
            {"name": name, "n": 0, "us": 0.0, "grid": args.get("grid"), "block": args.get("block")},
        )
        row["n"] += 1
        row["us"] += float(e.get("dur", 0.0))
    for row in out.values():
        row["us"] /= row["n"]
        row["n"] /= calls
    return sorted(out.values(), key=lambda r: -r["n"] * r["us"])


def _trace(fn, calls: int, device: str = "cuda") -> list[dict]:
    """The chrome-trace events of `calls` calls of fn, each after an L2 flush (on the CPU, which
    has no kernels to list, the same loop: the tests walk this path there)."""
    import tempfile

    from torch.profiler import ProfilerActivity, profile

    flush = torch.empty(64 << 20, dtype=torch.int32, device=device)
    cuda = device == "cuda"
    with profile(activities=[ProfilerActivity.CUDA if cuda else ProfilerActivity.CPU]) as prof:
        for _ in range(calls):
            flush.zero_()
            fn()
        if cuda:
            torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        prof.export_chrome_trace(f.name)
        return json.loads(Path(f.name).read_text())["traceEvents"]


def profile_cases(cases: list[Case], calls: int = 20, device: str = "cuda") -> list[dict]:
    """What each impl launches per call, per case: kernel_table of a traced run (the flush's own
    kernels, traced alone first, taken off)."""
    import torch_reduce

    flush_only = kernel_table(_trace(lambda: None, calls, device), 1)
    minus = {r["name"]: int(r["n"]) for r in flush_only}
    out = []
    for c in cases:
        x = make_input(c, device)
        torch._dynamo.reset()
        impls = {
            "treduce": reduction(c, torch_reduce),
            "torch": reduction(c, torch),
            "inductor": torch.compile(reduction(c, torch), dynamic=False),
        }
        for name, f in impls.items():
            for _ in range(3):
                f(x)
            table = kernel_table(_trace(lambda f=f: f(x), calls, device), calls, minus)
            out.append({"case": c.name(), "cls": c.cls, "impl": name, "kernels": table})
        x = None
        if device == "cuda":
            torch.cuda.empty_cache()
    return out


def fmt_profile(rows: list[dict]) -> str:
    lines = [
        "| shape | impl | sweep µs | per call: kernel × n, µs each (profiler), grid × block |",
        "|---|---|---|---|",
    ]
    for r in rows:
        parts = [
            f"{k['name'][:60]} ×{k['n']:g}, {k['us']:.1f} µs, {k['grid']} × {k['block']}"
            for k in r["kernels"]
        ]
        sweep_us = f"{r['sweep_us']:.1f}" if r.get("sweep_us") else "—"
        lines.append(f"| {r['case']} | {r['impl']} | {sweep_us} | {'<br>'.join(parts) or '—'} |")
    return "\n".join(lines)


def worst(rows: list[dict], per_class: int) -> list[Case]:
    """The per_class shapes of each class furthest below their best peer, as Cases."""
    fields = ("cls", "shape", "dtype", "op", "dims", "view")
    out = []
    for cls in dict.fromkeys(r["cls"] for r in rows):
        sel = [r for r in rows if r["cls"] == cls]
        sel.sort(key=lambda r: r["treduce_ms"] / min(r["torch_ms"], r["inductor_ms"]), reverse=True)
        out += [Case(**{k: r[k] for k in fields}) for r in sel[:per_class]]
    return out


def geomean(xs: list[float]) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def summary(rows: list[dict], small: list[dict]) -> str:
    """The per-class table, the targets, the slowest shapes and the small-call table."""
    for r in rows:
        best = min(r["torch_ms"], r["inductor_ms"])
        r["vs_best"] = best / r["treduce_ms"]
        r["vs_torch"] = r["torch_ms"] / r["treduce_ms"]
        r["best_peer"] = "torch" if r["torch_ms"] <= r["inductor_ms"] else "inductor"
        # the most any kernel could gain on the best peer: reading the bytes once at the
        # stream's rate (its launch included)
        r["bound"] = best / r["ceiling_ms"] if r.get("ceiling_ms") else None

    def bound(sel: list[dict]) -> str:
        known = [r["bound"] for r in sel if r["bound"]]
        return f"{geomean(known):.2f}" if len(known) == len(sel) else "—"

    out = [
        "| class | shapes | geomean × best peer | lowest × best peer | geomean × torch | "
        f"meets ≥ {CLASS_GOAL}× | bound × best peer |",
        "|---|---|---|---|---|---|---|",
    ]
    for cls in dict.fromkeys(r["cls"] for r in rows):
        sel = [r for r in rows if r["cls"] == cls]
        g = geomean([r["vs_best"] for r in sel])
        out.append(
            f"| {cls} | {len(sel)} | {g:.2f} | {min(r['vs_best'] for r in sel):.2f} | "
            f"{geomean([r['vs_torch'] for r in sel]):.2f} | "
            f"{'yes' if g >= CLASS_GOAL else 'no'} | {bound(sel)} |"
        )
    below = sorted(
        (r for r in rows if r["vs_best"] < SHAPE_FLOOR - PARITY), key=lambda r: r["vs_best"]
    )
    wrong = [r for r in rows if not r["correct"]]
    overall = geomean([r["vs_torch"] for r in rows])
    out += [
        "",
        f"- shapes: {len(rows)}; results that differ from torch: {len(wrong)}",
        f"- whole sweep, geometric mean × torch eager: {overall:.2f} "
        f"(goal ≥ {SWEEP_GOAL_VS_TORCH})",
        f"- shapes below {SHAPE_FLOOR}× the best peer (beyond ±{PARITY:.0%} parity): {len(below)}",
    ]
    flush = next((r["flush_ms"] for r in rows if "flush_ms" in r), None)
    if flush is not None:  # (a merge may join runs with and without host times)
        bound_by = {
            i: sum(host_bound(r, i) for r in rows) for i in ("treduce", "torch", "inductor")
        }
        out.append(
            "- shapes whose time may hold host time (host time per call past the L2 flush's "
            f"{flush * 1e3:.0f} µs; marked (host: ...) below): "
            + ", ".join(f"{i} {n}" for i, n in bound_by.items())
        )
    why = misses(rows)
    if why:
        out += why.split("\n")
    if below:
        out += [
            "",
            "% stream: the read-only stream's time over the bytes (its launch included; the "
            "faster of the grid-stride stream and the stream sized to the input, where the run "
            "timed both) over the impl's time.",
            "",
            "| shape | × best peer | best peer | treduce µs | peer µs | stream µs | "
            "% stream ours / peer |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in below:
            peer_ms = min(r["torch_ms"], r["inductor_ms"])
            stream = r.get("ceiling_ms")
            pct = f"{stream / r['treduce_ms']:.0%} / {stream / peer_ms:.0%}" if stream else "—"
            slow = [i for i in ("torch", "inductor") if host_bound(r, i)]
            mark = f" (host: {', '.join(slow)})" if slow else ""
            out.append(
                f"| {r['case']} | {r['vs_best']:.2f} | {r['best_peer']}{mark} | "
                f"{r['treduce_ms'] * 1e3:.1f} | {peer_ms * 1e3:.1f} | "
                f"{f'{stream * 1e3:.1f}' if stream else '—'} | {pct} |"
            )
    if small:
        out += [
            "",
            f"Small eager calls (µs per call, host included; goal ≤ {SMALL_CALL_US} µs "
            "for torch_reduce.sum, CuPy/CUB's time on the issue's host; × ours: the impl's time "
            "over torch_reduce.sum's in this run):",
            "",
            "| n | impl | µs | × ours |",
            "|---|---|---|---|",
        ]
        ours = {r["n"]: r["us"] for r in small if r["impl"] == "torch_reduce.sum"}
        for r in small:
            ratio = f"{r['us'] / ours[r['n']]:.2f}" if r["n"] in ours else "—"
            out.append(f"| 2^{r['n'].bit_length() - 1} | {r['impl']} | {r['us']:.2f} | {ratio} |")
    return "\n".join(out)


def misses(rows: list[dict]) -> str:
    """Why each class that misses its goal misses it, from the run's own measurements (summary
    sets vs_best and bound): the most any kernel could gain on the best peer (the stream's
    bound), then its shapes below the floor split into latency shapes (the stream under
    LATENCY_STREAM_US: launch and round trip), with each side's median µs, and bandwidth shapes,
    with each side's median share of the stream; and the views among them."""
    out = []
    for cls in dict.fromkeys(r["cls"] for r in rows):
        sel = [r for r in rows if r["cls"] == cls]
        if geomean([r["vs_best"] for r in sel]) >= CLASS_GOAL:
            continue
        below = [r for r in sel if r["vs_best"] < SHAPE_FLOOR - PARITY]
        timed = [r for r in below if r.get("ceiling_ms")]
        lat = [r for r in timed if r["ceiling_ms"] * 1e3 < LATENCY_STREAM_US]
        bw = [r for r in timed if r["ceiling_ms"] * 1e3 >= LATENCY_STREAM_US]
        peer = {id(r): min(r["torch_ms"], r["inductor_ms"]) for r in below}
        bounds = [r["bound"] for r in sel if r.get("bound")]
        parts = []
        if len(bounds) == len(sel):
            g = geomean(bounds)
            reach = "above" if g < CLASS_GOAL else "within"
            parts.append(f"stream bound {g:.2f}× the best peer: the goal is {reach} it")
        if lat:
            parts.append(
                f"{len(lat)} latency shapes (stream < {LATENCY_STREAM_US:g} µs): ours "
                f"{statistics.median([r['treduce_ms'] * 1e3 for r in lat]):.1f} µs, the peer "
                f"{statistics.median([peer[id(r)] * 1e3 for r in lat]):.1f} (medians)"
            )
        if bw:
            parts.append(
                f"{len(bw)} bandwidth shapes: ours at "
                f"{statistics.median([r['ceiling_ms'] / r['treduce_ms'] for r in bw]):.0%} of the stream, "
                f"the peer at {statistics.median([r['ceiling_ms'] / peer[id(r)] for r in bw]):.0%} (medians)"
            )
        untimed = [r for r in below if not r.get("ceiling_ms")]
        if untimed:
            parts.append(
                f"{len(untimed)} shapes without a stream time: ours "
                f"{statistics.median([r['treduce_ms'] * 1e3 for r in untimed]):.1f} µs, the peer "
                f"{statistics.median([peer[id(r)] * 1e3 for r in untimed]):.1f} (medians)"
            )
        views = sorted({r.get("view") or "plain" for r in below})
        counts = ", ".join(
            f"{v} {sum((r.get('view') or 'plain') == v for r in below)}" for v in views
        )
        out.append(f"| {cls} | {len(below)} of {len(sel)} | {'; '.join(parts) or '—'} | {counts} |")
    if not out:
        return ""
    head = [
        "",
        f"Why the classes below {CLASS_GOAL}× miss (this run's measurements):",
        "",
        f"| class | shapes below {SHAPE_FLOOR}× | measured | views below |",
        "|---|---|---|---|",
    ]
    foot = [
        "",
        "The kernels behind each class's worst shapes: `--profile` (committed as "
        "`sweep_profile.md`); per gap, the kernel measured and what would close it: "
        "docs/performance.md.",
    ]
    return "\n".join(head + out + foot)


def plot(rows: list[dict], path: Path, title: str = "") -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    classes = list(dict.fromkeys(r["cls"] for r in rows))
    fig, ax = plt.subplots(figsize=(12, 5))
    for i, cls in enumerate(classes):
        ys = [r["vs_best"] for r in rows if r["cls"] == cls]
        ax.scatter([i + (j % 9 - 4) * 0.04 for j in range(len(ys))], ys, s=10)
    ax.axhline(1.0, color="k", linewidth=0.8)
    ax.axhline(CLASS_GOAL, color="g", linestyle="--", linewidth=0.8)
    ax.set_xticks(range(len(classes)), classes, rotation=30, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("treduce speed × best of torch eager and Inductor")
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--per-class", type=int, default=22)
    ap.add_argument("--shard", default="0/1", help="K/N: the K-th of N slices of the shapes")
    ap.add_argument("--out", default=".")
    ap.add_argument("--dry-run", action="store_true", help="list the shapes and stop")
    ap.add_argument(
        "--precompile",
        type=int,
        default=12,
        help="worker processes that compile the shard's shapes before timing (0: none)",
    )
    ap.add_argument(
        "--compile-only", help="I/W: compile the I-th of W slices of the shard's shapes"
    )
    ap.add_argument("--device", default="cuda", help="--compile-only's device")
    ap.add_argument("--merge", nargs="*", help="shard JSON files to join")
    ap.add_argument(
        "--profile",
        metavar="SWEEP_JSON",
        help="list the kernels that each impl launches per call on the shapes of a merged sweep "
        "furthest below their best peer (--worst per class); writes profile.json and profile.md",
    )
    ap.add_argument("--worst", type=int, default=3, help="--profile's shapes per class")
    args = ap.parse_args()
    out = Path(args.out)
    cases = generate(args.seed, args.per_class)
    if args.dry_run:
        for c in cases:
            print(f"{c.cls:16s} {c.name()}  {c.nbytes() / 2**20:.1f} MB")
        counts = {c.cls: 0 for c in cases}
        for c in cases:
            counts[c.cls] += 1
        print(
            f"{len(cases)} shapes; per class {counts}; "
            f"views {sum(bool(c.view) for c in cases)}; "
            f"bfloat16 {sum(c.dtype == BF16 for c in cases)}"
        )
        return
    out.mkdir(parents=True, exist_ok=True)
    if args.merge is not None:
        files = [f for pattern in args.merge for f in sorted(glob.glob(pattern))]
        parts = [json.loads(Path(f).read_text()) for f in files]
        rows = [r for p in parts for r in p["rows"]]
        small = [r for p in parts for r in p.get("small", [])]
        meta = {k: parts[0][k] for k in ("device", "torch", "seed")}
        md = summary(rows, small)
        (out / "sweep.json").write_text(
            json.dumps({**meta, "rows": rows, "small": small}, indent=1)
        )
        (out / "sweep.md").write_text(
            f"# Workload sweep ({meta['device']}, seed {meta['seed']})\n\n{md}\n"
        )
        plot(rows, out / "sweep.png", f"{meta['device']}, seed {meta['seed']}, {len(rows)} shapes")
        print(md)
        return
    if args.profile:
        swept = json.loads(Path(args.profile).read_text())["rows"]
        prof = profile_cases(worst(swept, args.worst))
        timed_ms = {r["case"]: r for r in swept}
        for p in prof:  # beside the kernels, the sweep's own time of the call (do_bench)
            p["sweep_us"] = timed_ms[p["case"]][f"{p['impl']}_ms"] * 1e3
        (out / "profile.json").write_text(json.dumps(prof, indent=1))
        (out / "profile.md").write_text(fmt_profile(prof) + "\n")
        print(fmt_profile(prof))
        return
    k, n = map(int, args.shard.split("/"))
    mine = cases[k::n]
    if args.compile_only:
        i, w = map(int, args.compile_only.split("/"))
        compile_only(mine[i::w], args.device)
        return
    precompile_s = 0.0
    if args.precompile > 0:
        same = ["--seed", str(args.seed), "--per-class", str(args.per_class), "--shard", args.shard]
        precompile_s = precompile(same, args.precompile)
        print(f"precompiled {len(mine)} shapes in {precompile_s:.0f} s", file=sys.stderr)
    info = {
        "device": torch.cuda.get_device_name(),
        "torch": torch.__version__,
        "seed": args.seed,
        "shard": args.shard,
        "precompile_s": precompile_s,
        "rows": [],
        "small": [],
    }

    def save(rows: list[dict]) -> None:
        info["rows"] = rows
        (out / f"sweep-{k}of{n}.json").write_text(json.dumps(info, indent=1))

    # The small-call table first: a short call, and the one the shard cannot do without.
    small = info["small"] = small_calls() if k == 0 else []
    save([])
    rows = measure(mine, save)
    print(summary(rows, small))


if __name__ == "__main__":
    main()
