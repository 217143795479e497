"""Timing helpers shared by the harnesses that time kernels in CUDA graphs (column_round.py,
fill_cost.py): each op captured 10 times in one graph, the graph replayed 12 times between events,
the median per launch; several ops in alternating passes. cupy kernels are launched on torch's
current stream, so that a torch graph captures them."""
import os
import statistics as st

import cupy as cp
import torch


def on_torch_stream(f):
    """f (a cupy launch) wrapped to run on torch's current stream."""
    def g():
        with cp.cuda.ExternalStream(torch.cuda.current_stream().cuda_stream):
            f()
    return g


def graph_of(fns, n=10):
    """A CUDA graph of n x (every fn in fns, in order), after one warm-up call of each."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for f in fns:
            f()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(n):
            for f in fns:
                f()
    torch.cuda.synchronize()
    return g


def time_graph(g, n=10, reps=12):
    """Median µs per repetition of a graph of n repetitions."""
    g.replay()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(True), torch.cuda.Event(True)
        a.record(); g.replay(); b.record(); b.synchronize()
        ts.append(a.elapsed_time(b) * 1e3 / n)
    return st.median(ts)


def with_env(fn, env):
    """fn called with TREDUCE_CANON_LAUNCH=env (none if env is empty)."""
    def g():
        if env:
            os.environ["TREDUCE_CANON_LAUNCH"] = env
        try:
            return fn()
        finally:
            os.environ.pop("TREDUCE_CANON_LAUNCH", None)
    return g


def passes(fns, n_pass=8):
    """Each op's graph timed n_pass times, in alternating order; prints and returns the times."""
    graphs = {k: graph_of([f]) for k, f in fns.items()}
    rows = {k: [] for k in fns}
    for p in range(n_pass):
        for k in (list(fns) if p % 2 == 0 else list(fns)[::-1]):
            rows[k].append(time_graph(graphs[k]))
    del graphs
    torch.cuda.synchronize()
    for k, v in rows.items():
        print(f"  {k:34s} median {st.median(v):7.1f}  min {min(v):7.1f}  max {max(v):7.1f}", flush=True)
    return rows
