"""Exports a small model that calls torch-reduce ops, with a dynamic batch dim, and compiles it
into AOTInductor packages for aoti_run.cpp: reduce_cpu.pt2, and reduce_cuda.pt2 when a GPU is there.

    python examples/cpp/export_model.py <folder>
"""

import os
import sys

import torch

import torch_reduce


class RowStats(torch.nn.Module):
    """Per-row statistics, with an elementwise op that Inductor generates code for before a sum."""

    def forward(self, x):
        return (
            torch_reduce.sum(torch.relu(x), 1),
            torch_reduce.amax(x, 1),
            torch_reduce.argmax(x, 1),
            torch_reduce.mean(x, 0, dtype=torch.float64),
        )


def export_package(device: str, path: str) -> None:
    x = torch.randn(8, 48, device=device)
    batch = torch.export.Dim("batch", min=2)
    program = torch.export.export(RowStats(), (x,), dynamic_shapes=({0: batch},))
    torch._inductor.aoti_compile_and_package(program, package_path=path)
    print(f"wrote {path}")


def main() -> None:
    folder = sys.argv[1]
    os.makedirs(folder, exist_ok=True)
    export_package("cpu", os.path.join(folder, "reduce_cpu.pt2"))
    if torch.cuda.is_available():
        export_package("cuda", os.path.join(folder, "reduce_cuda.pt2"))


if __name__ == "__main__":
    main()
