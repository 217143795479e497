"""Forced canonical launches against the planned one: for each case, do_bench medians (µs, L2
flushed) of the default plan, of each forced launch (torch_reduce._testing's specs: `y=` leaf
lanes, so X = 256 / y output lanes; `per=` leaves per thread; `lat=`, `small=`, `threads=`, ...;
"plain": the plain float-accumulator kernels), each checked for the plan's bits, and of torch.
The measurement behind a planner route: time a shape the way a new route would launch it before
writing the route.

    python bench/forced.py --set nchw16 --out DIR      # a named set of cases and specs
    python bench/forced.py --case "sum bfloat16 64x2048x28x28 0,2,3" --spec y=8,per=1 --spec plain
    python bench/forced.py --set nchw16 --dry-run      # the cases and specs, no GPU needed

A case is "<op> <dtype> <shape, x-separated> <dims, comma-separated, or all> [view]", with the
sweep's dtypes, ops and views (bench/sweep.py). DIR/forced.json holds the rows; the table goes
to stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sweep import BF16, F32, Case  # noqa: E402

# The leaves per thread and the output lanes of 16-bit NCHW statistics (docs/perf-log.md,
# 2026-12-07), and the same lanes for float32 (one leaf per thread already).
SPECS_16 = ["y=256,per=1", "y=32,per=1", "y=16,per=1", "y=8,per=1",
            "y=256,per=2", "y=32,per=2", "y=16,per=2", "y=8,per=2"]  # fmt: skip
SPECS_32 = ["y=256", "y=64", "y=32", "y=16", "y=8"]
NCHW = [[64, 2048, 28, 28], [16, 1024, 56, 56], [16, 2048, 56, 56], [32, 2048, 56, 56],
        [64, 256, 56, 56], [32, 512, 32, 32], [16, 256, 56, 56], [32, 512, 28, 28]]  # fmt: skip
SETS = {
    "nchw16": [(Case("bn", s, BF16, "sum", [0, 2, 3]), SPECS_16 + ["plain"]) for s in NCHW],
    "nchw32": [
        (Case("bn", s, F32, "sum", [0, 2, 3]), SPECS_32 + ["plain"])
        for s in ([64, 256, 56, 56], [32, 512, 28, 28], [16, 1024, 56, 56], [8, 64, 14, 14])
    ],
}


def parse_case(text: str) -> Case:
    """'<op> <dtype> <AxBxC> <dims|all> [view]' as a sweep Case."""
    parts = text.split()
    if len(parts) not in (4, 5):
        raise ValueError(f"a case is '<op> <dtype> <shape> <dims|all> [view]', got {text!r}")
    op, dtype, shape, dims = parts[:4]
    if dtype not in (F32, BF16):
        raise ValueError(f"dtype must be {F32} or {BF16}, got {dtype!r}")
    return Case(
        "forced",
        [int(s) for s in shape.split("x")],
        dtype,
        op,
        None if dims == "all" else [int(d) for d in dims.split(",")],
        parts[4] if len(parts) == 5 else "",
    )


def check_specs(specs: set[str]) -> None:
    """Every forced launch parses (the library checks a spec where it is set, without a GPU), so
    that a typo fails before the device is reached."""
    from torch_reduce._testing import forced_launch

    for s in sorted(specs):
        with forced_launch(s):
            pass


def run(cases: list[tuple[Case, list[str]]]) -> list[dict]:
    import torch
    from sweep import make_input, reduction
    from triton.testing import do_bench

    import torch_reduce
    from torch_reduce._testing import forced_launch

    def us(fn) -> float:
        return round(do_bench(fn, return_mode="median") * 1e3, 2)

    rows = []
    header = None
    for c, specs in cases:
        if specs != header:
            header = specs
            print(f"| case | plan | {' | '.join(specs)} | torch |")
            print("|---" * (len(specs) + 3) + "|")
        torch.manual_seed(0)
        x = make_input(c)
        ours, theirs = reduction(c, torch_reduce), reduction(c, torch)
        want = ours(x)
        row: dict = {"case": c.name(), "plan": us(lambda: ours(x)), "torch": us(lambda: theirs(x))}
        for s in specs:
            with forced_launch(s):
                same = None if s == "plain" else bool(torch.equal(ours(x), want))
                row[s] = [us(lambda: ours(x)), same]
        rows.append(row)
        print(fmt_row(row, specs), flush=True)
    return rows


def fmt_row(row: dict, specs: list[str]) -> str:
    cells = [
        f"{row[s][0]:.1f}{'' if row[s][1] in (True, None) else ' (bits differ)'}" for s in specs
    ]
    return (
        f"| {row['case']} | {row['plan']:.1f} | " + " | ".join(cells) + f" | {row['torch']:.1f} |"
    )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--set", choices=sorted(SETS), help="a named set of cases and specs")
    ap.add_argument("--case", action="append", default=[], help="a case (repeatable)")
    ap.add_argument("--spec", action="append", default=[], help="a forced launch for --case")
    ap.add_argument("--out", type=Path, help="writes DIR/forced.json")
    ap.add_argument("--dry-run", action="store_true", help="list the cases and specs only")
    args = ap.parse_args(argv)
    cases = list(SETS[args.set]) if args.set else []
    cases += [(parse_case(t), args.spec) for t in args.case]
    if not cases:
        ap.error("give --set or --case")
    check_specs({s for _, specs in cases for s in specs})
    if args.dry_run:
        for c, specs in cases:
            print(f"{c.name()}: {', '.join(specs) or '(the plan only)'}")
        return
    rows = run(cases)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "forced.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
