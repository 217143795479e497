"""What fetching a kernel's code costs a small call after an L2 flush: each case timed (CUDA
events around one call, the median of 100) with its data and code cold (flush, call), and with
its code warm and its data cold (flush, the same call on a second copy of the input, then the
timed call). The difference is the code's trip from DRAM; ours, torch's and Inductor's.

    python bench/code_fetch.py          # a table on stdout (a GPU is needed)
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

# The sweep's latency shapes where ours trailed the best peer most (bench/results/sweep.md).
CASES = [
    ("1024x128", "float32", "amax", "1", ""),
    ("4096x32", "bfloat16", "sum", "1", ""),
    ("8x64x14x14", "float32", "sum", "0,2,3", ""),
    ("695", "bfloat16", "mean", "all", ""),
    ("267", "float32", "sum", "all", ""),
    ("65536x16", "bfloat16", "argmax", "1", "t"),
    ("32x64x7x7", "bfloat16", "mean", "2,3", "nhwc"),
]
FLUSH_BYTES = 256 << 20  # as do_bench's flush
REPS = 100


def timed(torch, flush, f, x, x2, warm_code: bool) -> float:
    """Median µs of one call of f(x) after a flush (and, warm_code, after f(x2))."""
    events = []
    for _ in range(REPS):
        flush.zero_()
        if warm_code:
            f(x2)
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        f(x)
        e.record()
        events.append((s, e))
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in events) * 1e3


def main() -> None:
    import torch
    from sweep import Case, make_input, reduction

    import torch_reduce

    flush = torch.empty(FLUSH_BYTES, dtype=torch.int8, device="cuda")
    print("| case | impl | cold µs | code warm µs | difference |")
    print("|---|---|---|---|---|")
    for shape, dt, op, dims, view in CASES:
        c = Case(
            "x",
            [int(s) for s in shape.split("x")],
            dt,
            op,
            None if dims == "all" else [int(d) for d in dims.split(",")],
            view,
        )
        x, x2 = make_input(c), make_input(c)
        for impl in ("treduce", "torch", "inductor"):
            f = reduction(c, torch_reduce if impl == "treduce" else torch)
            if impl == "inductor":
                f = torch.compile(f, dynamic=False)
            for _ in range(3):
                f(x)
            cold = timed(torch, flush, f, x, x2, False)
            warm = timed(torch, flush, f, x, x2, True)
            print(
                f"| {c.name()} | {impl} | {cold:.2f} | {warm:.2f} | {cold - warm:.2f} |", flush=True
            )


if __name__ == "__main__":
    main()
