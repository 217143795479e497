"""Issue 4's accuracy and reproducibility table, measured on the GPU.

    python bench/accuracy.py --out DIR [--log2n 28]

For D1-D4 at N = 2^log2n (float32, on the GPU): the error of torch_reduce.sum and of torch.sum in
float32 ulps of the exact sum, and whether each is fl32(exact); the mean's error. The same data
in float16 and bfloat16: the 16-bit results' errors against torch's, and the float32 results'
(`dtype=torch.float32`). Then
reproducibility of torch_reduce.sum's bits (yes/no) over 100 runs, forced launch
configurations, misaligned views, layouts, and CPU against CUDA. Writes DIR/accuracy.md and
DIR/accuracy.json and prints the tables.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np
import torch

import torch_reduce  # noqa: F401
from torch_reduce._testing import forced_launch


def exact_sum(x: torch.Tensor) -> float:
    """The sum of x's values to far better than a float32 ulp: a float64 tree of TwoSums whose
    rounding errors are carried along (their own rounding is about u64^2 of the magnitudes)."""
    s = x.double().flatten()
    c = torch.zeros_like(s)
    while s.numel() > 1:
        if s.numel() % 2:
            s = torch.cat([s, s.new_zeros(1)])
            c = torch.cat([c, c.new_zeros(1)])
        a, b = s[0::2], s[1::2]
        t = a + b
        bb = t - a
        e = (a - (t - bb)) + (b - bb)
        c = (c[0::2] + c[1::2]) + e
        s = t
    return s.item() + c.item()


def data_sets(n: int, device: str, seed: int = 0) -> dict[str, torch.Tensor]:
    g = torch.Generator(device=device).manual_seed(seed)
    sign = torch.randint(0, 2, (n,), device=device, generator=g).float() * 2 - 1
    return {
        "D1 randn": torch.randn(n, device=device, generator=g),
        "D2 uniform[0,1)": torch.rand(n, device=device, generator=g),
        "D3 0.1": torch.full((n,), 0.1, device=device),
        "D4 ±2^U(-20,20)": sign
        * torch.exp2(torch.empty(n, device=device).uniform_(-20, 20, generator=g)),
    }


def ulps(value: float, exact: float) -> float:
    """(value - exact) in units of the float32 ulp at the exact sum."""
    e = np.float32(exact)
    return (value - exact) / float(np.spacing(np.abs(e)))


def accuracy(log2n: int, device: str = "cuda") -> list[dict]:
    """One row per data set; tests/test_numerics_cuda.py asserts ours_correct and
    mean_within_1ulp on every row."""
    n = 1 << log2n
    rows = []
    for name, x in data_sets(n, device).items():
        exact = exact_sum(x)
        want = float(np.float32(exact))
        ours = torch_reduce.sum(x).item()
        theirs = torch.sum(x).item()
        mean = torch_reduce.mean(x).item()
        want_mean = float(np.float32(exact / n))
        rows.append(
            {
                "data": name,
                "n": n,
                "exact": exact,
                "ours": ours,
                "ours_ulps": ulps(ours, exact),
                "ours_correct": ours == want,
                "torch": theirs,
                "torch_ulps": ulps(theirs, exact),
                "torch_correct": theirs == want,
                "mean_ulps": ulps(mean, exact / n) if exact else 0.0,
                "mean_within_1ulp": abs(mean - want_mean)
                <= float(np.spacing(np.abs(np.float32(want_mean)))),
            }
        )
        del x
    if device == "cuda":
        torch.cuda.empty_cache()
    return rows


HALF_MANT = {torch.float16: 10, torch.bfloat16: 7}  # stored significand bits


def ulp_at(x: float, mant: int) -> float:
    """The ulp of a binary type with `mant` stored significand bits in x's binade (x != 0)."""
    return 2.0 ** (math.floor(math.log2(abs(x))) - mant)


def ulps_of(value: float, exact: float, mant: int) -> float:
    """(value - exact) in ulps, at the exact sum, of a binary type with `mant` stored bits."""
    if exact == 0 or not math.isfinite(value):
        return 0.0 if value == exact else math.inf
    return (value - exact) / ulp_at(exact, mant)


def round_to(exact: float, mant: int) -> float:
    """exact rounded once (to nearest, ties to even) to `mant` stored significand bits: the
    reference fl16(exact) (torch's float64 -> bfloat16 conversion goes through float32)."""
    if exact == 0:
        return 0.0
    ulp = ulp_at(exact, mant)
    return round(exact / ulp) * ulp  # exact / ulp is exact; round() ties to even


def half_accuracy(log2n: int, device: str = "cuda") -> list[dict]:
    """D1-D4 in float16 and bfloat16 (issue 4: a 16-bit result never worse than torch's, a
    float32 result (`dtype=torch.float32`) correctly rounded). float16 data are scaled by 2^-k,
    k the least that keeps the exact sum below 2^12, so that the 16-bit results stay finite.
    One row per data set and dtype; tests/test_numerics_cuda.py asserts `ours16_ok` (equal to
    fl16(exact), or no farther from it than torch's) and `ours32_correct` on every row."""
    n = 1 << log2n
    rows = []
    for dtype in (torch.bfloat16, torch.float16):
        mant = HALF_MANT[dtype]
        for name, x in data_sets(n, device).items():
            k = 0
            if dtype == torch.float16:
                k = max(0, math.ceil(math.log2(abs(x.double().sum().item()))) - 12)
            h = (x * 2.0**-k).to(dtype)
            del x
            exact = exact_sum(h)
            want16 = round_to(exact, mant)
            ours16 = torch_reduce.sum(h).item()
            torch16 = torch.sum(h).item()
            ours32 = torch_reduce.sum(h, dtype=torch.float32).item()
            torch32 = torch.sum(h, dtype=torch.float32).item()
            rows.append(
                {
                    "data": name,
                    "dtype": str(dtype).replace("torch.", ""),
                    "n": n,
                    "scale_log2": -k,
                    "exact": exact,
                    "ours16": ours16,
                    "ours16_ulps": ulps_of(ours16, exact, mant),
                    "torch16": torch16,
                    "torch16_ulps": ulps_of(torch16, exact, mant),
                    "ours16_correct": ours16 == want16,
                    "torch16_correct": torch16 == want16,
                    "ours16_ok": ours16 == want16 or abs(ours16 - exact) <= abs(torch16 - exact),
                    "ours32_ulps": ulps(ours32, exact),
                    "torch32_ulps": ulps(torch32, exact),
                    "ours32_correct": ours32 == float(np.float32(exact)),
                }
            )
            del h
    if device == "cuda":
        torch.cuda.empty_cache()
    return rows


def bits(t: torch.Tensor) -> torch.Tensor:
    return t.detach().cpu().contiguous().view(torch.int32)


def reproducibility() -> list[dict]:
    g = torch.Generator(device="cuda").manual_seed(1)
    base = torch.randn((1 << 22) + 8, device="cuda", generator=g) * torch.exp2(
        torch.empty((1 << 22) + 8, device="cuda").uniform_(-20, 20, generator=g)
    )
    x = base[: 1 << 22]
    want = bits(torch_reduce.sum(x))
    rows = []

    same = all(torch.equal(bits(torch_reduce.sum(x)), want) for _ in range(100))
    rows.append({"property": "100 runs", "torch": None, "ours": same})

    ok = True
    for y in (1, 4, 32, 256):
        for splits in (1, 3, 64):
            with forced_launch(f"y={y},splits={splits}"):
                ok &= torch.equal(bits(torch_reduce.sum(x)), want)
    rows.append(
        {
            "property": "launch configurations (12 forced block shapes x splits)",
            "torch": None,
            "ours": ok,
        }
    )

    ours_ok, torch_ok = True, True
    torch_want = bits(torch.sum(x))
    for k in range(8):
        view = base[k : k + (1 << 22)]
        copy = view.clone()
        ours_ok &= torch.equal(bits(torch_reduce.sum(view)), bits(torch_reduce.sum(copy)))
        torch_ok &= torch.equal(bits(torch.sum(view)), bits(torch.sum(copy)))
    rows.append(
        {"property": "x[k:k+N] vs a contiguous copy, k = 0..7", "torch": torch_ok, "ours": ours_ok}
    )

    t = x[: 64 * 256 * 16 * 16].reshape(64, 256, 16, 16)
    layouts = {
        "transposed": t.permute(3, 2, 1, 0).contiguous().permute(3, 2, 1, 0),
        "channels_last": t.contiguous(memory_format=torch.channels_last),
    }
    ours_ok, torch_ok = True, True
    for dims in (None, [0, 2, 3], [3]):
        w = bits(torch_reduce.sum(t, dims))
        tw = bits(torch.sum(t, dims) if dims else torch.sum(t))
        for y in layouts.values():
            ours_ok &= torch.equal(bits(torch_reduce.sum(y, dims)), w)
            torch_ok &= torch.equal(bits(torch.sum(y, dims) if dims else torch.sum(y)), tw)
    rows.append(
        {
            "property": "layouts (contiguous, transposed, channels_last; 3 reductions)",
            "torch": torch_ok,
            "ours": ours_ok,
        }
    )

    xc = x.cpu()
    ours_ok = torch.equal(bits(torch_reduce.sum(xc)), want)
    torch_ok = torch.equal(bits(torch.sum(xc)), torch_want)
    tc = t.cpu()
    for dims in ([0, 2, 3], [3]):
        ours_ok &= torch.equal(bits(torch_reduce.sum(tc, dims)), bits(torch_reduce.sum(t, dims)))
        torch_ok &= torch.equal(bits(torch.sum(tc, dims)), bits(torch.sum(t, dims)))
    rows.append({"property": "CPU vs CUDA", "torch": torch_ok, "ours": ours_ok})
    return rows


def half_markdown(half: list[dict]) -> str:
    yn = {True: "yes", False: "NO"}
    n_log2 = int(math.log2(half[0]["n"]))
    lines = [
        f"| data (N = 2^{n_log2}) | dtype | treduce.sum error (16-bit ulps) | torch.sum error | "
        "treduce = fl16(exact) | torch = fl16(exact) | treduce.sum(dtype=float32) error "
        "(float32 ulps) | torch's | treduce = fl32(exact) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in half:
        scale = f" × 2^{r['scale_log2']}" if r["scale_log2"] else ""
        lines.append(
            f"| {r['data']}{scale} | {r['dtype']} | {r['ours16_ulps']:+.3f} | "
            f"{r['torch16_ulps']:+.3f} | {yn[r['ours16_correct']]} | "
            f"{yn[r['torch16_correct']]} | {r['ours32_ulps']:+.2f} | "
            f"{r['torch32_ulps']:+.2f} | {yn[r['ours32_correct']]} |"
        )
    return "\n".join(lines)


def markdown(acc: list[dict], rep: list[dict]) -> str:
    n_log2 = int(math.log2(acc[0]["n"]))
    lines = [
        f"| data (float32, N = 2^{n_log2}) | treduce.sum error (ulps) | torch.sum error (ulps) | "
        "treduce = fl32(exact) | treduce.mean error (ulps) |",
        "|---|---|---|---|---|",
    ]
    for r in acc:
        lines.append(
            f"| {r['data']} | {r['ours_ulps']:+.2f} | {r['torch_ulps']:+.2f} | "
            f"{'yes' if r['ours_correct'] else 'NO'} | {r['mean_ulps']:+.2f} |"
        )
    lines += ["", "| bits identical over | torch.sum (CUDA) | treduce.sum |", "|---|---|---|"]
    yn = {True: "yes", False: "no", None: "—"}
    for r in rep:
        lines.append(f"| {r['property']} | {yn[r['torch']]} | {yn[r['ours']]} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--log2n", type=int, default=28)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    acc = accuracy(args.log2n)
    half = half_accuracy(args.log2n)
    rep = reproducibility()
    md = markdown(acc, rep) + "\n\n" + half_markdown(half)
    (args.out / "accuracy.md").write_text(
        f"# Accuracy and reproducibility (H200, {torch.cuda.get_device_name()})\n\n{md}\n"
    )
    (args.out / "accuracy.json").write_text(
        json.dumps({"accuracy": acc, "half": half, "reproducibility": rep}, indent=1)
    )
    print(md)


if __name__ == "__main__":
    main()
