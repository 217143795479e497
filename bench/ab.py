"""A/B timing of two builds of the library on one machine, for a change that moves the machine
code of the canonical kernels: the grid's floating sum and mean cells (bench.py) plus bfloat16 and
float16 ones and the canonical column kernels of two and four outputs a thread (products
included), each timed with the build that is on sys.path, ours and the plain kernels alternately
(bench.py's medians, L2 flushed; for products "plain" is the canonical kernel again).

Two builds cannot share a process (both register treduce::*), so each run is its own process;
alternate them so that drift on the host falls on both:

    PYTHONPATH=A python bench/ab.py --label main --out DIR
    PYTHONPATH=B python bench/ab.py --label branch --out DIR
    (again, in the same order)
    python bench/ab.py --compare DIR            # per cell: B/A time, and each build's x plain

--grid times every cell of bench.py's grid instead (every op; ours only, no plain kernels): a
whole-grid check of a build against another, such as the one that produced the committed results.

DIR/<label>_<n>.json holds one run. --compare prints, for each cell, the median over the runs of
each label, and the time ratio of the label that ran second to the one that ran first (> 1.00:
the second is slower). Each run also records a digest of each case's output bits (the inputs are
seeded): --compare names every case whose bits differ between the runs, so a change that moves the
machine code is checked for its bits on the cases it is timed on.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

TIMINGS = 3  # timings of ours and of plain per cell and run, alternately; each keeps its median


def cases(whole_grid: bool = False):
    """The cells of an A/B: with whole_grid, every cell of bench.py's grid (every op; the plain
    kernels not timed), else the canonical kernels' cells below."""
    from bench import BF16, F16, F32, Case, grid

    if whole_grid:
        return grid(quick=False)

    out = [c for c in grid(quick=False) if c.op in ("sum", "mean") and c.dtype.is_floating_point]
    out += [
        Case("rows", "sum bf16 (8192,8192) d1", (8192, 8192), BF16, "sum", (1,)),
        Case("columns", "sum f16 (16384,16384) d0", (16384, 16384), F16, "sum", (0,)),
        Case("short rows", "sum bf16 (2^23,8) d1", (1 << 23, 8), BF16, "sum", (1,)),
        Case("mid dim", "sum bf16 (64,4096,8) d1", (64, 4096, 8), BF16, "sum", (1,)),
        Case("latency", "sum bf16 2^16", (1 << 16,), BF16, "sum", None),
    ]
    # The canonical column kernels of two and four outputs a thread (kVec = 2 staged: a mid dim
    # of C = 2; kVec = 4: columns), products included: the kernels whose machine code moved when
    # the kernel units were split (docs/perf-log.md 2026-12-05).
    out += [
        Case("mid dim", f"{op} f32 (64,65536,2) d1", (64, 65536, 2), F32, op, (1,))
        for op in ("sum", "mean", "prod")
    ]
    out += [
        Case("mid dim", f"prod {n} (64,65536,2) d1", (64, 65536, 2), t, "prod", (1,))
        for n, t in (("bf16", BF16), ("f16", F16))
    ]
    out += [
        Case("columns", f"prod {n} (4096,4096) d0", (4096, 4096), t, "prod", (0,))
        for n, t in (("f32", F32), ("bf16", BF16), ("f16", F16))
    ]
    return out


def time_case(case, plain: bool = True) -> dict:
    """Medians of TIMINGS alternate timings of ours and (with plain) of the plain kernels, in µs."""
    import torch

    from bench import bench_ms, ours_fn, timed

    torch.manual_seed(0)
    x = case.make()
    fn = ours_fn(case)
    ours, plains = [], []
    for _ in range(TIMINGS):
        ours.append(timed(bench_ms, "treduce", lambda: fn(x)) * 1e3)
        if plain:
            plains.append(timed(bench_ms, "plain", lambda: fn(x)) * 1e3)
    out = fn(x).detach().cpu().contiguous().reshape(-1)
    return {
        "case": case.name,
        "ours_us": statistics.median(ours),
        "plain_us": statistics.median(plains) if plains else None,
        "bits": hashlib.sha256(out.view(torch.uint8).numpy().tobytes()).hexdigest()[:16],
    }


def run(label: str, out: Path, whole_grid: bool = False) -> None:
    import torch

    import torch_reduce

    rows = []
    for case in cases(whole_grid):
        rows.append(time_case(case, plain=not whole_grid))
        plain = rows[-1]["plain_us"]
        print(f"{case.name:40s} {rows[-1]['ours_us']:9.1f} µs  plain {plain or float('nan'):9.1f}")
        torch.cuda.empty_cache()
    out.mkdir(parents=True, exist_ok=True)
    n = len(list(out.glob(f"{label}_*.json")))
    meta = {
        "label": label,
        # (a build from before the library split has no library_path: its package's folder)
        "library": getattr(torch_reduce, "library_path", torch_reduce.__file__),
        "gpu": torch.cuda.get_device_name(),
        "time": time.time(),
    }
    (out / f"{label}_{n}.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))


def compare(folder: Path) -> None:
    runs: dict[str, list[dict]] = {}  # label -> its runs; the label that ran first is A
    datas = [json.loads(f.read_text()) for f in folder.glob("*_*.json")]
    for data in sorted(datas, key=lambda d: d["meta"]["time"]):
        runs.setdefault(data["meta"]["label"], []).append(data)
    if len(runs) != 2:
        sys.exit(f"--compare wants runs of two labels in {folder}, found {sorted(runs)}")
    (a, ra), (b, rb) = runs.items()

    def med(rs, case, key):
        return statistics.median(r[key] for run in rs for r in run["rows"] if r["case"] == case)

    names = [r["case"] for r in ra[0]["rows"]]
    print(f"{len(ra)} runs of {a}, {len(rb)} of {b}; time ratio > 1.00: {b} slower")
    print(f"| case | {a} µs | {b} µs | {b}/{a} | {a} × plain | {b} × plain |")
    print("|---|---|---|---|---|---|")
    ratios = []
    for c in names:
        ta, tb = med(ra, c, "ours_us"), med(rb, c, "ours_us")
        timed_plain = all(
            r.get("plain_us") for run in ra + rb for r in run["rows"] if r["case"] == c
        )
        pa, pb = (
            (f"{med(ra, c, 'plain_us') / ta:.3f}", f"{med(rb, c, 'plain_us') / tb:.3f}")
            if timed_plain
            else ("—", "—")
        )
        ratios.append(tb / ta)
        print(f"| {c} | {ta:.1f} | {tb:.1f} | {tb / ta:.3f} | {pa} | {pb} |")
    geo = statistics.geometric_mean(ratios)
    print(f"geometric mean {b}/{a}: {geo:.3f}; worst {max(ratios):.3f}; best {min(ratios):.3f}")
    digests = {
        c: {r.get("bits") for run in ra + rb for r in run["rows"] if r["case"] == c} for c in names
    }
    moved = [c for c in names if len(digests[c]) != 1 or None in digests[c]]
    print(f"output bits: {len(names) - len(moved)} of {len(names)} cases identical over all runs")
    for c in moved:
        print(f"  BITS DIFFER: {c}: {sorted(map(str, digests[c]))}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--label", help="this build's name (a run)")
    ap.add_argument("--out", type=Path, help="the folder of the runs' JSON")
    ap.add_argument("--compare", type=Path, metavar="DIR", help="compare the runs in DIR")
    ap.add_argument(
        "--grid", action="store_true", help="every cell of bench.py's grid, ours only (no plain)"
    )
    args = ap.parse_args()
    if args.compare:
        compare(args.compare)
    elif args.label and args.out:
        run(args.label, args.out, args.grid)
    else:
        ap.error("give --label and --out (a run), or --compare DIR")


if __name__ == "__main__":
    main()
