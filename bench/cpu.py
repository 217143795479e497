"""The CPU backend against torch on the same machine, at 1 thread and at every core.

    python bench/cpu.py --out bench/results     # writes cpu.md and cpu.json

Each cell times torch and treduce alternately (medians of interleaved repeats, so that a busy
machine slows both alike) and reports torch's time over ours: > 1 means treduce is faster. The
table names the CPU, the thread count and the repeat count; a ratio whose two medians spread by
more than 10% across repeats is marked, since contention on a small machine turns it into noise.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import torch

import torch_reduce

N = 1 << 24


def cases():
    g = torch.Generator().manual_seed(0)
    f32 = torch.randn(N, generator=g)
    rows = torch.randn(4096, 4096, generator=g)
    bf16, f64, i32 = f32.bfloat16(), f32.double(), (f32 * 100).int()
    return [
        ("float32 sum, 16M", lambda m: m.sum(f32)),
        ("float32 rows (4096, 4096) sum dim 1", lambda m: m.sum(rows, 1)),
        ("float32 columns (4096, 4096) sum dim 0", lambda m: m.sum(rows, 0)),
        ("bfloat16 sum, 16M", lambda m: m.sum(bf16)),
        ("float64 sum, 16M", lambda m: m.sum(f64)),
        ("float32 mean, 16M", lambda m: m.mean(f32)),
        ("float32 amax, 16M", lambda m: m.amax(f32)),
        ("bfloat16 amax, 16M", lambda m: m.amax(bf16)),
        ("float32 argmax, 16M", lambda m: m.argmax(f32)),
        ("int32 sum, 16M", lambda m: m.sum(i32)),
    ]


def timed(fn, reps: int) -> float:
    t0 = time.perf_counter()
    for _ in range(reps):
        fn()
    return (time.perf_counter() - t0) / reps


def measure(fn_torch, fn_ours, repeats: int) -> dict:
    fn_torch(), fn_ours()  # warm-up
    inner = max(1, int(0.05 / max(timed(fn_torch, 1), 1e-6)))
    a, b = [], []
    for _ in range(repeats):
        a.append(timed(fn_torch, inner))
        b.append(timed(fn_ours, inner))
    ta, tb = statistics.median(a), statistics.median(b)
    spread = max((max(a) - min(a)) / ta, (max(b) - min(b)) / tb)
    return {"torch_ms": ta * 1e3, "ours_ms": tb * 1e3, "ratio": ta / tb, "spread": spread}


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="bench/out")
    ap.add_argument("--repeats", type=int, default=7)
    args = ap.parse_args()
    cores = os.cpu_count() or 1
    threads = sorted({1, cores})
    results = []
    for name, fn in cases():
        row = {"case": name}
        for t in threads:
            torch.set_num_threads(t)
            row[str(t)] = measure(
                lambda fn=fn: fn(torch), lambda fn=fn: fn(torch_reduce), args.repeats
            )
        results.append(row)
        print(name, {t: round(row[str(t)]["ratio"], 2) for t in threads}, flush=True)
    meta = {
        "cpu": cpu_name(),
        "cores": cores,
        "threads": threads,
        "repeats": args.repeats,
        "torch": torch.__version__,
        "date": time.strftime("%Y-%m-%d"),
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "cpu.json").write_text(json.dumps({"meta": meta, "rows": results}, indent=1))
    head = "| case | " + " | ".join(
        f"{t} thread{'s' if t > 1 else ''}: torch ms / ours ms / × torch" for t in threads
    )
    lines = [
        "# The CPU backend against torch",
        "",
        f"{meta['cpu']}, {cores} cores; torch {meta['torch']}; {meta['date']}; medians of "
        f"{args.repeats} interleaved repeats. × torch is torch's time over ours (> 1: treduce "
        "faster); * marks a ratio whose repeats spread by more than 10% (a busy machine).",
        "",
        head + " |",
        "|---" * (1 + len(threads)) + "|",
    ]
    for row in results:
        cells = []
        for t in threads:
            r = row[str(t)]
            mark = "*" if r["spread"] > 0.10 else ""
            cells.append(f"{r['torch_ms']:.2f} / {r['ours_ms']:.2f} / {r['ratio']:.2f}{mark}")
        lines.append(f"| {row['case']} | " + " | ".join(cells) + " |")
    (out / "cpu.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
