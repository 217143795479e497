"""The seed notes' reduction progression, measured on one GPU: each step's kernel
(progression.cu) on the same float32 input (2^24 and 2^28 elements), against the read ceiling
measured in the same run, treduce's production kernel, torch.sum and CUB (CuPy).

    python bench/progression/run.py [--out DIR]

Writes progression.json, progression.md (GB/s, % of the read ceiling, speed-up over the previous
step) and progression.png. do_bench medians with L2 flushed. Needs a GPU, triton, and cupy for
the ceiling and CUB lines (left out without it).
"""

import argparse
import json
import os
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
STEPS = {
    1: "atomic: one atomicAdd per element",
    2: "interleaved addressing, divergent branch",
    3: "interleaved, strided index (bank conflicts)",
    4: "sequential addressing",
    5: "first add during load",
    6: "warp-shuffle final stage",
    7: "several elements per thread (fixed grid)",
    8: "16-byte loads, four in flight",
}
SIZES = (1 << 24, 1 << 28)


def build():
    from torch.utils.cpp_extension import load

    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
    build_dir = Path(os.environ.get("TREDUCE_PROGRESSION_BUILD", "/tmp/treduce_progression"))
    build_dir.mkdir(parents=True, exist_ok=True)
    return load(
        "treduce_progression",
        [str(HERE / "progression.cu")],
        build_directory=str(build_dir),
        extra_cuda_cflags=["-O3", "-std=c++17"],
        verbose=False,
    )


def peers(x: torch.Tensor) -> dict:
    """The comparison lines: the read ceiling and CUB through CuPy (when present), treduce, torch."""
    import torch_reduce

    out = {"treduce": lambda: torch_reduce.sum(x), "torch.sum": lambda: torch.sum(x)}
    try:
        import cupy
    except ImportError:
        return out
    cx = cupy.from_dlpack(x)
    out["CUB (cupy.sum)"] = lambda: cx.sum()
    src = r"""
    extern "C" __global__ void read_stream(const float4* p, long long n, float* out) {
      float acc = 0.f;
      const long long stride = (long long)gridDim.x * blockDim.x;
      long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
      for (; i + 3 * stride < n; i += 4 * stride) {
        float4 a = p[i], b = p[i + stride], c = p[i + 2 * stride], d = p[i + 3 * stride];
        acc += a.x + b.y + c.z + d.w;
      }
      if (acc == 123.f) *out = acc;  // keeps the loads
    }"""
    kern = cupy.RawKernel(src, "read_stream")
    res = cupy.zeros(1, dtype=cupy.float32)
    blocks = torch.cuda.get_device_properties(0).multi_processor_count * 8
    n4 = x.numel() // 4
    out["read ceiling"] = lambda: kern((blocks,), (256,), (cx, cupy.int64(n4), res))
    return out


def run(ext) -> list[dict]:
    from triton.testing import do_bench

    rows = []
    for n in SIZES:
        torch.manual_seed(0)
        x = torch.rand(n, device="cuda")  # positive: a float32 sum of them has a clear scale
        ref = x.double().sum().item()
        nbytes = n * 4
        lines = peers(x)
        ceiling_ms = (
            do_bench(lines.pop("read ceiling"), return_mode="median")
            if "read ceiling" in lines
            else None
        )
        prev = None
        for step, what in STEPS.items():
            got = ext.progression_sum(x, step).item()
            ms = do_bench(lambda step=step: ext.progression_sum(x, step), return_mode="median")
            gbs = nbytes / ms / 1e6
            rows.append(
                {
                    "n": n,
                    "line": f"step {step}",
                    "what": what,
                    "ms": ms,
                    "GB/s": gbs,
                    "of_ceiling": None if ceiling_ms is None else ceiling_ms / ms,
                    "speedup": None if prev is None else prev / ms,
                    "rel_error": abs(got - ref) / ref,
                }
            )
            prev = ms
            print(f"2^{n.bit_length() - 1} step {step}: {gbs:8.1f} GB/s", file=sys.stderr)
        for name, fn in lines.items():
            ms = do_bench(fn, return_mode="median")
            rows.append(
                {
                    "n": n,
                    "line": name,
                    "what": "",
                    "ms": ms,
                    "GB/s": nbytes / ms / 1e6,
                    "of_ceiling": None if ceiling_ms is None else ceiling_ms / ms,
                    "speedup": None,
                    "rel_error": None,
                }
            )
        if ceiling_ms is not None:
            rows.append(
                {
                    "n": n,
                    "line": "read ceiling",
                    "what": "16-byte loads, no reduction",
                    "ms": ceiling_ms,
                    "GB/s": nbytes / ceiling_ms / 1e6,
                    "of_ceiling": 1.0,
                    "speedup": None,
                    "rel_error": None,
                }
            )
    return rows


def table(rows: list[dict]) -> str:
    out = []
    for n in SIZES:
        out += [
            f"### float32 sum, 2^{n.bit_length() - 1} elements ({torch.cuda.get_device_name()})",
            "",
            "| line | what | µs | GB/s | % of read ceiling | × previous step |",
            "|---|---|---|---|---|---|",
        ]
        for r in rows:
            if r["n"] != n:
                continue
            pct = "" if r["of_ceiling"] is None else f"{100 * r['of_ceiling']:.0f}%"
            up = "" if r["speedup"] is None else f"{r['speedup']:.2f}"
            out.append(
                f"| {r['line']} | {r['what']} | {r['ms'] * 1e3:.1f} | {r['GB/s']:.0f} | {pct} | "
                f"{up} |"
            )
        out.append("")
    return "\n".join(out)


def plot(rows: list[dict], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot", file=sys.stderr)
        return
    fig, axes = plt.subplots(1, len(SIZES), figsize=(12, 4.5), sharey=True)
    for ax, n in zip(axes, SIZES):
        sel = [r for r in rows if r["n"] == n]
        steps = [r for r in sel if r["line"].startswith("step")]
        ax.bar([r["line"].split()[1] for r in steps], [r["GB/s"] for r in steps], color="#4878a8")
        # the reference lines in a legend: at 2^28 they lie within 3% of each other
        styles = {
            "read ceiling": ("k", "-"),
            "treduce": ("#d62728", "--"),
            "torch.sum": ("#2ca02c", ":"),
        }
        for r in sel:
            if not r["line"].startswith("step"):
                color, style = styles.get(r["line"], ("#ff7f0e", ":"))
                ax.axhline(r["GB/s"], color=color, linestyle=style, linewidth=1.2, label=r["line"])
        ax.set_title(f"float32 sum, 2^{n.bit_length() - 1}")
        ax.set_xlabel("step")
        top = max(r["GB/s"] for r in sel) / max(r["GB/s"] for r in rows)
        ax.legend(loc="upper left" if top < 0.75 else "center left", fontsize=8)
        for i, r in enumerate(steps):  # bars too short to see (step 1's atomics)
            if r["GB/s"] < 100:
                ax.text(i, 50, f"{r['GB/s']:.0f}", ha="center", va="bottom", fontsize=8)
    axes[0].set_ylabel("GB/s (bytes read / time)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=".")
    ap.add_argument(
        "--replot", metavar="JSON", help="only draw the plot again from a run's progression.json"
    )
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.replot:
        plot(json.loads(Path(args.replot).read_text()), out / "progression.png")
        return
    rows = run(build())
    (out / "progression.json").write_text(json.dumps(rows, indent=1))
    md = table(rows)
    (out / "progression.md").write_text(md + "\n")
    plot(rows, out / "progression.png")
    print(md)


if __name__ == "__main__":
    main()
