"""bench/forced.py without a GPU: cases parse into the sweep's cases, every named set's forced
launches parse in the library, a bad case or spec fails before any timing, --dry-run lists them."""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
_spec = importlib.util.spec_from_file_location("treduce_forced", ROOT / "bench" / "forced.py")
forced = importlib.util.module_from_spec(_spec)
sys.modules["treduce_forced"] = forced
_spec.loader.exec_module(forced)


def test_a_case_parses_into_the_sweeps_case():
    c = forced.parse_case("sum bfloat16 64x2048x28x28 0,2,3")
    assert (c.op, c.dtype, c.shape, c.dims, c.view) == (
        "sum",
        "bfloat16",
        [64, 2048, 28, 28],
        [0, 2, 3],
        "",
    )
    assert c.name() == "sum bfloat16 (64, 2048, 28, 28) d(0,2,3)"
    t = forced.parse_case("mean float32 16x128x56x56 2,3 t")
    assert t.view == "t" and t.dims == [2, 3]
    assert forced.parse_case("sum float32 267 all").dims is None


@pytest.mark.parametrize("text", ["sum bfloat16 8x8", "sum float16 8x8 1", "sum float32 8x8 1 t x"])
def test_a_bad_case_is_refused(text):
    with pytest.raises(ValueError):
        forced.parse_case(text)


def test_every_named_sets_launches_parse():
    for cases in forced.SETS.values():
        forced.check_specs({s for _, specs in cases for s in specs})


def test_a_bad_spec_fails_before_timing(capsys):
    with pytest.raises(RuntimeError, match="threads must be"):
        forced.main(["--case", "sum float32 8x8 1", "--spec", "threads=32", "--dry-run"])
    assert capsys.readouterr().out == ""


def test_dry_run_lists_the_cases_and_specs(capsys):
    forced.main(["--set", "nchw16", "--case", "sum float32 8x8 1", "--spec", "y=8", "--dry-run"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(forced.SETS["nchw16"]) + 1
    assert lines[0].startswith("sum bfloat16 (64, 2048, 28, 28) d(0,2,3): y=256,per=1")
    assert lines[-1] == "sum float32 (8, 8) d(1): y=8"
