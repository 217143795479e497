"""The steps of one ninja build from its .ninja_log, longest first: what a build compiled and what
set its length (scripts/h200.sh prints it after each build on the GPU machine).

    python scripts/ninja_times.py build/ninja/torch_reduce/.ninja_log [--before COPY] [--top K]

--before: a copy of the log from before this build; its lines are not this build's (ninja
appends a line per step it runs, and a build that finds nothing to do adds none; a log that
ninja recompacts keeps its lines, so the copy's lines still match).
"""

from __future__ import annotations

import argparse
from pathlib import Path


def steps(lines: list[str]) -> list[tuple[float, float, str]]:
    """(start s, end s, output) of each step line of a .ninja_log (v5: start, end and mtime in
    ms, output, hash; '#' lines are headers)."""
    out = []
    for line in lines:
        parts = line.split("\t")
        if line.startswith("#") or len(parts) < 4:
            continue
        out.append((int(parts[0]) / 1000, int(parts[1]) / 1000, parts[3]))
    return out


def report(lines: list[str], top: int = 8) -> str:
    run = steps(lines)
    if not run:
        return "ninja: nothing recompiled"
    wall = max(e for _, e, _ in run) - min(s for s, _, _ in run)
    cpu = sum(e - s for s, e, _ in run)
    head = f"ninja: {len(run)} steps, {wall:.0f} s from the first start to the last end, {cpu:.0f} s of steps"
    longest = sorted(run, key=lambda r: r[0] - r[1])[:top]
    return "\n".join([head] + [f"  {e - s:6.1f} s  {Path(o).name}" for s, e, o in longest])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("log", type=Path)
    ap.add_argument("--before", type=Path)
    ap.add_argument("--top", type=int, default=8)
    args = ap.parse_args()
    old = set(args.before.read_text().splitlines()) if args.before else set()
    lines = [line for line in args.log.read_text().splitlines() if line not in old]
    print(report(lines, args.top))


if __name__ == "__main__":
    main()
