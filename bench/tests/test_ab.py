"""bench/ab.py's comparison without a GPU: per cell the second label's time over the first's,
the plain columns only where both timed the plain kernels, and every case whose bits moved."""

import importlib.util
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("treduce_ab", ROOT / "bench" / "ab.py")
ab = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ab)


def write_run(folder: Path, label: str, n: int, t: float, rows: list[dict]) -> None:
    meta = {"label": label, "library": "x", "gpu": "g", "time": t}
    (folder / f"{label}_{n}.json").write_text(json.dumps({"meta": meta, "rows": rows}))


def test_compare_of_whole_grid_runs(tmp_path, capsys):
    def row(case, us, bits, plain=None):
        return {"case": case, "ours_us": us, "plain_us": plain, "bits": bits}

    write_run(tmp_path, "old", 0, 1.0, [row("a", 10.0, "x"), row("b", 20.0, "y", plain=21.0)])
    write_run(tmp_path, "head", 0, 2.0, [row("a", 10.4, "x"), row("b", 19.0, "z", plain=19.0)])
    write_run(tmp_path, "old", 1, 3.0, [row("a", 10.0, "x"), row("b", 20.0, "y", plain=21.0)])
    write_run(tmp_path, "head", 1, 4.0, [row("a", 10.6, "x"), row("b", 19.0, "z", plain=19.0)])
    ab.compare(tmp_path)
    out = capsys.readouterr().out
    assert "2 runs of old, 2 of head" in out
    assert "| a | 10.0 | 10.5 | 1.050 | — | — |" in out  # no plain timed: no plain columns
    assert "| b | 20.0 | 19.0 | 0.950 | 1.050 | 1.000 |" in out
    assert "worst 1.050" in out
    assert "output bits: 1 of 2 cases identical over all runs" in out
    assert "BITS DIFFER: b" in out


def test_the_whole_grid_is_every_bench_cell():
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from bench import grid
    finally:
        sys.path.remove(str(ROOT / "bench"))
    assert [c.name for c in ab.cases(whole_grid=True)] == [c.name for c in grid(quick=False)]
    assert {"amax", "argmax", "prod"} <= {c.op for c in ab.cases(whole_grid=True)}
    assert {c.op for c in ab.cases()} == {"sum", "mean", "prod"}
