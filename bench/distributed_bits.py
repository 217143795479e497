"""How often a DTensor sum or mean over a sharded dim has the single-device bits (issue 54).

For D1-D4 (bench/accuracy.py's data sets), float32 and bfloat16, 1-D tensors of N elements
sharded with Shard(0) over 1-4 CPU ranks (gloo, loopback), `torch_reduce.sum` and `mean` over the
whole tensor: the share of seeds whose result has the bits of the single-device
`torch_reduce.sum`/`mean`, and the largest difference in ulps of the result's dtype. Sharding
over kept dims is bit-identical by construction (tests/test_distributed.py asserts it); this
measures the reduced-dim case, where each rank's correctly rounded partial result is combined
in rank order.

    python bench/distributed_bits.py [--n 1000003] [--seeds 20] [--out bench/results]
"""

import argparse
import json
import os
import socket
import sys
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from accuracy import data_sets  # noqa: E402


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ulps(a: torch.Tensor, b: torch.Tensor) -> float:
    """|a - b| in ulps of b's dtype at b."""
    a64, b64 = a.double(), b.double()
    if a64.item() == b64.item():
        return 0.0
    ulp = (torch.nextafter(b.float().abs(), torch.tensor(float("inf"))) - b.float().abs()).item()
    if b.dtype == torch.bfloat16:
        ulp *= 2.0**16
    return abs(a64.item() - b64.item()) / ulp


def _rank(rank: int, world: int, port: int, n: int, seeds: int, queue) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.set_num_threads(1)
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor

    import torch_reduce

    mesh = init_device_mesh("cpu", (world,))
    rows = []
    for dtype in (torch.float32, torch.bfloat16):
        for seed in range(seeds):
            for name, x in data_sets(n, "cpu", seed).items():
                x = x.to(dtype)
                dx = distribute_tensor(x, mesh, [Shard(0)])
                for op in ("sum", "mean"):
                    fn = getattr(torch_reduce, op)
                    got = fn(dx).full_tensor()
                    want = fn(x)
                    rows.append(
                        {
                            "dtype": str(dtype).split(".")[-1],
                            "data": name,
                            "op": op,
                            "same": bool(torch.equal(got.view(-1), want.view(-1))),
                            "ulps": _ulps(got, want),
                        }
                    )
    if rank == 0:
        queue.put(rows)
    dist.barrier()
    dist.destroy_process_group()


def run(world: int, n: int, seeds: int) -> list[dict]:
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = _port()
    procs = [
        ctx.Process(target=_rank, args=(r, world, port, n, seeds, queue)) for r in range(world)
    ]
    for p in procs:
        p.start()
    rows = queue.get(timeout=1800)
    for p in procs:
        p.join()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_003)
    ap.add_argument("--seeds", type=int, default=20)
    ap.add_argument("--out", default="bench/results")
    args = ap.parse_args()
    table = {}
    for world in (1, 2, 3, 4):
        for r in run(world, args.n, args.seeds):
            key = (r["dtype"], r["data"], r["op"])
            same, worst = table.get(key, {}).get(world, (0, 0.0))
            table.setdefault(key, {})[world] = (same + r["same"], max(worst, r["ulps"]))
    lines = [
        f"Bits of a DTensor sum/mean over Shard(0) of {args.n} elements against the single-device "
        f"treduce result: seeds with identical bits out of {args.seeds} (largest difference in "
        "ulps of the result's dtype), CPU ranks over gloo.",
        "",
        "| dtype | data | op | 1 rank | 2 ranks | 3 ranks | 4 ranks |",
        "|---|---|---|---|---|---|---|",
    ]
    for (dtype, data, op), by_world in table.items():
        cells = [f"{by_world[w][0]}/{args.seeds} ({by_world[w][1]:.2g})" for w in (1, 2, 3, 4)]
        lines.append(f"| {dtype} | {data} | {op} | " + " | ".join(cells) + " |")
    md = "\n".join(lines)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "distributed_bits.md").write_text(md + "\n")
    (out / "distributed_bits.json").write_text(
        json.dumps(
            {
                "n": args.n,
                "seeds": args.seeds,
                "rows": [
                    {"dtype": k[0], "data": k[1], "op": k[2], "by_world": v}
                    for k, v in table.items()
                ],
            },
            indent=1,
        )
    )
    print(md)


if __name__ == "__main__":
    main()
