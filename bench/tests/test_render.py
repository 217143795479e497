"""bench/bench.py's reports from a results.json, without a GPU: the per-cell list of cells
behind the best peer (issue 3, goal 1) and --render. The bench's own tests: they live beside the
bench, so that nothing under tests/ imports bench code; scripts/test.sh runs both folders."""

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytest.importorskip("triton")
_spec = importlib.util.spec_from_file_location("treduce_bench", ROOT / "bench" / "bench.py")
bench = importlib.util.module_from_spec(_spec)
sys.modules["treduce_bench"] = bench  # dataclasses look their module up by name
_spec.loader.exec_module(bench)


def _row(case, ours, torch_us, inductor=None, cub=None, plain=None, ceiling=None):
    return {
        "class": "c",
        "case": case,
        "bytes": 1 << 20,
        "treduce_us": ours,
        "torch_us": torch_us,
        "inductor_us": inductor,
        "cub_us": cub,
        "ceiling_us": ceiling,
        "plain_us": plain,
    }


ROWS = [
    _row("ahead", 10.0, 12.0, inductor=11.0, cub=15.0),
    _row("behind cub", 10.0, 12.0, inductor=11.0, cub=8.0, plain=9.0, ceiling=7.0),
    _row("behind torch", 20.0, 19.0),
    _row("tie", 5.0, 5.0),
]


def test_behind_lists_exactly_the_slower_cells_slowest_first():
    text = bench.behind(ROWS)
    lines = [line for line in text.splitlines() if line.startswith("| c |")]
    assert [line.split(" | ")[1] for line in lines] == ["behind cub", "behind torch"]
    assert "| behind cub | 10.0 | cub | 8.0 | 0.80 | 70% | 0.90 |" in lines[0]
    assert "| behind torch | 20.0 | torch | 19.0 | 0.95 | — | — |" in lines[1]
    assert "None." in bench.behind(ROWS[:1] + ROWS[3:])


def test_every_cell_behind_gets_a_reason():
    """Issue 3's done-when: each cell behind the best peer with its reason and what would close
    it (bench.WHY); a tie within 1% says so; a cell no entry covers is marked as such."""
    lat = dict(
        _row("sum f32 2^16", 8.0, 18.9, inductor=7.2),
        **{"class": "latency"},
        bytes=1 << 18,
        treduce_graph_us=3.6,
        torch_graph_us=7.3,
    )
    reason, close = bench.why(lat)
    assert "launch" in reason and "ours 3.6 µs, torch 7.3" in reason and "CUDA graph" in close
    tie = _row("tie-ish", 10.0, 9.95)
    assert bench.why(tie)[0].startswith("within 1%")
    assert bench.why(_row("other", 10.0, 9.0)) == ("no reason recorded for this cell", "—")
    text = bench.behind([lat, _row("other", 10.0, 9.0)])
    assert "| no reason recorded for this cell | — |" in text and "| launch" not in text


def test_goals_give_each_goal_its_figure():
    rows = [
        dict(_row("sum f32 (64,65536) d1", 12.0, 22.0, ceiling=11.5), **{"class": "long rows"}),
        dict(
            _row("sum f32 2^16", 8.0, 18.0, ceiling=5.0), treduce_graph_us=3.6, torch_graph_us=7.3
        ),
    ]
    text = bench.goals(rows, {"host_us": {"torch.sum(x)": 7.0, "torch_reduce.sum(x)": 6.3}})
    assert "1. Every cell ≥ the best peer: **2 of 2**." in text
    assert "(64,65536) d1 1.83× torch (12.0 µs; 2× needs ≤ 11.0 µs, and the read stream" in text
    assert "2^16 eager 8.0 µs (≤ 7; the read stream 5.0)" in text
    assert "2^16 in a CUDA graph 3.6 µs (≤ 3)" in text and "0.90× torch.sum's" in text
    assert "6. Geometric mean ≥ 2× torch: **2.03×**." in text  # sqrt(22 / 12 * 18 / 8)


def test_goal_cells_below_the_figure_get_a_reason():
    """Goals 2 and 3: a cell below the figure says why: the stream's own rate when that is below
    the figure, else how close to the stream ours is, else the class's gap."""
    mb = 256 << 20
    slow_stream = dict(
        _row("sum f32 (8388608,8) d1", mb / 3.0e12 * 1e6, 1.0),
        goal=3,
        bytes=mb,
        ceiling_us=mb / 3.7e12 * 1e6,
    )
    assert bench.why_goal(slow_stream, 3.8)[0].startswith("the read-only stream itself reads 3.70")
    near = dict(_row("sum f32 2^28", 1.0, 1.0), bytes=mb, ceiling_us=0.97)
    assert "at 97% of a stream" in bench.why_goal(near, 4.28)[0]
    cols = dict(
        _row("sum f32 (16384,16384) d0", 1.0, 1.0), bytes=mb, ceiling_us=0.9, **{"class": "columns"}
    )
    assert "last wave" in bench.why_goal(cols, 0.1)[0]
    text = bench.fmt_goal_cells([dict(slow_stream, treduce_us=mb / 3.6e12 * 1e6)])
    assert "| **no** | the read-only stream itself reads 3.70 TB/s" in text


def test_render_rewrites_markdown_from_json(tmp_path):
    src = tmp_path / "results.json"
    src.write_text(json.dumps({"meta": {"gpu": "test"}, "rows": ROWS}))
    out = tmp_path / "out"
    # bench.py imports torch_reduce: from the checkout, whether or not it is pip-installed
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(
            [str(ROOT)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        ),
    )
    subprocess.run(
        [sys.executable, str(ROOT / "bench" / "bench.py"), "--out", str(out), "--render", str(src)],
        check=True,
        cwd=ROOT,
        env=env,
    )
    md = (out / "results.md").read_text()
    assert "| c | behind cub | 10.0 |" in md  # the main table
    assert "cells at ≥ 1.00× the best peer: 2 of 4" in md
    assert "## Cells behind the best peer (goal 1)" in md
    assert "## Issue 3 goals in this run" in md


def test_summary_counts_plain_eager_and_in_a_graph():
    """Issue 4's x plain >= 0.97, counted eager and, where the cell has them, in a CUDA graph."""
    rows = [
        dict(
            _row("a", 10.0, 12.0, plain=9.0),
            treduce_graph_us=4.0,
            torch_graph_us=7.0,
            plain_graph_us=3.96,
        ),
        dict(
            _row("b", 10.0, 12.0, plain=10.5),
            treduce_graph_us=4.0,
            torch_graph_us=7.0,
            plain_graph_us=3.8,
        ),
        _row("c", 100.0, 120.0, plain=99.0),
    ]
    text = bench.summary(rows)
    assert "≥ 0.97): 2 of 3 cells meet it; below: a (0.90)" in text
    assert "1 of 2 cells at ≥ 0.97× plain; below: b (0.95)" in text
    assert "| 4.0 / 7.0 / 4.0 |" in bench.fmt_table(rows)
