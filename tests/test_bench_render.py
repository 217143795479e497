"""bench/bench.py's reports from a results.json, without a GPU: the per-cell list of cells
behind the best peer (issue 3, goal 1) and --render."""
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytest.importorskip("triton")
_spec = importlib.util.spec_from_file_location("treduce_bench", ROOT / "bench" / "bench.py")
bench = importlib.util.module_from_spec(_spec)
sys.modules["treduce_bench"] = bench  # dataclasses look their module up by name
_spec.loader.exec_module(bench)


def _row(case, ours, torch_us, inductor=None, cub=None, plain=None, ceiling=None):
    return {"class": "c", "case": case, "bytes": 1 << 20, "treduce_us": ours,
            "torch_us": torch_us, "inductor_us": inductor, "cub_us": cub,
            "ceiling_us": ceiling, "plain_us": plain}


ROWS = [_row("ahead", 10.0, 12.0, inductor=11.0, cub=15.0),
        _row("behind cub", 10.0, 12.0, inductor=11.0, cub=8.0, plain=9.0, ceiling=7.0),
        _row("behind torch", 20.0, 19.0),
        _row("tie", 5.0, 5.0)]


def test_behind_lists_exactly_the_slower_cells_slowest_first():
    text = bench.behind(ROWS)
    lines = [l for l in text.splitlines() if l.startswith("| c |")]
    assert [l.split(" | ")[1] for l in lines] == ["behind cub", "behind torch"]
    assert "| behind cub | 10.0 | cub | 8.0 | 0.80 | 70% | 0.90 |" in lines[0]
    assert "| behind torch | 20.0 | torch | 19.0 | 0.95 | — | — |" in lines[1]
    assert "None." in bench.behind(ROWS[:1] + ROWS[3:])


def test_render_rewrites_markdown_from_json(tmp_path):
    src = tmp_path / "results.json"
    src.write_text(json.dumps({"meta": {"gpu": "test"}, "rows": ROWS}))
    out = tmp_path / "out"
    # bench.py imports torch_reduce: from the checkout, whether or not it is pip-installed
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    subprocess.run([sys.executable, str(ROOT / "bench" / "bench.py"), "--out", str(out),
                    "--render", str(src)], check=True, cwd=ROOT, env=env)
    md = (out / "results.md").read_text()
    assert "| c | behind cub | 10.0 |" in md  # the main table
    assert "cells at ≥ 1.00× the best peer: 2 of 4" in md
    assert "## Cells behind the best peer (goal 1)" in md


def test_summary_counts_plain_eager_and_in_a_graph():
    """Issue 4's x plain >= 0.97, counted eager and, where the cell has them, in a CUDA graph."""
    rows = [dict(_row("a", 10.0, 12.0, plain=9.0), treduce_graph_us=4.0, torch_graph_us=7.0,
                 plain_graph_us=3.96),
            dict(_row("b", 10.0, 12.0, plain=10.5), treduce_graph_us=4.0, torch_graph_us=7.0,
                 plain_graph_us=3.8),
            _row("c", 100.0, 120.0, plain=99.0)]
    text = bench.summary(rows)
    assert "≥ 0.97): 2 of 3 cells meet it; below: a (0.90)" in text
    assert "1 of 2 cells at ≥ 0.97× plain; below: b (0.95)" in text
    assert "| 4.0 / 7.0 / 4.0 |" in bench.fmt_table(rows)
