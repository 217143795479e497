"""bench/accuracy.py's published accuracy table, on the GPU: its rows must hold what the table
claims (correctly rounded float32 sums, 16-bit sums never worse than torch.sum's). The bench's
own tests live beside the bench, so that nothing under tests/ imports bench code."""

import importlib.util
from pathlib import Path

import pytest
import torch

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

_spec = importlib.util.spec_from_file_location(
    "treduce_bench_accuracy", Path(__file__).resolve().parents[1] / "accuracy.py"
)
accuracy = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(accuracy)


@pytest.mark.slow
def test_cuda_float32_sums_are_correctly_rounded_at_2_28():
    """The rows of bench/accuracy.py's published table (D1-D4 at N = 2^28, the exact sum by a
    float64 tree of TwoSums): every sum equals fl32(exact), every mean is within 1 ulp of
    fl32(exact / N)."""
    rows = accuracy.accuracy(28, "cuda")
    bad = [
        f"{r['data']}: sum {r['ours']!r}, exact {r['exact']!r}"
        for r in rows
        if not r["ours_correct"]
    ]
    bad += [
        f"{r['data']}: mean off by {r['mean_ulps']:+.2f} ulps"
        for r in rows
        if not r["mean_within_1ulp"]
    ]
    assert len(rows) == 4 and not bad, bad


@pytest.mark.slow
def test_cuda_16bit_sums_at_2_28():
    """bench/accuracy.py's 16-bit rows (D1-D4 in bfloat16 and float16 at N = 2^28): every
    16-bit result equals fl16(exact) or is no farther from the exact sum than torch.sum's (issue
    4: never worse than torch), and every float32 result (dtype=torch.float32) is fl32(exact)."""
    rows = accuracy.half_accuracy(28, "cuda")
    bad = [
        f"{r['dtype']} {r['data']}: 16-bit {r['ours16']!r} (torch {r['torch16']!r}), "
        f"exact {r['exact']!r}"
        for r in rows
        if not r["ours16_ok"]
    ]
    bad += [
        f"{r['dtype']} {r['data']}: float32 off by {r['ours32_ulps']:+.2f} ulps"
        for r in rows
        if not r["ours32_correct"]
    ]
    assert len(rows) == 8 and not bad, bad
