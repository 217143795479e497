"""treduce.prod against torch.prod, and treduce.sum, on the same shapes (µs, do_bench medians).

Floating prod follows the canonical order with a scaled double accumulator (CanonProdOp,
csrc/reduce_ops.h); treduce.sum on the same input is the speed it could reach. Needs a GPU and
triton: python bench/prod_speed.py
"""

import torch
from triton.testing import do_bench

import torch_reduce

SHAPES = [
    ((16384, 16384), 0, torch.float32),
    ((16384, 16384), 1, torch.float32),
    ((1 << 28,), None, torch.float32),
    ((8192, 8192), 0, torch.bfloat16),
    ((4096, 4096), 1, torch.float64),
    ((64, 512, 1024), 1, torch.float32),
]


def main() -> None:
    print("| shape | dim | treduce.prod µs | GB/s | torch.prod µs | × torch | treduce.sum µs |")
    print("|---|---|---|---|---|---|---|")
    for shape, dim, dtype in SHAPES:
        x = (1 + 1e-4 * torch.randn(shape, device="cuda")).to(dtype)  # products stay finite
        d = None if dim is None else [dim]
        ours = do_bench(lambda: torch_reduce.prod(x, d), return_mode="median")
        theirs = do_bench(
            lambda: torch.prod(x) if dim is None else torch.prod(x, dim), return_mode="median"
        )
        total = do_bench(lambda: torch_reduce.sum(x, d), return_mode="median")
        gbs = x.numel() * x.element_size() / (ours * 1e-3) / 1e9
        print(
            f"| {str(dtype).replace('torch.', '')} {tuple(shape)} | {dim} | {ours * 1e3:.1f} | "
            f"{gbs:.0f} | {theirs * 1e3:.1f} | {theirs / ours:.2f} | {total * 1e3:.1f} |"
        )


if __name__ == "__main__":
    main()
