"""Vocab-parallel greedy decoding and a sharded loss sum with torch_reduce on DTensors.

Logits of (batch, vocab) are sharded over the vocabulary (Shard(1)), as tensor parallelism
leaves them. `torch_reduce.argmax(logits, 1)` finds each rank's best (value, index) pair and
gathers only the pairs; DTensor's own `torch.argmax` gathers the whole logits first. A loss of
(batch, tokens) sharded over the batch is summed with `torch_reduce.sum`, with the single-device
bits. Every result is checked against torch on the full tensors; the timings of both argmax
paths are printed.

    python examples/tensor_parallel_argmax.py [--world 2] [--batch 64] [--vocab 128256]

With two or more GPUs the ranks use NCCL, one GPU each; otherwise CPU ranks over gloo.
"""

import argparse
import os
import socket
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def _time(fn, reps: int, device: str) -> float:
    """Median wall time of fn() in ms (ranks in step: a barrier before each)."""
    times = []
    for _ in range(reps):
        dist.barrier()
        if device == "cuda":
            torch.cuda.synchronize()
        t = time.perf_counter()
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1e3)
    return sorted(times)[len(times) // 2]


def run(rank: int, world: int, port: int, args) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    cuda = torch.cuda.device_count() >= world
    device = "cuda" if cuda else "cpu"
    if cuda:
        torch.cuda.set_device(rank)
    dist.init_process_group("nccl" if cuda else "gloo", rank=rank, world_size=world)
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.tensor import Shard, distribute_tensor

    import torch_reduce

    mesh = init_device_mesh(device, (world,))
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(args.batch, args.vocab, generator=gen).to(torch.bfloat16).to(device)
    dlogits = distribute_tensor(logits, mesh, [Shard(1)])

    tokens = torch_reduce.argmax(dlogits, 1).full_tensor()
    assert torch.equal(tokens, torch.argmax(logits, 1)), "argmax differs from torch"

    loss = torch.rand(args.batch, 512, generator=gen).to(device)
    dloss = distribute_tensor(loss, mesh, [Shard(0)])
    total = torch_reduce.sum(dloss).full_tensor()
    assert torch.equal(total, torch_reduce.sum(loss)), "sharded loss sum: not the same bits"
    torch.testing.assert_close(total, loss.sum())

    ours = _time(lambda: torch_reduce.argmax(dlogits, 1).full_tensor(), args.reps, device)
    theirs = _time(lambda: torch.argmax(dlogits, 1).full_tensor(), args.reps, device)
    local = _time(lambda: torch_reduce.argmax(dlogits.to_local(), 1), args.reps, device)
    if rank == 0:
        print(
            f"{world} ranks ({'NCCL' if cuda else 'gloo, CPU'}), logits {args.batch} x {args.vocab} "
            f"bfloat16 sharded over the vocabulary:\n"
            f"  torch_reduce.argmax (pairs): {ours:.3f} ms; DTensor torch.argmax: {theirs:.3f} ms "
            f"({theirs / ours:.2f}x); the local kernel alone: {local:.3f} ms\n"
            f"  greedy tokens and the sharded loss sum match torch (the sum bit for bit)",
            flush=True,
        )
    dist.barrier()
    # Leave without the process group's teardown: with gloo, its background thread can abort a
    # rank whose peers closed their sockets first, after all the work is done.
    os._exit(0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--vocab", type=int, default=128256)
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    mp.spawn(run, args=(args.world, port, args), nprocs=args.world)


if __name__ == "__main__":
    main()
