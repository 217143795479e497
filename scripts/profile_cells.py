"""A few reduction cells, each launched twice, for Nsight Compute:

    ncu -k regex:rows_kernel --section SpeedOfLight python3 scripts/profile_cells.py
"""
import torch

import torch_reduce  # noqa: F401

ops = torch.ops.treduce
g = torch.Generator(device="cuda").manual_seed(0)
cells = [
    ("argmax bf16 (64,128256) d1", ops.argmax, torch.randn(64, 128256, device="cuda", generator=g).bfloat16(), 1),
    ("argmax bf16 (1,128256) d1", ops.argmax, torch.randn(1, 128256, device="cuda", generator=g).bfloat16(), 1),
    ("sum f32 (64,65536) d1", ops.sum, torch.randn(64, 65536, device="cuda", generator=g), [1]),
    ("sum f32 2^16", ops.sum, torch.randn(1 << 16, device="cuda", generator=g), None),
    ("argmax f32 2^26", ops.argmax, torch.randn(1 << 26, device="cuda", generator=g), None),
]
for name, op, x, dim in cells:
    for _ in range(2):
        op(x, dim)
    torch.cuda.synchronize()
    print(name, flush=True)
