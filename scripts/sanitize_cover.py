"""Reaches every CUDA kernel family, planner route and op on small inputs, for compute-sanitizer
(scripts/sanitize.sh). With --kernels it also lists the kernel families that ran (torch.profiler)
and fails if one of KERNEL_FAMILIES did not.

Routes: full sums (one block, chunks, chunks several per block, chunks merged in a cluster),
rows (packed in vectors, pairs of vectors, one block per row, split rows, the latency kernel),
columns (16-byte and scalar, split or not, staged, interleaved mid dims), NCHW and NHWC
statistics, strided views (transposed, step slices, expanded, misaligned starts), and the forced
configurations (torch_reduce._testing.force_launch) that the planner otherwise picks only for large shapes.
"""

import argparse
import faulthandler
import sys

import torch

import torch_reduce
from torch_reduce._testing import force_launch

KERNEL_FAMILIES = [
    "canon_kernel",
    "canon_small_kernel",
    "canon_small_loop_kernel",
    "pair_rows_kernel",
    "packed_rows_kernel",
    "rows_kernel",
    "cols_kernel",
]

# (shape, dims, view): view is "" (contiguous), "t" (transposed), "s" (step 2 on the last dim),
# "m" (one element past the start), "e" (dim 0 expanded), "cl" (channels_last)
CASES = [
    ((1000,), None, ""),
    ((1 << 12,), None, ""),
    (((1 << 16) + 3,), None, ""),
    ((1 << 20,), None, ""),
    ((1 << 22,), None, ""),
    (((1 << 20) + 1,), None, "m"),
    ((1 << 25,), None, ""),
    ((4096, 2), [1], ""),
    ((4096, 4), [1], ""),
    ((2048, 8), [1], ""),
    ((1024, 16), [1], ""),
    ((512, 32), [1], ""),
    ((256, 64), [1], ""),
    ((256, 100), [1], ""),
    ((128, 128), [1], ""),
    ((64, 1000), [1], ""),
    ((16, 16384), [1], ""),
    ((3, 1 << 18), [1], ""),
    ((8, 1 << 17), [1], ""),
    ((64, 4097), [1], "m"),
    ((256, 300), [1], "s"),
    ((4096, 64), [0], ""),
    ((1 << 16, 17), [0], ""),
    ((1000, 1000), [0], ""),
    ((1 << 16, 2), [0], ""),
    ((1 << 16, 4), [0], ""),
    ((64, 4096), [0], ""),
    ((64, 512, 8), [1], ""),
    ((8, 65536, 4), [1], ""),
    ((256, 64, 3), [1], ""),
    ((8, 64, 7, 7), [0, 2, 3], ""),
    ((4, 32, 28, 28), [0, 2, 3], ""),
    ((4, 3, 10, 10), [0, 2, 3], ""),
    ((4, 64, 14, 14), [0, 2, 3], "m"),
    ((8, 64, 14, 14), [0, 2, 3], "cl"),
    ((512, 300), [1], "t"),
    ((300, 256), [0], "e"),
    ((16, 8, 33), [0, 2], "t"),
]
FLOATS = [torch.float32, torch.bfloat16, torch.float16, torch.float64]
# Forced configurations (force_launch) for the canonical kernels.
FORCED = [
    "",
    "plain",
    "lat=1",
    "lat=0",
    "small=1",
    "small=0",
    "per=2",
    "splits=4",
    "y=32",
    "rounds=2",
    "small=1,threads=64",
    "small=1,loop=4",
    "small=1,cluster=1",
    "small=1,cluster=0",
    "whole=1",
    "whole=0",
]


# The device of the inputs: "cuda", or "cpu" for a dry run of the case loop (--device cpu: the
# script's own test, without a GPU).
DEVICE = "cuda"


def make(shape, view, dtype):
    def fill(s):
        if dtype.is_floating_point:
            return torch.randn(s, device=DEVICE).to(dtype)
        if dtype == torch.bool:
            return torch.rand(s, device=DEVICE) < 0.5
        return torch.randint(-50, 50, s, device=DEVICE).to(dtype)

    if view == "t":
        return fill(shape[::-1]).permute(*reversed(range(len(shape))))
    if view == "s":
        return fill(shape[:-1] + (2 * shape[-1],))[..., ::2]
    if view == "m":
        n = 1
        for s in shape:
            n *= s
        return fill((n + 1,))[1:].view(shape)
    if view == "e":
        return fill((1,) + shape[1:]).expand(shape)
    if view == "cl":
        return fill(shape).contiguous(memory_format=torch.channels_last)
    return fill(shape)


def run_all(big: bool, shard: tuple[int, int] = (1, 1), trace: bool = False) -> int:
    """Every case (or, with shard (k, n), the k-th of n interleaved parts of CASES); the CUDA
    graph runs in the first part only. trace: print each call before it runs (so that a process
    that dies names the call it died in)."""
    calls = 0

    def say(*what):
        if trace:
            print("  ", *what, flush=True)

    k, n_shards = shard
    for i, (shape, dims, view) in enumerate(CASES):
        if i % n_shards != k - 1:
            continue
        print(f"case {i + 1}/{len(CASES)}: {shape} dims={dims} view={view!r}", flush=True)
        n = 1
        for s in shape:
            n *= s
        if n >= 1 << 25 and not big:
            continue
        d1 = None if dims is None else dims[0]
        for dtype in FLOATS:
            x = make(shape, view, dtype)
            for spec in FORCED if n <= 1 << 22 else [""]:
                force_launch(spec)
                for j, fn in enumerate(
                    (
                        lambda: torch_reduce.sum(x, dims),
                        lambda: torch_reduce.mean(x, dims),
                        lambda: torch_reduce.prod(1 + x / 64, dims),
                    )
                ):
                    say(dtype, repr(spec), ("sum", "mean", "prod")[j])
                    try:
                        fn()
                        calls += 1
                    except RuntimeError as e:  # a forced shape this case cannot take
                        if "canonical" not in str(e):
                            raise
            force_launch(None)
            for j, fn in enumerate(
                (
                    lambda: torch_reduce.amax(x, dims),
                    lambda: torch_reduce.amin(x, dims),
                    lambda: torch_reduce.argmax(x, d1),
                    lambda: torch_reduce.argmin(x, d1),
                    lambda: torch_reduce.sum(x, dims, dtype=torch.float64),
                )
            ):
                say(dtype, ("amax", "amin", "argmax", "argmin", "sum dtype=float64")[j])
                fn()
                calls += 1
        for dtype in (torch.int32, torch.uint8, torch.int64, torch.bool, torch.float8_e4m3fn):
            if n >= 1 << 22:
                continue
            x = make(shape, view, torch.float32 if dtype == torch.float8_e4m3fn else dtype)
            if dtype == torch.float8_e4m3fn:
                x = x.to(dtype)
                ops = [lambda: torch_reduce.sum(x, dims), lambda: torch_reduce.amax(x, dims)]
            else:
                ops = [
                    lambda: torch_reduce.sum(x, dims),
                    lambda: torch_reduce.prod(x, dims),
                    lambda: torch_reduce.amax(x, dims),
                    lambda: torch_reduce.bitwise_and(x, dims),
                    lambda: torch_reduce.bitwise_or(x, dims),
                    lambda: torch_reduce.bitwise_xor(x, dims),
                ]
                if dtype != torch.bool:
                    ops.append(lambda: torch_reduce.argmin(x, d1))
            for j, fn in enumerate(ops):
                say(dtype, "op", j)
                fn()
                calls += 1
    if k != 1 or DEVICE != "cuda":
        return calls
    # a CUDA graph: the counters of a capture
    x = torch.randn(1 << 20, device="cuda")
    torch_reduce.sum(x)
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s), torch.cuda.graph(g):
        out = torch_reduce.sum(x.view(4, -1), [1])
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, torch_reduce.sum(x.view(4, -1), [1]))
    return calls + 1


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument(
        "--kernels",
        action="store_true",
        help="profile, list the kernel families launched, fail on a missing one",
    )
    ap.add_argument("--big", action="store_true", help="include the 2^25-element cases")
    ap.add_argument("--trace", action="store_true", help="print each call before it runs")
    ap.add_argument("--count", action="store_true", help="print the number of cases and stop")
    ap.add_argument("--device", default="cuda", help="cpu: a dry run of the cases, without a GPU")
    ap.add_argument(
        "--shard",
        default="1/1",
        help="K/N: run the K-th of N interleaved parts of the cases (processes side by side)",
    )
    args = ap.parse_args()
    if args.count:
        print(len(CASES))
        return 0
    faulthandler.enable()  # a fatal signal prints the Python stack, not only the tool's exit note
    k, n_shards = (int(v) for v in args.shard.split("/"))
    if not 1 <= k <= n_shards:
        ap.error(f"--shard {args.shard}: K must be in 1..N")
    global DEVICE
    DEVICE = args.device
    if not args.kernels:
        calls = run_all(args.big, (k, n_shards), args.trace)
        if DEVICE == "cuda":
            torch.cuda.synchronize()
        print(f"sanitize_cover: {calls} calls done")
        return 0
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        calls = run_all(args.big)
        torch.cuda.synchronize()
    seen = {}
    for ev in prof.events():
        name = ev.name
        if "treduce::" not in name:
            continue
        family = name.split("treduce::", 1)[1].split("<", 1)[0]
        seen[family] = seen.get(family, 0) + 1
        variant = name.split("treduce::", 1)[1][:200]
        seen.setdefault("variants", set()).add(variant)
    variants = seen.pop("variants", set())
    for family in sorted(seen):
        print(f"{family:28s} {seen[family]:7d} launches")
    print(f"{len(variants)} distinct kernel instantiations launched, {calls} calls")
    missing = [k for k in KERNEL_FAMILIES if k not in seen]
    if missing:
        print("MISSING kernel families:", missing)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
