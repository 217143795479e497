"""The benchmark grid: treduce against torch eager, torch.compile (Inductor), CuPy/CUB and a
read-only stream kernel (the ceiling), all measured in the same run.

    python bench/bench.py --out DIR [--quick] [--only SUBSTRING] [--no-inductor]
    python bench/bench.py --out DIR --render DIR/results.json   # markdown and plots again

Timing: triton.testing.do_bench medians with the L2 flushed between repetitions (floating sums
and means: ours and the plain kernels timed five times each, alternately, the median of each);
latency cells and every cell of at most 16 MiB also time CUDA-graph replays
(do_bench_cudagraph). GB/s counts the bytes read once. Writes
DIR/results.json, DIR/results.md and DIR/bandwidth.png, DIR/latency.png, and prints the table.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

import torch_reduce
from torch_reduce._testing import forced_launch

try:
    import triton.testing as tt
except ImportError:  # pragma: no cover - the bench needs triton's timers
    sys.exit("bench.py needs triton (triton.testing.do_bench)")

try:
    import cupy
    from cupy import _core as cupy_core
except ImportError:
    cupy = None

try:
    from tqdm import tqdm
except ImportError:

    def tqdm(it, **_):
        return it


@dataclass
class Case:
    cls: str  # shape class
    name: str  # what is reduced
    shape: tuple
    dtype: torch.dtype
    op: str  # sum, mean, prod, amax, amin or argmax
    dim: tuple | None  # argmax: one dim or None
    layout: str = "contiguous"
    latency: bool = False  # also time CUDA-graph replays

    def make(self) -> torch.Tensor:
        x = torch.randn(self.shape, device="cuda")
        if self.op == "prod":  # near 1, so that long products stay finite
            x = 1 + 1e-5 * x
        x = x.to(self.dtype)
        if self.layout == "channels_last":
            return x.contiguous(memory_format=torch.channels_last)
        if self.layout == "step2":  # every other column of `shape`
            return x[:, ::2]
        return x


F32, BF16, F16 = torch.float32, torch.bfloat16, torch.float16
PEERS = ("torch", "inductor", "cub")


def grid(quick: bool) -> list[Case]:
    cases = [
        Case("full", "sum f32 2^30", (1 << 30,), F32, "sum", None),
        Case("full", "sum f32 2^28", (1 << 28,), F32, "sum", None),
        Case("full", "sum f16 2^29", (1 << 29,), F16, "sum", None),
        Case("full", "amax bf16 2^28", (1 << 28,), BF16, "amax", None),
        Case("rows", "sum f32 (16384,16384) d1", (16384, 16384), F32, "sum", (1,)),
        Case("rows", "sum f32 (4096,4096) d1", (4096, 4096), F32, "sum", (1,)),
        Case("rows", "amax bf16 (8192,8192) d1", (8192, 8192), BF16, "amax", (1,)),
        Case("columns", "sum f32 (16384,16384) d0", (16384, 16384), F32, "sum", (0,)),
        Case("columns", "sum f32 (4096,4096) d0", (4096, 4096), F32, "sum", (0,)),
        Case("columns", "amax bf16 (16384,16384) d0", (16384, 16384), BF16, "amax", (0,)),
        Case("bias grad", "sum f32 (8,4096,4096) d(0,1)", (8, 4096, 4096), F32, "sum", (0, 1)),
        Case("short rows", "sum f32 (2^25,2) d1", (1 << 25, 2), F32, "sum", (1,)),
        Case("short rows", "sum f32 (2^23,8) d1", (1 << 23, 8), F32, "sum", (1,)),
        Case("short rows", "sum f32 (2^21,32) d1", (1 << 21, 32), F32, "sum", (1,)),
        Case("short rows", "sum f32 (2^19,128) d1", (1 << 19, 128), F32, "sum", (1,)),
        Case("short rows", "amax bf16 (2^25,2) d1", (1 << 25, 2), BF16, "amax", (1,)),
        Case("short rows", "amax bf16 (2^23,8) d1", (1 << 23, 8), BF16, "amax", (1,)),
        Case("short rows", "amax bf16 (2^21,32) d1", (1 << 21, 32), BF16, "amax", (1,)),
        Case("short rows", "amax bf16 (2^19,128) d1", (1 << 19, 128), BF16, "amax", (1,)),
        Case("narrow columns", "sum f32 (262144,128) d0", (262144, 128), F32, "sum", (0,)),
        Case("narrow columns", "sum f32 (1048576,32) d0", (1048576, 32), F32, "sum", (0,)),
        Case("mid dim", "sum f32 (1024,1024,2) d1", (1024, 1024, 2), F32, "sum", (1,)),
        Case("mid dim", "sum f32 (64,4096,8) d1", (64, 4096, 8), F32, "sum", (1,)),
        Case("mid dim", "sum f32 (8,65536,4) d1", (8, 65536, 4), F32, "sum", (1,)),
        Case("long rows", "sum f32 (8,131072) d1", (8, 131072), F32, "sum", (1,)),
        Case("long rows", "sum f32 (64,65536) d1", (64, 65536), F32, "sum", (1,)),
        Case(
            "BN stats",
            "sum f32 (64,256,56,56) NHWC d(0,2,3)",
            (64, 256, 56, 56),
            F32,
            "sum",
            (0, 2, 3),
            "channels_last",
        ),
        Case(
            "BN stats",
            "sum f32 (64,256,56,56) NCHW d(0,2,3)",
            (64, 256, 56, 56),
            F32,
            "sum",
            (0, 2, 3),
        ),
        Case(
            "strided", "sum f32 (8192,16384)[:, ::2] d1", (8192, 16384), F32, "sum", (1,), "step2"
        ),
        Case("loss", "sum f32 (8192,)", (8192,), F32, "sum", None, latency=True),
        # The rest of the family, on shapes where a sum or amax cell gives the comparison.
        Case("family", "mean f32 2^28", (1 << 28,), F32, "mean", None),
        Case("family", "mean f32 (16384,16384) d1", (16384, 16384), F32, "mean", (1,)),
        Case("family", "prod f32 (16384,16384) d0", (16384, 16384), F32, "prod", (0,)),
        Case("family", "amin bf16 (8192,8192) d1", (8192, 8192), BF16, "amin", (1,)),
        Case("family", "argmax f32 2^28", (1 << 28,), F32, "argmax", None),
        Case(
            "family", "argmax bf16 (1,128256) d1", (1, 128256), BF16, "argmax", (1,), latency=True
        ),
        Case(
            "family", "argmax bf16 (64,128256) d1", (64, 128256), BF16, "argmax", (1,), latency=True
        ),
    ]
    for e in (10, 14, 16, 20, 22, 24):
        cases.append(Case("latency", f"sum f32 2^{e}", (1 << e,), F32, "sum", None, latency=True))
    if quick:
        cases = [c for c in cases if math.prod(c.shape) <= (1 << 28)]
    return cases


def _one_dim(case: Case):
    if case.dim is not None and len(case.dim) != 1:
        raise ValueError(f"{case.name}: {case.op} cells take one dim")
    return None if case.dim is None else case.dim[0]


def torch_fn(case: Case):
    op = getattr(torch, case.op)
    if case.op in ("amax", "amin"):
        return lambda x: op(x, case.dim or ())
    if case.op in ("prod", "argmax"):  # torch's take one dim
        d = _one_dim(case)
        return (lambda x: op(x)) if d is None else (lambda x: op(x, d))
    return (lambda x: op(x, case.dim)) if case.dim else (lambda x: op(x))


def ours_fn(case: Case):
    op = getattr(torch_reduce, case.op)
    if case.op in ("amax", "amin"):
        return lambda x: op(x, case.dim or ())
    if case.op == "argmax":
        return lambda x: op(x, _one_dim(case))
    return lambda x: op(x, case.dim)


CUPY_OPS = {
    "sum": "sum",
    "mean": "mean",
    "prod": "prod",
    "amax": "max",
    "amin": "min",
    "argmax": "argmax",
}


def cupy_fn(case: Case, x: torch.Tensor):
    if cupy is None or x.dtype == BF16:
        return None
    cx = cupy.from_dlpack(x)
    axis = _one_dim(case) if case.op == "argmax" else case.dim
    f = getattr(cupy, CUPY_OPS[case.op])
    return lambda: f(cx, axis=axis)


CEILING_SRC = r"""
extern "C" __global__ void read_stream(const float4* __restrict__ p, long long n, float* out) {
  float acc = 0.f;
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  const long long step = (long long)gridDim.x * blockDim.x;
  for (; i + 3 * step < n; i += 4 * step) {
    float4 a = p[i], b = p[i + step], c = p[i + 2 * step], d = p[i + 3 * step];
    acc += a.x + a.y + a.z + a.w + b.x + b.y + b.z + b.w + c.x + c.y + c.z + c.w + d.x + d.y + d.z + d.w;
  }
  for (; i < n; i += step) { float4 a = p[i]; acc += a.x + a.y + a.z + a.w; }
  if (acc == 1.2345e-30f) out[0] = acc;  // keeps the loads alive, never true on random data
}

// Sized to the input: one block of 256 threads per 16 KiB, each thread's four loads issued
// before any addition (no loop, no tail). On a few MiB the grid-stride stream above leaves
// most threads one load of its tail loop. SIZED_LOADS: defined at compile time (_stream_fn).
extern "C" __global__ void read_sized(const float4* __restrict__ p, long long n, float* out) {
  const long long step = (long long)gridDim.x * blockDim.x;
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  float4 v[SIZED_LOADS];
#pragma unroll
  for (int k = 0; k < SIZED_LOADS; ++k)
    v[k] = i + k * step < n ? p[i + k * step] : make_float4(0.f, 0.f, 0.f, 0.f);
  float acc = 0.f;
#pragma unroll
  for (int k = 0; k < SIZED_LOADS; ++k) acc += v[k].x + v[k].y + v[k].z + v[k].w;
  if (acc == 1.2345e-30f) out[0] = acc;
}
"""
# 16-byte loads per thread of read_sized (passed to the compiler as -DSIZED_LOADS)
SIZED_LOADS = 4


def _stream_fn(x: torch.Tensor, kernel: str, blocks_of):
    """CEILING_SRC's `kernel` over as many bytes as x holds, on blocks_of(16-byte loads) blocks
    of 256 threads (None without CuPy)."""
    if cupy is None:
        return None
    kern = cupy.RawKernel(CEILING_SRC, kernel, options=(f"-DSIZED_LOADS={SIZED_LOADS}",))
    flat = torch.empty(x.numel() * x.element_size() // 16 * 4, device="cuda")  # same byte count
    n = flat.numel() // 4
    cflat = cupy.from_dlpack(flat)
    out = cupy.zeros(1, dtype=cupy.float32)
    blocks = blocks_of(n)
    return lambda: kern((blocks,), (256,), (cflat, cupy.int64(n), out))


def ceiling_fn(x: torch.Tensor):
    """A read-only stream over the same bytes with 16-byte loads: the bandwidth ceiling."""
    return _stream_fn(
        x, "read_stream", lambda n: torch.cuda.get_device_properties(0).multi_processor_count * 8
    )


def sized_stream_fn(x: torch.Tensor):
    """The same bytes read by a stream sized to them (read_sized: every load of a thread issued
    up front): the tighter ceiling on inputs of a few MiB, where a peer may pass the grid-stride
    stream. bench/sweep.py takes the faster of the two."""
    return _stream_fn(x, "read_sized", lambda n: max(1, -(-n // (256 * SIZED_LOADS))))


SMALL_BYTES = 16 << 20
PLAIN_TIMINGS = 5


def bench_ms(fn) -> float:
    return tt.do_bench(fn, warmup=25, rep=100, return_mode="median")


def graph_ms(fn) -> float:
    return tt.do_bench_cudagraph(fn, rep=50, return_mode="median")


def timed(timer, name: str, fn) -> float:
    """timer(fn), for "plain" with the plain kernels forced around it (read at each call, and at
    capture for a CUDA graph)."""
    if name != "plain":
        return timer(fn)
    with forced_launch("plain"):
        return timer(fn)


def check(case: Case, x: torch.Tensor) -> None:
    ours, theirs = ours_fn(case)(x), torch_fn(case)(x)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype, case.name
    if case.op in ("amax", "amin", "argmax"):
        assert torch.equal(ours, theirs), case.name
    elif case.op == "prod":
        # float32 products of K near-1 values drift by up to ~K ulps (torch.prod's too)
        ref = torch_fn(case)(x.double())
        k = x.numel() // ours.numel()
        assert torch.allclose(ours.double(), ref, rtol=k * 2.0**-23, atol=0), case.name
    else:
        ref = torch_fn(case)(x.double())
        # the result's own rounding too: 16-bit outputs hold 8 (bfloat16) or 11 significant bits
        u = {torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11}.get(ours.dtype, 0.0)
        tol = 1e-5 * torch_fn(case)(x.double().abs()) + u * ref.abs() + 1e-6
        assert ((ours.double() - ref).abs() <= tol).all(), case.name


def run_case(case: Case, inductor: bool, peers: bool = True) -> dict:
    """One cell: treduce, torch eager, the read ceiling, and with `peers` CuPy/CUB and the plain
    kernels (Inductor with `inductor`); CUDA-graph times for small and latency cells."""
    torch.manual_seed(0)
    x = case.make()
    nbytes = x.numel() * x.element_size()
    check(case, x)
    row = {"class": case.cls, "case": case.name, "bytes": nbytes}
    impls = {"treduce": lambda: ours_fn(case)(x), "torch": lambda: torch_fn(case)(x)}
    if inductor:
        torch._dynamo.reset()
        compiled = torch.compile(torch_fn(case), dynamic=False)
        compiled(x)
        impls["inductor"] = lambda: compiled(x)
    cf = cupy_fn(case, x) if peers else None
    if cf is not None:
        cupy_core.set_routine_accelerators(["cub"])
        impls["cub"] = cf
    ceil = ceiling_fn(x)
    if ceil is not None:
        impls["ceiling"] = ceil
    # Floating sums and means run in the canonical order (issue 4); "plain" times the plain
    # kernels (float accumulators) of the same strategy (forced_launch("plain")) on the same
    # input, for the speed condition (at most 3% slower). The variable is set around the timer,
    # not inside the timed call, whose host time it would lengthen (docs/perf-log.md, step 105).
    if peers and case.op in ("sum", "mean") and x.dtype.is_floating_point:
        impls["plain"] = impls["treduce"]
    for name, fn in impls.items():
        try:
            row[f"{name}_us"] = timed(bench_ms, name, fn) * 1e3
        except Exception as e:  # a peer that cannot run this cell is reported, not fatal
            row[f"{name}_us"] = None
            row[f"{name}_error"] = f"{type(e).__name__}: {e}"[:200]
    # x plain is read against 0.97 (issue 4), a finer line than the host's drift between two
    # timings minutes apart on cells of a few µs (docs/perf-log.md, step 105): treduce and plain are timed
    # PLAIN_TIMINGS times each, alternately, and each keeps the median of its timings.
    if "plain" in impls and row.get("treduce_us") and row.get("plain_us"):
        ours, plain = [row["treduce_us"]], [row["plain_us"]]
        for _ in range(PLAIN_TIMINGS - 1):
            ours.append(timed(bench_ms, "treduce", impls["treduce"]) * 1e3)
            plain.append(timed(bench_ms, "plain", impls["plain"]) * 1e3)
        row["treduce_us"], row["plain_us"] = statistics.median(ours), statistics.median(plain)
    # Small cells also get CUDA-graph times: their eager times carry host jitter (docs/perf-log.md, step 8).
    if case.latency or nbytes <= SMALL_BYTES:
        for name in ("treduce", "torch", "plain"):
            if name in impls:
                row[f"{name}_graph_us"] = timed(graph_ms, name, impls[name]) * 1e3
    impls.clear()
    x = None  # the input's memory back to the allocator before the next cell
    torch.cuda.empty_cache()
    return row


# Goals 2 and 3 (issue 3) name bandwidths for whole classes at given sizes; the grid above has
# one or two cells of each class. These cells cover what the goals name, each class at its
# size, timed against torch and the read ceiling (no Inductor or CUB: goal 1 is the grid's).
# Goal 2: every cell of 1 GiB for sum and amax, float32 and bfloat16, full, rows, columns and a
# mid dim, at >= 4.28 TB/s. Goal 3: the weak classes at 256 MB (NHWC statistics at the shape
# the issue names, 196 MB) at >= 3.8 TB/s.
GOAL_TBS = {2: 4.28, 3: 3.8}


def goal_cells() -> list[tuple[int, Case]]:
    cells = []
    for dt, tag, e in ((F32, "f32", 4), (BF16, "bf16", 2)):
        n = (1 << 30) // e  # 1 GiB
        r = 16384
        for op in ("sum", "amax"):
            cells += [
                (2, Case("full", f"{op} {tag} 2^{n.bit_length() - 1}", (n,), dt, op, None)),
                (2, Case("rows", f"{op} {tag} ({r},{n // r}) d1", (r, n // r), dt, op, (1,))),
                (2, Case("columns", f"{op} {tag} ({n // r},{r}) d0", (n // r, r), dt, op, (0,))),
                (
                    2,
                    Case(
                        "mid dim",
                        f"{op} {tag} (64,{n // 65536},1024) d1",
                        (64, n // 65536, 1024),
                        dt,
                        op,
                        (1,),
                    ),
                ),
            ]
    for dt, tag, op, e in ((F32, "f32", "sum", 4), (BF16, "bf16", "amax", 2)):
        n = (256 << 20) // e  # 256 MB
        for k in (2, 4, 8, 16, 32, 64, 128):
            cells.append(
                (3, Case("short rows", f"{op} {tag} ({n // k},{k}) d1", (n // k, k), dt, op, (1,)))
            )
    n = (256 << 20) // 4
    for k in (1, 2, 8, 32, 128):
        cells.append(
            (3, Case("narrow columns", f"sum f32 ({n // k},{k}) d0", (n // k, k), F32, "sum", (0,)))
        )
    for c in (1, 2, 4, 8, 16):
        cells.append(
            (
                3,
                Case(
                    "mid dim",
                    f"sum f32 (64,{n // 64 // c},{c}) d1",
                    (64, n // 64 // c, c),
                    F32,
                    "sum",
                    (1,),
                ),
            )
        )
    cells.append(
        (
            3,
            Case(
                "BN stats",
                "sum f32 (64,256,56,56) NHWC d(0,2,3)",
                (64, 256, 56, 56),
                F32,
                "sum",
                (0, 2, 3),
                "channels_last",
            ),
        )
    )
    n = (256 << 20) // 2
    cells += [
        (3, Case("bf16 amax", "amax bf16 2^27", (n,), BF16, "amax", None)),
        (3, Case("bf16 amax", "amax bf16 (8192,16384) d1", (8192, 16384), BF16, "amax", (1,))),
        (3, Case("bf16 amax", "amax bf16 (16384,8192) d0", (16384, 8192), BF16, "amax", (0,))),
        (3, Case("bf16 amax", "amax bf16 (64,2048,1024) d1", (64, 2048, 1024), BF16, "amax", (1,))),
        (
            3,
            Case(
                "bf16 amax",
                "amax bf16 (64,512,64,64) NHWC d(0,2,3)",
                (64, 512, 64, 64),
                BF16,
                "amax",
                (0, 2, 3),
                "channels_last",
            ),
        ),
    ]
    return cells


def run_goal_cells() -> list[dict]:
    return [
        {"goal": goal, **run_case(case, inductor=False, peers=False)}
        for goal, case in tqdm(goal_cells(), desc="goals 2-3", file=sys.stderr)
    ]


def tb_per_s(nbytes: int, us: float) -> float:
    """TB/s of `nbytes` read in `us` µs."""
    return nbytes / (us * 1e-6) / 1e12


def geomean(xs: list[float]) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs))


def why_goal(r: dict, tbs: float) -> tuple[str, str]:
    """(reason, what would close it) for a goal-2 or goal-3 cell below `tbs` TB/s: first the
    read-only stream's own rate on the cell (measured in the same run), then the kernel's gap
    to it by class (docs/perf-log.md, "Issue 3's goals")."""
    if not r.get("ceiling_us"):
        return "no ceiling measured", "—"
    stream = tb_per_s(r["bytes"], r["ceiling_us"])
    pct = r["ceiling_us"] / r["treduce_us"]
    if stream < tbs:
        return (
            f"the read-only stream itself reads {stream:.2f} TB/s on these bytes; ours is "
            f"at {pct:.0%} of it",
            f"nothing here: {tbs} TB/s is above the stream's rate; "
            "the per-class gaps to the stream are in docs/perf-log.md",
        )
    if pct >= 0.95:
        return (
            f"at {pct:.0%} of a stream that reads {stream:.2f} TB/s; {tbs} is "
            f"{tbs / stream:.1%} of it",
            "a host whose stream reads faster (runs 39 and 42 "
            "met more of these), or the last percent of the read",
        )
    case, cls = r["case"], r["class"]
    if "bf16" in case and case.startswith("sum"):
        return (
            f"at {pct:.0%} of the stream: each bfloat16 value widened to float64 on the XU "
            "pipe (step 95), and for columns and mid dims the column kernel's last wave",
            "a cheaper exact widening (the integer-pipe ones measured slower, steps 96-97)",
        )
    if cls in ("columns", "mid dim"):
        return (
            f"at {pct:.0%} of the stream: the column kernel's tiles leave its last wave "
            "partial (step 54's makespan; step 82's fine splits recover part of it)",
            "a split of the outputs that fills the last wave",
        )
    return f"at {pct:.0%} of the stream", "—"


def fmt_goal_cells(rows: list[dict]) -> str:
    lines = []
    for goal, tbs in GOAL_TBS.items():
        sel = [r for r in rows if r["goal"] == goal]
        if not sel:
            continue
        met = [r for r in sel if tb_per_s(r["bytes"], r["treduce_us"]) >= tbs]
        lines += [
            f"### Goal {goal}: ≥ {tbs} TB/s ({len(met)} of {len(sel)} cells)",
            "",
            "| class | case | MB | treduce µs | TB/s | ceiling TB/s | % ceiling | × torch | met "
            "| why not | what would close it |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in sel:
            us = r["treduce_us"]
            t = tb_per_s(r["bytes"], us)
            pct = f"{100 * r['ceiling_us'] / us:.0f}%" if r.get("ceiling_us") else "—"
            ceil = f"{tb_per_s(r['bytes'], r['ceiling_us']):.2f}" if r.get("ceiling_us") else "—"
            xt = f"{r['torch_us'] / us:.2f}" if r.get("torch_us") else "—"
            reason, close = ("", "") if t >= tbs else why_goal(r, tbs)
            lines.append(
                f"| {r['class']} | {r['case']} | {r['bytes'] / 1e6:.0f} | {us:.1f} | "
                f"{t:.2f} | {ceil} | {pct} | {xt} | "
                f"{'yes' if t >= tbs else '**no**'} | {reason} | {close} |"
            )
        lines.append("")
    return "\n".join(lines)


# Goal 7 (issue 3): a non-contiguous input against the same reduction of a contiguous input of
# the same bytes. Each entry: (name, make the view, make the reference, op, dims); both are made
# from the same random values where the layouts allow it.
def _misaligned(n: int, dtype: torch.dtype, offset: int = 1) -> torch.Tensor:
    return torch.randn(n + offset, device="cuda").to(dtype)[offset:]


def layout_pairs() -> list[tuple]:
    def t(shape):
        return lambda: torch.randn(shape, device="cuda").t()

    return [
        ("transposed (8192,8192).t() d1", t((8192, 8192)), lambda v: v.contiguous(), "sum", (1,)),
        ("transposed (8192,8192).t() d0", t((8192, 8192)), lambda v: v.contiguous(), "sum", (0,)),
        (
            "channels_last (64,256,56,56) d(0,2,3)",
            lambda: torch.randn(64, 256, 56, 56, device="cuda").contiguous(
                memory_format=torch.channels_last
            ),
            lambda v: v.contiguous(),
            "sum",
            (0, 2, 3),
        ),
        (
            "step 2 (8192,16384)[:, ::2] d1, vs the logical bytes",
            lambda: torch.randn(8192, 16384, device="cuda")[:, ::2],
            lambda v: v.contiguous(),
            "sum",
            (1,),
        ),
        (
            "step 2 (8192,16384)[:, ::2] d1, vs the bytes read",
            lambda: torch.randn(8192, 16384, device="cuda")[:, ::2],
            lambda v: torch.randn(8192, 16384, device="cuda"),
            "sum",
            (1,),
        ),
        # A misaligned view is contiguous, so its reference is a copy (new, aligned storage).
        (
            "misaligned x[1:] f32 2^28",
            lambda: _misaligned(1 << 28, F32),
            lambda v: v.clone(),
            "sum",
            None,
        ),
        (
            "misaligned rows f32 (16384,16384) d1",
            lambda: _misaligned(16384 * 16384, F32).view(16384, 16384),
            lambda v: v.clone(),
            "sum",
            (1,),
        ),
        (
            "misaligned x[1:] bf16 2^28",
            lambda: _misaligned(1 << 28, BF16),
            lambda v: v.clone(),
            "sum",
            None,
        ),
        (
            "misaligned x[1:] bf16 amax 2^28",
            lambda: _misaligned(1 << 28, BF16),
            lambda v: v.clone(),
            "amax",
            None,
        ),
    ]


def run_layouts() -> list[dict]:
    rows = []
    for name, make, make_ref, op, dims in tqdm(layout_pairs(), desc="layouts", file=sys.stderr):
        torch.manual_seed(0)
        v = make()
        ref = make_ref(v)
        assert ref.data_ptr() % 16 == 0 and ref.is_contiguous(), name
        case = Case("layout", name, tuple(v.shape), v.dtype, op, dims)
        for x in (v, ref):
            check(case, x)
        row = {"case": name, "bytes": ref.numel() * ref.element_size()}
        for key, x in (("view", v), ("contig", ref)):
            row[f"{key}_us"] = bench_ms(lambda: ours_fn(case)(x)) * 1e3
            row[f"{key}_torch_us"] = bench_ms(lambda: torch_fn(case)(x)) * 1e3
        rows.append(row)
        del v, ref
        torch.cuda.empty_cache()
    return rows


def fmt_layouts(rows: list[dict]) -> str:
    lines = [
        "| view | ours µs | contiguous µs | contiguous / view (goal 7: ≥ 0.90) | "
        "torch view / contiguous µs |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['case']} | {r['view_us']:.1f} | {r['contig_us']:.1f} | "
            f"{r['contig_us'] / r['view_us']:.2f} | {r['view_torch_us']:.1f} / "
            f"{r['contig_torch_us']:.1f} |"
        )
    return "\n".join(lines)


# Goal 5 (issue 3): host time per call. Back-to-back calls on a 2^10-element CUDA tensor, no
# synchronisation inside the loop: the GPU runs each ~2 µs kernel faster than the host issues the
# next, so the time per call is the host path (Python wrapper, dispatcher, plan, launch). The
# call forms are interleaved, each timed once per repetition, so that the host's drift hits them
# alike; the median over the repetitions.
HOST_PEERS = {
    "torch_reduce.sum(x)": "torch.sum(x)",
    "torch.ops.treduce.sum(x)": "torch.sum(x)",
    "torch_reduce.amax(x)": "torch.amax(x)",
}


def host_overhead(n_calls: int = 3000, reps: int = 21) -> dict:
    x = torch.randn(1 << 10, device="cuda")
    fns = {
        "torch.sum(x)": lambda: torch.sum(x),
        "torch_reduce.sum(x)": lambda: torch_reduce.sum(x),
        "torch.ops.treduce.sum(x)": lambda: torch.ops.treduce.sum(x),
        "torch.amax(x)": lambda: torch.amax(x),
        "torch_reduce.amax(x)": lambda: torch_reduce.amax(x),
    }
    times = {name: [] for name in fns}
    for fn in fns.values():
        for _ in range(300):
            fn()
    torch.cuda.synchronize()
    for _ in range(reps):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            for _ in range(n_calls):
                fn()
            torch.cuda.synchronize()
            times[name].append((time.perf_counter() - t0) / n_calls * 1e6)
    return {name: statistics.median(t) for name, t in times.items()}


def fmt_host(h: dict) -> str:
    lines = [
        "| call (2^10 float32, CUDA) | host µs per call (median) | × its torch call |",
        "|---|---|---|",
    ]
    for k, v in h.items():
        peer = HOST_PEERS.get(k)
        ratio = f"{v / h[peer]:.2f} (of `{peer}`)" if peer in h else "1.00"
        lines.append(f"| `{k}` | {v:.2f} | {ratio} |")
    return "\n".join(lines)


def fmt_extras(extras: dict) -> str:
    return (
        f"## Non-contiguous inputs (goal 7)\n\nThe same reduction of a view and of a "
        f"contiguous input of the same bytes, in the same run.\n\n"
        f"{fmt_layouts(extras['layouts'])}\n\n## Host time per call (goal 5)\n\n"
        f"{fmt_host(extras['host_us'])}\n"
        + (
            f"\n## Goals 2 and 3: each class at the size the goal names\n\n"
            f"Every sum and amax of 1 GiB (goal 2) and the weak classes at 256 MB (goal 3), "
            f"against torch and the read ceiling in the same run.\n\n"
            f"{fmt_goal_cells(extras['goal_cells'])}"
            if extras.get("goal_cells")
            else ""
        )
    )


def fmt_table(rows: list[dict]) -> str:
    peers = ["torch", "inductor", "cub", "plain"]
    head = (
        "| class | case | treduce µs | TB/s | % ceiling | "
        + " | ".join(f"× {p}" for p in peers)
        + " | graph µs (ours / torch / plain) |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for r in rows:
        us = r.get("treduce_us")
        tbs = tb_per_s(r["bytes"], us) if us else float("nan")
        ceil = r.get("ceiling_us")
        pct = f"{100 * ceil / us:.0f}%" if ceil and us else "—"
        ratios = []
        for p in peers:
            t = r.get(f"{p}_us")
            ratios.append(f"{t / us:.2f}" if t and us else "—")
        graph = (
            f"{r['treduce_graph_us']:.1f} / {r['torch_graph_us']:.1f}"
            if "treduce_graph_us" in r
            else ""
        )
        if graph and r.get("plain_graph_us"):
            graph += f" / {r['plain_graph_us']:.1f}"
        lines.append(
            f"| {r['class']} | {r['case']} | {us:.1f} | {tbs:.2f} | {pct} | "
            + " | ".join(ratios)
            + f" | {graph} |"
        )
    return "\n".join(lines)


def best_peer(row: dict) -> tuple[float, str] | None:
    """(time, name) of the fastest peer measured on the cell, or None."""
    peers = [(row[f"{p}_us"], p) for p in PEERS if row.get(f"{p}_us")]
    return min(peers) if peers else None


def ahead_of_best(rows: list[dict]) -> tuple[int, int]:
    """(cells at >= 1.00x the best peer, cells with a peer measured): goal 1's count."""
    best = [best_peer(r)[0] / r["treduce_us"] for r in rows if r.get("treduce_us") and best_peer(r)]
    return sum(b >= 1.0 for b in best), len(best)


def summary(rows: list[dict]) -> str:
    """Geometric mean of each peer's time over ours (issue 3, goal 6), and how many cells are at
    least as fast as the best peer (goal 1)."""
    lines = []
    for peer in PEERS:
        r = [
            row[f"{peer}_us"] / row["treduce_us"]
            for row in rows
            if row.get(f"{peer}_us") and row.get("treduce_us")
        ]
        if r:
            lines.append(
                f"- geometric mean × {peer}: {geomean(r):.2f} over {len(r)} cells "
                f"(lowest {min(r):.2f})"
            )
    n, total = ahead_of_best(rows)
    lines.append(f"- cells at ≥ 1.00× the best peer: {n} of {total}")
    plain = [
        (row["plain_us"] / row["treduce_us"], row["case"])
        for row in rows
        if row.get("plain_us") and row.get("treduce_us")
    ]
    if plain:
        slow = [f"{c} ({r:.2f})" for r, c in plain if r < 0.97]
        lines.append(
            f"- canonical sums/means against the plain kernels (× plain; issue 4 asks "
            f"≥ 0.97): {len(plain) - len(slow)} of {len(plain)} cells meet it"
            + (f"; below: {', '.join(slow)}" if slow else "")
        )
    graph = [
        (row["plain_graph_us"] / row["treduce_graph_us"], row["case"])
        for row in rows
        if row.get("plain_graph_us") and row.get("treduce_graph_us")
    ]
    if graph:
        slow = [f"{c} ({r:.2f})" for r, c in graph if r < 0.97]
        lines.append(
            f"- the same in a CUDA graph (cells of at most 16 MiB and latency cells, "
            f"without host time): {len(graph) - len(slow)} of {len(graph)} cells at "
            f"≥ 0.97× plain" + (f"; below: {', '.join(slow)}" if slow else "")
        )
    return "\n".join(lines)


# Why a cell is behind the best peer (issue 3's "done when": each unmet cell with its measured
# figure, the reason it falls short and what would close it). Entries: a test on the row, the
# reason (each measured: the docs/perf-log.md step that measured it; figures of this run come in
# through the row) and what would close it. The first entry whose test holds applies; a cell no
# entry covers says so.
def _pct(r: dict) -> str:
    return f"{r['ceiling_us'] / r['treduce_us']:.0%}" if r.get("ceiling_us") else "—"


def _graph(r: dict) -> str:
    if r.get("treduce_graph_us") and r.get("torch_graph_us"):
        return (
            f" In a CUDA graph (no host time): ours {r['treduce_graph_us']:.1f} µs, torch "
            f"{r['torch_graph_us']:.1f}."
        )
    return ""


def _is(*names: str):
    return lambda r: r["case"] in names


def _tie(r: dict) -> bool:
    best = best_peer(r)
    return best is not None and best[0] / r["treduce_us"] >= 0.99


WHY = [
    (
        _tie,
        lambda r: (
            "within 1% of the peer: less than the 1-3% by which cells with unchanged kernels "
            "move between runs (runs 41-43)."
        ),
        "nothing measurable in one run",
    ),
    (
        lambda r: r["class"] in ("latency", "loss") and r["bytes"] <= (1 << 18),
        lambda r: (
            "a few µs eager: an empty launch takes 3.2-3.4 µs event to event after the flush, "
            "and do_bench's queue adds 0.5-1.0 µs to every peer's launch (step 125); the "
            "peers' host paths move between runs." + _graph(r)
        ),
        "host and launch time, not the kernel: a CUDA graph, or the sum fused into its producer",
    ),
    (
        lambda r: r["class"] == "latency",
        lambda r: (
            "the split merge's serial tail after the last leaf (round tree, node store, "
            "arrival, merge; steps 64, 108) on top of the launch." + _graph(r)
        ),
        "a tail without the global round trip: splits merged in a cluster where they are made",
    ),
    (
        _is("amax bf16 (8192,8192) d1", "amin bf16 (8192,8192) d1", "sum f32 (4096,4096) d1"),
        lambda r: (
            f"ours at {_pct(r)} of our read-stream kernel over the same 64-128 MB; Inductor's "
            "row kernel reads faster than that stream there (step 49: 18 registers and 90% "
            "of warps active against 34-48%; step 114: our rows' blocks keep 32 warps per "
            "SM, Inductor's 64)."
        ),
        "a read faster than our stream kernel at 64-128 MB: more resident warps without spills "
        "(step 126: 40 registers with spills measured 10-14% slower)",
    ),
    (
        _is("sum f32 (64,256,56,56) NCHW d(0,2,3)"),
        lambda r: (
            "768 blocks at 3 per SM are 1.94 waves, and a third of the stall cycles wait on "
            'the stage\'s shared memory (Nsight Compute, "Issue 3 goals").'
        ),
        "whole waves: 8 output lanes per block measured 3.7% faster (step 127's harness)",
    ),
    (
        lambda r: r["class"] == "short rows" and r["case"].startswith("sum f32"),
        lambda r: (
            "each element widened to float64 and folded in the canonical order (issue 4), "
            "against Inductor's float32 additions; rows of 2 also write half their input's "
            f"bytes. At {_pct(r)} of the read stream."
        ),
        "nothing cheaper at the same exactness: float32 and integer widenings measured no faster "
        "(steps 87, 96, 97)",
    ),
    (
        lambda r: r["class"] in ("mid dim", "long rows"),
        lambda r: (
            "8-16 MB cells that are half launch and merge tail: Inductor's eager time on them "
            "moves 1.3-6x between runs with its host path (run 43 against session 32's "
            "call)." + _graph(r)
        ),
        "both phases of the interleaved leaves in flight (registers beyond 80, step 127) and a "
        "merge without the global round trip",
    ),
    (
        lambda r: r["case"].startswith("sum f16"),
        lambda r: (
            f"at {_pct(r)} of the read stream: each 16-bit value is widened to float64 on "
            "the XU pipe, 63% busy against float32's 36% (Nsight Compute, step 95)."
        ),
        "a cheaper exact widening: on the integer pipes, all values or half, measured slower "
        "(steps 96, 97); open",
    ),
    (
        lambda r: r["class"] in ("columns", "bias grad"),
        lambda r: (
            f"at {_pct(r)} of the read stream: the column plan's busiest block slot takes "
            "more rounds than an even share (step 54: columns (16384, 16384) as 768 blocks "
            "of 5-6 one-round splits, 11 rounds for the busiest slot)."
        ),
        "splits that fill the last wave evenly (step 82's fine splits, for tiles of a wave or "
        "more)",
    ),
    (
        lambda r: r["class"] == "strided",
        lambda r: (
            "a step of 2 reads every 32-byte sector of the 512 MB, as torch does; ours "
            "reads them at 0.98x of our contiguous sum of those bytes (goal 7's table)."
        ),
        "the rows' staged fold at the contiguous rows' rate (one block per output, as "
        "canon_small_kernel does for stride 1)",
    ),
    (
        lambda r: r["bytes"] >= (256 << 20),
        lambda r: (
            f"at {_pct(r)} of the read stream, within a few % of the peer: the staged phases "
            "wait on L1TEX a third of their cycles, each leaf a chain of 64 dependent double "
            "additions (steps 57, 59)."
        ),
        "more loads in flight per warp without more registers (step 11f's variant cost them)",
    ),
]


def why(row: dict) -> tuple[str, str]:
    """(reason, what would close it) for a cell behind the best peer (WHY)."""
    for test, reason, close in WHY:
        if test(row):
            return reason(row), close
    return "no reason recorded for this cell", "—"


def goals(rows: list[dict], extras: dict) -> str:
    """Issue 3's goals in this run, each with its figure, and for an unmet one the measured
    reason and what would close it (the per-cell reasons of goal 1 are in behind())."""
    by = {r["case"]: r for r in rows}
    out = ["## Issue 3 goals in this run", ""]
    n, total = ahead_of_best(rows)
    if total:
        out.append(
            f"1. Every cell ≥ the best peer: **{n} of {total}**"
            + (
                "."
                if n == total
                else '; each other cell is in "Cells behind the best peer" below, with its reason.'
            )
        )
    cells = extras.get("goal_cells") or []
    for goal, tbs in GOAL_TBS.items():
        sel = [r for r in cells if r["goal"] == goal]
        if not sel:
            continue
        met = sum(tb_per_s(r["bytes"], r["treduce_us"]) >= tbs for r in sel)
        stream = [tb_per_s(r["bytes"], r["ceiling_us"]) for r in sel if r.get("ceiling_us")]
        pct = [r["ceiling_us"] / r["treduce_us"] for r in sel if r.get("ceiling_us")]
        line = (
            f"{goal}. ≥ {tbs} TB/s at {'1 GiB' if goal == 2 else '256 MB'}: **{met} of {len(sel)}**"
        )
        if stream and met < len(sel):
            line += (
                f". The read-only stream itself reads {min(stream):.2f}-{max(stream):.2f} "
                f"TB/s on these cells in this run; ours {min(pct):.0%}-{max(pct):.0%} of it "
                f'(per cell in "Goals 2 and 3")'
            )
            if max(stream) < tbs:
                line += ", so no kernel we have measured reaches the goal's figure here"
            else:
                line += (
                    ". Below 95% of the stream: the float64 widening of 16-bit sums, "
                    "partial last waves of the column and mid-dim kernels, rows of 2-4 "
                    "writing a quarter to half of their input's bytes (docs/perf-log.md, "
                    '"Issue 3\'s goals")'
                )
        out.append(line + ".")
    lr = [by[c] for c in ("sum f32 (8,131072) d1", "sum f32 (64,65536) d1") if c in by]
    if lr:
        parts = []
        for r in lr:
            x = r["torch_us"] / r["treduce_us"]
            part = f"{r['case']} {x:.2f}× torch ({r['treduce_us']:.1f} µs"
            if x < 2 and r.get("ceiling_us"):
                part += (
                    f"; 2× needs ≤ {r['torch_us'] / 2:.1f} µs, and the read stream alone "
                    f"takes {r['ceiling_us']:.1f} µs eager"
                )
                if r["ceiling_us"] <= r["torch_us"] / 2:
                    part += (
                        ", so closing it needs the stream's own time: ours spends the "
                        "rest in the chunks' cluster merge and store (steps 110, 113)"
                    )
            if r.get("treduce_graph_us"):
                part += (
                    f"; in a CUDA graph {r['treduce_graph_us']:.1f} against torch's "
                    f"{r['torch_graph_us']:.1f}"
                )
            parts.append(part + ")")
        below = any(
            r.get("ceiling_us")
            and r["ceiling_us"] > r["torch_us"] / 2
            and r["torch_us"] / r["treduce_us"] < 2
            for r in lr
        )
        gx = [
            r["torch_graph_us"] / r["treduce_graph_us"]
            for r in lr
            if r.get("treduce_graph_us") and r.get("torch_graph_us")
        ]
        out.append(
            "4. Few long rows ≥ 2× torch: "
            + "; ".join(parts)
            + "."
            + (
                " Where 2× torch is below the read stream's own eager time, no kernel that reads "
                "the input closes it"
                + (
                    f"; in a CUDA graph the rows, split within one launch "
                    f"(step 113), run {min(gx):.2f}-{max(gx):.2f}× torch"
                    if gx
                    else ""
                )
                + "."
                if below
                else ""
            )
        )
    lat = []
    for case, eager, graph in (
        ("sum f32 2^16", 7, 3),
        ("sum f32 2^20", None, 4),
        ("sum f32 2^22", 8, None),
    ):
        r = by.get(case)
        if not r:
            continue
        if eager is not None:
            text = f"{case[8:]} eager {r['treduce_us']:.1f} µs (≤ {eager}"
            if r.get("ceiling_us"):
                text += f"; the read stream {r['ceiling_us']:.1f}"
                if r["ceiling_us"] > eager:
                    text += ", above the goal itself"
            lat.append(text + ")")
        if graph is not None and r.get("treduce_graph_us"):
            lat.append(f"{case[8:]} in a CUDA graph {r['treduce_graph_us']:.1f} µs (≤ {graph})")
    host = extras.get("host_us") or {}
    if host.get("torch_reduce.sum(x)") and host.get("torch.sum(x)"):
        lat.append(
            f"host time per call {host['torch_reduce.sum(x)'] / host['torch.sum(x)']:.2f}× "
            f"torch.sum's (≤ 1)"
        )
    if lat:
        out.append(
            "5. Latency: " + "; ".join(lat) + ". Eager: an empty launch is 3.2-3.4 µs of "
            "it and do_bench's queue 0.5-1.0 (step 125); in a graph, 2^16's latency "
            "kernel spends 1.7 of its µs in the leaf's loads (step 64) and 2^20-2^22 the "
            "split merge's serial tail (steps 64, 108). What would close them: a "
            "tail without the global round trip."
        )
    timed = [r for r in rows if r.get("torch_us") and r.get("treduce_us")]
    if timed:
        g = geomean([r["torch_us"] / r["treduce_us"] for r in timed])
        # cells where torch already reads at >= 90% of the stream: no kernel can double it
        near = [r for r in timed if r.get("ceiling_us") and r["ceiling_us"] / r["torch_us"] >= 0.9]
        xs = [r["torch_us"] / r["treduce_us"] for r in near]
        out.append(
            f"6. Geometric mean ≥ 2× torch: **{g:.2f}×**"
            + (
                "."
                if g >= 2 or not near
                else f". Torch reads at ≥ 0.9× the read stream on "
                f"{len(near)} of the {len(timed)} cells (ours {min(xs):.2f}-{max(xs):.2f}× torch "
                "there), which no kernel can double; the mean rises with the cells of goals 1-3."
            )
        )
    views = [r for r in extras.get("layouts") or [] if "logical" not in r["case"]]
    if views:
        worst = min(views, key=lambda r: r["contig_us"] / r["view_us"])
        met = sum(r["contig_us"] / r["view_us"] >= 0.9 for r in views)
        out.append(
            f"7. Non-contiguous within 10%: {met} of {len(views)} views (the lowest "
            f"{worst['contig_us'] / worst['view_us']:.2f}, {worst['case']}; step 2 "
            "counted by the bytes it reads)."
        )
    out.append(
        "8. Over 2^31 elements in one launch: `tests/test_cuda.py::"
        "test_over_two_to_the_31_elements` (the suite, on the H200)."
    )
    return "\n".join(out)


def behind(rows: list[dict]) -> str:
    """Every cell where a peer is faster than treduce (issue 3, goal 1), slowest first: our time,
    the fastest peer and its time, the ratio, % of the read ceiling and × plain. The reasons and
    what would close each class are in docs/perf-log.md ("Issue 3's goals")."""
    out = []
    for r in rows:
        best = best_peer(r)
        if best is None or not r.get("treduce_us"):
            continue
        t, p = best
        if t < r["treduce_us"]:
            out.append((t / r["treduce_us"], r, p, t))
    if not out:
        return "## Cells behind the best peer (goal 1)\n\nNone."
    lines = [
        "## Cells behind the best peer (goal 1)",
        "",
        "Slowest first, each with the measured reason (steps: docs/perf-log.md) and what "
        "would close it.",
        "",
        "| class | case | treduce µs | best peer | peer µs | × best | % ceiling | × plain | "
        "why | what would close it |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for ratio, r, p, t in sorted(out, key=lambda e: e[0]):
        plain = f"{r['plain_us'] / r['treduce_us']:.2f}" if r.get("plain_us") else "—"
        reason, close = why(r)
        lines.append(
            f"| {r['class']} | {r['case']} | {r['treduce_us']:.1f} | {p} | {t:.1f} | "
            f"{ratio:.2f} | {_pct(r)} | {plain} | {reason} | {close} |"
        )
    return "\n".join(lines)


def plots(rows: list[dict], out: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    big = [r for r in rows if r["class"] != "latency"]
    fig, ax = plt.subplots(figsize=(12, 0.32 * len(big) + 1.5))
    names = [r["case"] for r in big]
    ys = range(len(big))
    for k, (impl, color) in enumerate(
        [("treduce", "C0"), ("torch", "C1"), ("inductor", "C2"), ("cub", "C3")]
    ):
        vals = [tb_per_s(r["bytes"], r[f"{impl}_us"]) if r.get(f"{impl}_us") else 0 for r in big]
        ax.barh([y + 0.2 * k for y in ys], vals, height=0.2, label=impl, color=color)
    ceil = [tb_per_s(r["bytes"], r["ceiling_us"]) if r.get("ceiling_us") else 0 for r in big]
    ax.scatter(ceil, [y + 0.3 for y in ys], marker="|", color="k", s=200, label="read ceiling")
    ax.set_yticks([y + 0.3 for y in ys])
    ax.set_yticklabels(names, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("TB/s (bytes read / time)")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "bandwidth.png", dpi=110)
    plt.close(fig)

    lat = [r for r in rows if r["class"] == "latency"]
    if lat:
        fig, ax = plt.subplots(figsize=(6, 4))
        n = [r["bytes"] // 4 for r in lat]
        for key, label in [
            ("treduce_us", "treduce eager"),
            ("torch_us", "torch eager"),
            ("treduce_graph_us", "treduce graph"),
            ("torch_graph_us", "torch graph"),
            ("cub_us", "CUB"),
        ]:
            vals = [r.get(key) for r in lat]
            if any(v is not None for v in vals):
                ax.plot(n, vals, marker="o", label=label)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("N (float32 elements, full sum)")
        ax.set_ylabel("µs")
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out / "latency.png", dpi=110)
        plt.close(fig)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", type=Path, default=Path("bench/out"))
    ap.add_argument("--quick", action="store_true", help="skip cells over 2^28 elements")
    ap.add_argument("--no-inductor", action="store_true")
    ap.add_argument("--only", default="", help="run cells whose name contains this")
    ap.add_argument(
        "--no-extras",
        action="store_true",
        help="skip the layout pairs (goal 7) and the host-overhead loop (goal 5)",
    )
    ap.add_argument(
        "--extras-only",
        action="store_true",
        help="only the layout pairs and the host loop (extras.md, extras.json)",
    )
    ap.add_argument(
        "--render",
        type=Path,
        default=None,
        metavar="RESULTS_JSON",
        help="rewrite results.md and the plots in --out from a results.json; runs "
        "nothing (no GPU needed)",
    )
    args = ap.parse_args()
    if args.render is not None:
        data = json.loads(args.render.read_text())
        extras = {k: v for k, v in data.items() if k not in ("meta", "rows")}
        args.out.mkdir(parents=True, exist_ok=True)
        write_markdown(data["meta"], data["rows"], args.out, extras)
        plots(data["rows"], args.out)
        return
    if args.extras_only:
        args.out.mkdir(parents=True, exist_ok=True)
        extras = {
            "layouts": run_layouts(),
            "host_us": host_overhead(),
            "goal_cells": run_goal_cells(),
        }
        (args.out / "extras.json").write_text(json.dumps(extras, indent=1))
        text = fmt_extras(extras)
        (args.out / "extras.md").write_text(text)
        print(text)
        return
    args.out.mkdir(parents=True, exist_ok=True)
    # The host loop first, in a fresh process: at the end of the sweep (43 compiled graphs,
    # CuPy) the same loop read torch_reduce.sum at 1.09x torch.sum and amax at 0.76x, against
    # 0.86-0.89x and 0.88-0.90x four times over in a fresh process on the same host (docs/perf-log.md,
    # step 106).
    host_us = None if args.no_extras else host_overhead()
    torch._dynamo.config.cache_size_limit = 256
    cases = [c for c in grid(args.quick) if args.only in c.name or args.only in c.cls]
    rows = []
    for case in tqdm(cases, desc="bench", file=sys.stderr):
        rows.append(run_case(case, inductor=not args.no_inductor))
        (args.out / "results.json").write_text(json.dumps(rows, indent=1))
    meta = {
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "cupy": getattr(cupy, "__version__", None),
    }
    extras = {}
    (args.out / "results.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    write_markdown(meta, rows, args.out, extras)
    plots(rows, args.out)
    if not args.no_extras:
        try:
            extras["layouts"] = run_layouts()
            extras["host_us"] = host_us
            extras["goal_cells"] = run_goal_cells()
        except Exception:  # the grid's results are written already
            import traceback

            traceback.print_exc()
            extras = {}
    if extras:
        (args.out / "results.json").write_text(
            json.dumps({"meta": meta, "rows": rows, **extras}, indent=1)
        )
        write_markdown(meta, rows, args.out, extras)
    print(fmt_table(rows))
    print(summary(rows))
    if extras:
        print(fmt_extras(extras))


def write_markdown(meta: dict, rows: list[dict], out: Path, extras: dict) -> None:
    text = (
        f"# Bench results\n\n{meta}\n\nRatios are peer time / treduce time (> 1: treduce "
        f"faster). % ceiling: the read-only stream kernel's time over ours.\n\n"
        f"{fmt_table(rows)}\n\n{summary(rows)}\n"
    )
    if extras:
        text += "\n" + fmt_extras(extras)
    text += "\n" + goals(rows, extras or {}) + "\n\n" + behind(rows) + "\n"
    (out / "results.md").write_text(text)


if __name__ == "__main__":
    main()
