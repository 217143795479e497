"""Transposed reduced blocks (canon_config.cuh: tile_stage; reduce_cuda.cu:
copies_transposed_block): the time of a mean with the block walked in place (copy=0,tile=0),
staged in shared memory where it fits (tile=1: canon_tile_kernel), copied into the canonical
order first (copy=1) and as the library decides (tile_stage, kCopyTransposedMaxBytes,
kCopySmallTileElems), beside torch.mean, on H x W maps
stored transposed (over (2, 3) and (0, 2, 3)) and channels-last images of 64 and 256 channels over
(1, 2, 3), float32 and bfloat16.

    python bench/transposed_blocks.py --out DIR [--max-mb 8] [--min-mb 8] [--quick]

--quick: the eleven shapes of docs/perf-log.md's staging tables (2026-12-07) instead of the grid
of map sizes, about 40 s on one GPU.

Prints a line per shape (µs, do_bench medians with L2 flushed) and writes DIR/transposed.json.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import torch
import triton.testing as tt

import torch_reduce
from torch_reduce._testing import forced_launch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sweep import Case, make_input  # noqa: E402  (the sweep's views: "t", "nhwc")


def cases(max_mb: float, min_mb: float = 0.0):
    for dtype in (torch.float32, torch.bfloat16):
        for hw in (7, 14, 28, 56, 112):
            for nc in (64, 512, 2048, 8192):
                n = nc * hw * hw
                mib = n * dtype.itemsize / 2**20
                if not (1 << 14) <= n <= (1 << 27) or not min_mb < mib <= max_mb:
                    continue
                yield "t", dtype, (max(1, nc // 64), 64, hw, hw), (2, 3)
                yield "t", dtype, (max(1, nc // 128), 128, hw, hw), (0, 2, 3)
                yield "nhwc", dtype, (max(1, nc // 64), 64, hw, hw), (1, 2, 3)
                if nc >= 256:
                    yield "nhwc", dtype, (nc // 256, 256, hw, hw), (1, 2, 3)


# (view, dtype, shape, dims): the perf log's staging tables.
QUICK = [
    ("t", torch.float32, (16, 128, 56, 56), (2, 3)),
    ("t", torch.bfloat16, (16, 128, 56, 56), (2, 3)),
    ("t", torch.float32, (4, 64, 112, 112), (2, 3)),
    ("t", torch.float32, (64, 64, 14, 14), (2, 3)),
    ("t", torch.float32, (256, 64, 7, 7), (2, 3)),
    ("t", torch.bfloat16, (8, 128, 28, 28), (0, 2, 3)),
    ("t", torch.float32, (2, 128, 56, 56), (2, 3)),
    ("t", torch.float32, (32, 128, 28, 28), (0, 2, 3)),
    ("nhwc", torch.float32, (16, 64, 56, 56), (1, 2, 3)),
    ("nhwc", torch.bfloat16, (64, 256, 14, 14), (1, 2, 3)),
    ("nhwc", torch.float32, (256, 64, 7, 7), (1, 2, 3)),
]


def us(fn) -> float:
    return tt.do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--max-mb", type=float, default=400.0, help="largest input, MiB")
    ap.add_argument("--min-mb", type=float, default=0.0, help="inputs over this size only, MiB")
    ap.add_argument("--quick", action="store_true", help="the perf log's eleven shapes only")
    args = ap.parse_args()
    rows = []
    todo = QUICK if args.quick else cases(args.max_mb, args.min_mb)
    for view, dtype, shape, dims in todo:
        x = make_input(
            Case(
                "transposed",
                list(shape),
                str(dtype).removeprefix("torch."),
                "mean",
                list(dims),
                view,
            )
        )
        row = {
            "view": view,
            "dtype": str(dtype).removeprefix("torch."),
            "shape": shape,
            "dims": dims,
            "mib": x.numel() * x.element_size() / 2**20,
            # the transposed tile that the route's rule reads (kCopySmallTileElems): the reduced
            # elements from the contiguous reduced dim inward
            "tile": math.prod(shape[d] for d in dims[[x.stride(d) for d in dims].index(1) :]),
        }
        outs = {}
        specs = (
            ("walk", "copy=0,tile=0"),
            ("tile", "tile=1"),
            ("tile64", "tile=1,threads=64"),  # blocks of at least 64 threads (kTileMinThreads)
            ("tile256", "tile=1,threads=256"),
            ("copy", "copy=1"),
        )
        for name, spec in (*specs, ("default", None)):
            with forced_launch(spec):
                outs[name] = torch_reduce.mean(x, dims)
                row[name] = us(lambda: torch_reduce.mean(x, dims))
        row["torch"] = us(lambda: torch.mean(x, dims))
        row["same_bits"] = all(torch.equal(outs["walk"], o) for o in outs.values())
        rows.append(row)
        print(
            f"{view:4s} {row['dtype']:8s} {str(shape):20s} {str(dims):9s} {row['mib']:7.2f} MiB"
            f"  walk {row['walk']:7.1f}  tile {row['tile']:7.1f} {row['tile64']:7.1f}"
            f" {row['tile256']:7.1f}  copy {row['copy']:7.1f}"
            f"  default {row['default']:7.1f}"
            f"  torch {row['torch']:7.1f}  bits {'same' if row['same_bits'] else 'DIFFER'}",
            flush=True,
        )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "transposed.json").write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
