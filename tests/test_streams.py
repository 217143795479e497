"""Streams, threads, CUDA graphs and memory over many calls (CUDA only).

- host threads on many streams give the bits of the same calls made one after another;
- torch.compile(mode="reduce-overhead") (CUDA graphs) with fresh data on each call, also as
  the first treduce call of a process;
- device and host memory do not grow over 20,000 calls;
- the split kernels' counter pool: nothing per call, and at most one pool (kCounterPoolBytes)
  per captured graph, outside torch's caching allocator.
"""

import gc
import subprocess
import sys
import textwrap
import threading

import pytest
import torch

import torch_reduce

pytestmark = pytest.mark.cuda

COUNTER_POOL_BYTES = 4096 * 4  # launch.cuh: kCounterCapacity counters of 4 bytes


def workload(device="cuda"):
    """Inputs that reach the split kernels (and so the counters) and the unsplit ones."""
    g = torch.Generator(device="cpu").manual_seed(1234)
    shapes = [
        ((1 << 20,), None),
        ((3, 1 << 18), [1]),
        ((1 << 16, 17), [0]),
        ((64, 4096), [1]),
        ((256, 64, 8), [1]),
        ((32, 64, 7, 7), [0, 2, 3]),
    ]
    out = []
    for shape, dims in shapes:
        x = torch.randn(shape, generator=g).to(device)
        out += [
            (lambda x=x, d=dims: torch_reduce.sum(x, d)),
            (lambda x=x, d=dims: torch_reduce.mean(x.bfloat16(), d)),
            (lambda x=x, d=dims: torch_reduce.amax(x, d)),
            (lambda x=x, d=dims: torch_reduce.prod(1 + x / 64, d)),
            (lambda x=x: torch_reduce.argmax(x.view(-1))),
        ]
    return out


def test_threads_on_many_streams_match_serial():
    """8 host threads, each on 8 streams of its own, many calls each: the serial bits."""
    calls = workload()
    serial = [f() for f in calls]
    torch.cuda.synchronize()
    results = {}
    errors = []

    def worker(t):
        try:
            streams = [torch.cuda.Stream() for _ in range(8)]
            got = []
            for i in range(12 * len(calls)):
                s = streams[i % len(streams)]
                s.wait_stream(torch.cuda.default_stream())
                with torch.cuda.stream(s):
                    k = (i * 7 + t) % len(calls)
                    got.append((k, calls[k]()))
            torch.cuda.synchronize()
            results[t] = got
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    for t, got in results.items():
        for k, out in got:
            assert torch.equal(out, serial[k]) or (
                out.is_floating_point()
                and torch.equal(out.isnan(), serial[k].isnan())
                and torch.equal(out[~out.isnan()], serial[k][~serial[k].isnan()])
            ), (t, k)


REDUCE_OVERHEAD = """
import torch, torch_reduce

def f(x):
    return torch_reduce.sum(x, 1), torch_reduce.amax(x, 0), torch_reduce.mean(x)

compiled = torch.compile(f, mode="reduce-overhead")
for i in range(12):
    x = torch.randn(512, 1024, device="cuda") * (i + 1)
    got = [t.clone() for t in compiled(x)]
    want = f(x)
    for a, b in zip(got, want):
        assert torch.equal(a, b), i
"""


def test_compile_reduce_overhead_fresh_data():
    """CUDA graphs through torch.compile: each call's fresh input gives that input's result."""
    exec(REDUCE_OVERHEAD, {})


def test_compile_reduce_overhead_first_call_of_process():
    """The same as the process's first treduce call: the counter pools made during the CUDA
    graphs' warm-up and capture must not be tensors left live in the graph's private pool
    (cudagraph trees reject those: "tensors in the cudagraph pool not tracked as outputs")."""
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(REDUCE_OVERHEAD)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert r.returncode == 0, r.stderr[-3000:]


def _memory_after(calls, n):
    for i in range(n):
        calls[i % len(calls)]()
    torch.cuda.synchronize()
    gc.collect()
    return torch.cuda.memory_allocated(), torch.cuda.memory_reserved()


def _rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_memory_stable_over_20000_calls():
    calls = workload()
    _memory_after(calls, 2 * len(calls))  # warm: counter pool, caching allocator
    alloc0, reserved0 = _memory_after(calls, len(calls))
    rss0 = _rss()
    alloc1, reserved1 = _memory_after(calls, 20000)
    rss1 = _rss()
    assert alloc1 == alloc0, (alloc0, alloc1)
    assert reserved1 == reserved0, (reserved0, reserved1)
    assert rss1 - rss0 < 16 << 20, (rss0, rss1)  # host: no growth beyond noise


def test_counter_pool_per_captured_graph_is_bounded():
    """Each capture that launches a split kernel takes one pool of counters, kept for the
    process's life (a graph may be replayed at any time): COUNTER_POOL_BYTES per graph, taken
    from slabs of raw device memory, so that nothing of torch's caching allocator (a freed
    graph's private pool included) stays allocated or reserved."""
    x = torch.randn(1 << 20, device="cuda")
    torch_reduce.sum(x)  # eager: the stream's pool
    torch.cuda.synchronize()
    gc.collect()
    torch.cuda.empty_cache()
    alloc0, reserved0 = torch.cuda.memory_allocated(), torch.cuda.memory_reserved()
    graphs = 24
    for _ in range(graphs):
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            with torch.cuda.graph(g):
                out = torch_reduce.sum(x)
        g.replay()
        torch.cuda.synchronize()
        assert torch.equal(out, torch_reduce.sum(x))
        del g, out
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()  # a freed graph's private pool is returned here unless pinned
    # Nothing of the caching allocator: the pools are raw memory (a device-wide count such as
    # cudaMemGetInfo would also see other processes, pytest-xdist's workers among them).
    assert torch.cuda.memory_allocated() == alloc0
    assert torch.cuda.memory_reserved() - reserved0 <= 2 << 20
