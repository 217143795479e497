"""On the GPU: CUDA float sums and means follow the canonical order (canon.cuh).

The CPU backend is the reference (tests/test_numerics.py pins its order against an independent
numpy implementation): the CUDA bits must equal the CPU's for every shape, layout, dtype and
launch configuration, and float32 sums at N = 2^28 must be correctly rounded.
"""

import math
from pathlib import Path

import pytest
import torch
from conftest import cancel_data, wide_data

pytestmark = pytest.mark.cuda


INT_VIEW = {
    torch.float32: torch.int32,
    torch.float64: torch.int64,
    torch.float16: torch.int16,
    torch.bfloat16: torch.int16,
}


def bits(t):
    return t.detach().cpu().contiguous().view(INT_VIEW[t.dtype])


def assert_bits(got, want, msg=""):
    assert got.dtype == want.dtype and got.shape == want.shape, msg
    g, w = bits(got), bits(want)
    if not torch.equal(g, w):
        i = (g != w).flatten().nonzero()[0].item()
        raise AssertionError(
            f"{msg}: {int((g != w).sum())} outputs differ, first at {i}: "
            f"{got.flatten()[i].item()!r} vs {want.flatten()[i].item()!r}"
        )


# (shape, dims): full reductions around the leaf (64), round (16384) and split sizes; rows;
# columns (contiguous outputs, vector loads when aligned); narrow and mid dims; several dims.
CASES = [
    ((1,), None),
    ((63,), None),
    ((64,), None),
    ((65,), None),
    ((1000,), None),
    ((16384,), None),
    ((16385,), None),
    ((262147,), None),
    (((1 << 20) + 17,), None),
    ((37, 5000), [1]),
    ((37, 5000), [0]),
    ((5000, 37), [0]),
    ((5000, 40), [0]),
    ((3, 70000), [1]),
    ((70000, 3), [0]),
    ((1 << 14, 128), [0]),
    ((2, 50000, 8), [1]),
    ((8, 64, 33, 17), None),
    ((8, 64, 33, 17), [0, 2, 3]),
    ((8, 64, 33, 17), [3]),
    ((8, 64, 33, 17), [1]),
    ((4, 100, 130), [0, 2]),
    ((4, 8, 56, 64), [0, 2, 3]),  # NCHW-like runs of whole leaves
    ((4099, 8), [1]),
    ((2049, 16), [1]),  # rows of 2 and 4 16-byte vectors (pair_rows_kernel)
    (((1 << 24) + 5,), None),
    ((2048, 8192), [1]),  # leaves for two waves and more
    ((3000, 4096), [0]),  # columns with enough leaf folds for four outputs per thread
    ((65536, 128), [0]),  # narrow columns: 64 splits, a final merge of 8 nodes per thread
    ((8, 4096, 4), [1]),
    ((64, 512, 8), [1]),  # mid dims with too few: one output per thread
    ((300000, 2), [0]),
    ((64, 20000, 2), [1]),
    ((50000, 6), [0]),  # 2 and 6 columns, one output per thread
]


def case_id(c):
    return f"{c[0]}-{c[1]}"


@pytest.mark.parametrize("shape,dims", CASES, ids=[case_id(c) for c in CASES])
def test_cuda_bits_equal_cpu(shape, dims):
    n = math.prod(shape)
    for x in (cancel_data(n, seed=n).reshape(shape), wide_data(n, seed=n + 1).reshape(shape)):
        xc = x.cuda()
        assert_bits(torch.ops.treduce.sum(xc, dims), torch.ops.treduce.sum(x, dims), "sum")
        assert_bits(torch.ops.treduce.mean(xc, dims), torch.ops.treduce.mean(x, dims), "mean")


def layouts_of(x):
    """The same logical 4-d data in other memory layouts, and a sliced (step 2) copy."""
    return {
        "transposed": x.permute(3, 2, 1, 0).contiguous().permute(3, 2, 1, 0),
        "channels_last": x.contiguous(memory_format=torch.channels_last),
        "sliced": torch.zeros((2 * x.shape[0],) + x.shape[1:], device=x.device)[::2].copy_(x),
    }


@pytest.mark.parametrize("dims", [None, [0, 2, 3], [3], [1], [0, 1]])
def test_cuda_bits_do_not_depend_on_layout(dims):
    x = cancel_data(8 * 64 * 33 * 17, seed=11).reshape(8, 64, 33, 17)
    want = torch.ops.treduce.sum(x, dims)  # CPU, contiguous
    xc = x.cuda()
    assert_bits(torch.ops.treduce.sum(xc, dims), want, "contiguous")
    for name, y in layouts_of(xc).items():
        assert torch.equal(y, xc)
        assert_bits(torch.ops.treduce.sum(y, dims), want, name)


def test_cuda_misaligned_views():
    n = (1 << 20) + 3
    base = cancel_data(n + 8, seed=2).cuda()
    rows_base = cancel_data(37 * 1001 + 8, seed=3).cuda()
    for k in range(8):
        view = base[k : k + n]
        want = torch.ops.treduce.sum(view.cpu())
        assert_bits(torch.ops.treduce.sum(view), want, f"k={k}")
        assert_bits(torch.ops.treduce.sum(view.clone()), want, f"copy k={k}")
        rows = rows_base[k : k + 37 * 1001].view(37, 1001)  # every row starts misaligned
        assert_bits(
            torch.ops.treduce.sum(rows, [1]), torch.ops.treduce.sum(rows.cpu(), [1]), f"rows k={k}"
        )
        pairs = rows_base[k : k + 8 * 4001].view(4001, 8)  # 32-byte rows, aligned only for k = 0
        assert_bits(
            torch.ops.treduce.sum(pairs, [1]),
            torch.ops.treduce.sum(pairs.cpu(), [1]),
            f"rows of 8, k={k}",
        )


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
def test_cuda_misaligned_whole_leaves(dtype, force_launch):
    """Warps of whole leaves that do not start on a 16-byte boundary are staged: 16-bit leaves
    that all start the same number of elements past a boundary as whole aligned vectors
    (fold_leaves_shifted, one build per shift, a warp's lanes in runs of one output each), the
    rest element by element (fold_leaf_staged_unaligned). Full sums (2^24 16-bit elements take
    two leaves per thread: one run of 64 leaves per warp) and rows whose length is a multiple of
    the leaf (4 runs of 8 lanes per warp; rows 1032 apart: 16 runs of 2), from every misaligned
    element offset; for 16-bit inputs the rows again with two leaves per thread forced (per=2:
    rows of 4096 8 runs of 4 lanes per warp, rows 1032 apart 32 runs of one lane)."""
    n = (1 << 24) + 5 if dtype != torch.float32 else (1 << 22) + 5
    base = float_data(n + 8, dtype, seed=5).cuda()
    rows_base = float_data(48 * 4096 + 8, dtype, seed=6).cuda()
    for k in range(1, 8):
        view = base[k : k + n]
        assert_bits(torch.ops.treduce.sum(view), torch.ops.treduce.sum(view.cpu()), f"k={k}")
        rows = rows_base[k : k + 48 * 4096].view(48, 4096)
        assert_bits(
            torch.ops.treduce.sum(rows, [1]), torch.ops.treduce.sum(rows.cpu(), [1]), f"rows k={k}"
        )
        assert_bits(
            torch.ops.treduce.mean(rows, [1]),
            torch.ops.treduce.mean(rows.cpu(), [1]),
            f"mean rows k={k}",
        )
        # Rows of 16 leaves 1025 elements apart: two outputs per warp, leaves not evenly spaced
        # (their addresses come by shuffle) and starting at alternating element parities.
        odd_rows = rows_base[k : k + 47 * 1025 + 1024].as_strided((48, 1024), (1025, 1))
        assert_bits(
            torch.ops.treduce.sum(odd_rows, [1]),
            torch.ops.treduce.sum(odd_rows.cpu(), [1]),
            f"rows 1025 apart k={k}",
        )
        # Rows 1032 elements apart: two outputs per warp, every leaf k elements past a boundary
        # (16-bit: the shifted staging with offsets by shuffle).
        even_rows = rows_base[k : k + 47 * 1032 + 1024].as_strided((48, 1024), (1032, 1))
        assert_bits(
            torch.ops.treduce.sum(even_rows, [1]),
            torch.ops.treduce.sum(even_rows.cpu(), [1]),
            f"rows 1032 apart k={k}",
        )
        if dtype != torch.float32:
            force_launch("per=2")
            assert_bits(
                torch.ops.treduce.sum(rows, [1]),
                torch.ops.treduce.sum(rows.cpu(), [1]),
                f"rows k={k} per=2",
            )
            assert_bits(
                torch.ops.treduce.sum(even_rows, [1]),
                torch.ops.treduce.sum(even_rows.cpu(), [1]),
                f"rows 1032 apart k={k} per=2",
            )
            force_launch(None)


# (shape, channel stride or None): NCHW statistics over (0, 2, 3) of a view starting k elements
# into a flat buffer. (16, 16, 32, 32) has 16 leaves per memory run and one leaf lane per output
# (x_leaves = 1), so plan_canon's step-66 rule raises X to 2 on its own; the padded channel
# stride of 1027 elements starts each memory run at its own shift, where the rule stays off.
MISALIGNED_RUN_CASES = [
    ((4, 16, 32, 32), None),
    ((4, 16, 8, 16), None),
    ((4, 16, 8, 24), None),
    ((16, 16, 32, 32), None),
    ((16, 16, 32, 32), 1027),
]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize(
    "shape,cstride",
    MISALIGNED_RUN_CASES,
    ids=[
        f"{'x'.join(map(str, s))}{'' if c is None else f'-c{c}'}" for s, c in MISALIGNED_RUN_CASES
    ],
)
def test_cuda_misaligned_leaves_across_memory_runs(dtype, shape, cstride, force_launch):
    """Misaligned 16-bit statistics over two reduced dims (NCHW over (0, 2, 3), x[k:] of a flat
    buffer): an output's consecutive leaves lie in memory runs of H * W elements, and the
    shifted staging needs each output's lanes in a warp to hold leaves of one memory run, every
    run at the same shift (plan_canon takes enough output lanes for it where the outputs fill
    them and the strides are multiples of 16 bytes; the (4, 16, ...) shapes'
    automatic launches already take 4-32 output lanes from their few leaves per output, the
    (16, 16, 32, 32) one takes 2 by that rule, and y=64 / y=32 force 4 and 8). Forced launches
    with one output lane per block (y=256) put 32 or 64 leaves of an output in a warp, across
    memory runs (element staging), and H * W = 192 (3 leaves) puts leaf pairs across memory
    runs. The bits equal the CPU's on every path, every misaligned offset."""
    n_, c, h, w = shape
    cs = h * w if cstride is None else cstride
    strides = (c * cs, cs, w, 1)
    n = (n_ - 1) * strides[0] + (c - 1) * cs + h * w
    base = float_data(n + 8, dtype, seed=11).cuda()
    for k in range(1, 8):
        x = base.as_strided(shape, strides, k)
        xc = x.cpu()
        want = torch.ops.treduce.sum(xc, [0, 2, 3])
        for launch in (None, "y=256,per=2", "y=256,per=1", "y=64,per=2", "y=32,per=1"):
            if launch is None:
                force_launch(None)
            else:
                force_launch(launch)
            assert_bits(torch.ops.treduce.sum(x, [0, 2, 3]), want, f"k={k} {launch}")
        force_launch(None)
        assert_bits(
            torch.ops.treduce.mean(x, [0, 2, 3]),
            torch.ops.treduce.mean(xc, [0, 2, 3]),
            f"mean k={k}",
        )


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64], ids=str
)
def test_cuda_step2_views(dtype):
    """Views with a step of 2 along the reduced dim (x[:, ::2], x[:, 1::2]): warps whose 32
    leaves are whole and 16-byte aligned, or one element past a boundary (the odd elements of
    the aligned run before them), stage them (canon.cuh, kStep = 2), the rest are walked; the
    bits equal the CPU's. The last 1-d case ends on its base's last element (the staged loads
    of its last leaf read the 16 bytes that hold that element)."""
    cases = [
        ((300, 8192), [1]),
        ((300, 8200), [1]),
        ((6, 40, 1024), [1, 2]),
        ((6, 40, 1024), [2]),
        ((2 * (1 << 20) + 6,), None),
        ((2 * 262144 - 1,), None),
    ]
    for shape, dims in cases:
        n = math.prod(shape)
        x = float_data(n, dtype, seed=n).reshape(shape)
        for start in (0, 1):
            view = x.cuda()[..., start::2]
            want = x[..., start::2]
            msg = f"{dtype} {shape}[..., {start}::2] dims={dims}"
            assert_bits(torch.ops.treduce.sum(view, dims), torch.ops.treduce.sum(want, dims), msg)
            assert_bits(
                torch.ops.treduce.mean(view, dims),
                torch.ops.treduce.mean(want, dims),
                "mean " + msg,
            )


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64], ids=str
)
@pytest.mark.parametrize(
    "shape", [(1024, 1024, 2), (64, 4096, 2), (8, 65536, 2), (5, 1000, 2)], ids=str
)
def test_cuda_odd_step2_leaves(shape, dtype, force_launch):
    """C = 2 mid dims over dim 1 with one output per thread: every second output's leaves start
    one element past a 16-byte boundary and fold from the aligned run one element before them
    (the odd elements: canon.cuh's step-2 staging). Bits equal the CPU's by
    default and under forced launches (the latency kernel, other block shapes and splits), and
    for a base that starts one element past a boundary (the even outputs then the odd ones)."""
    n = math.prod(shape)
    base = float_data(n + 1, dtype, seed=n + 11)
    for k in (0, 1):
        x = base[k : k + n].reshape(shape)
        want, want_mean = torch.ops.treduce.sum(x, [1]), torch.ops.treduce.mean(x, [1])  # CPU
        xc = base.cuda()[k : k + n].reshape(shape)
        for spec in (None, "lat=0", "lat=1", "y=16", "y=256,splits=3", "y=32,splits=2,rounds=1"):
            force_launch(spec)
            assert_bits(torch.ops.treduce.sum(xc, [1]), want, f"x[{k}:] {spec}")
            assert_bits(torch.ops.treduce.mean(xc, [1]), want_mean, f"mean x[{k}:] {spec}")


# (shape, the interleaved kernel expected by default on an H200): C = 4 .. 32 mid dims over dim 1
# with too few leaf folds for C outputs per thread; a partial last leaf (4160 = 65 leaves), and
# shapes whose tiles are not one A's C outputs (X = 16 output lanes for C = 4; one leaf).
INTERLEAVED_CASES = [
    ((8, 4096, 4), True),
    ((8, 65536, 4), True),
    ((64, 4096, 8), True),
    ((16, 16384, 16), True),
    ((4, 8192, 32), True),
    ((3, 4160, 8), True),
    ((5, 1000, 4), False),
    ((2, 64, 16), False),
]


def is_interleaved_kernel(name):
    # canon_kernel<Op, in_t, out_t, 1, 1, kLat, false, true>: fold_leaves_interleaved (kInter)
    return "canon_kernel<" in name and canon_args(name)[4] == "true"


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64], ids=str
)
@pytest.mark.parametrize(
    "shape,expected", INTERLEAVED_CASES, ids=[str(c[0]) for c in INTERLEAVED_CASES]
)
def test_cuda_interleaved_leaves(shape, expected, dtype, force_launch):
    """Mid dims (A, B, C) over B with C = 4 .. 32 outputs at one output per thread: each warp's
    32 / C whole leaves of the C outputs are one run, which it stages whole (canon.cuh's
    fold_leaves_interleaved; in the latency kernel too, (64, 4096, 8)). Bits
    equal the CPU's by default, under forced splits and rounds (which keep X = C output lanes)
    and block shapes (which keep C outputs per thread), with the latency kernel forced on and
    off, and from a base one element past a 16-byte boundary (the other kernel, element by
    element) or a whole vector past it. The profiler shows the interleaved kernel where the
    planner should take it."""
    n = math.prod(shape)
    base = float_data(n + 16, dtype, seed=n + 13)
    for k in (0, 1, 16 // dtype.itemsize):
        x = base[k : k + n].reshape(shape)
        want, want_mean = torch.ops.treduce.sum(x, [1]), torch.ops.treduce.mean(x, [1])  # CPU
        xc = base.cuda()[k : k + n].reshape(shape)
        force_launch(None)
        names = [
            m for m in kernels_run(lambda: torch.ops.treduce.sum(xc, [1])) if "canon_kernel<" in m
        ]
        if torch.cuda.get_device_properties(0).multi_processor_count == 132:
            assert any(map(is_interleaved_kernel, names)) == (expected and k != 1), (k, names)
        for spec in (
            None,
            "lat=0",
            "lat=1",
            "splits=3",
            "splits=2,rounds=1",
            "rounds=2",
            "y=16",
            "y=256,splits=2",
        ):
            force_launch(spec)
            assert_bits(torch.ops.treduce.sum(xc, [1]), want, f"x[{k}:] {spec}")
            assert_bits(torch.ops.treduce.mean(xc, [1]), want_mean, f"mean x[{k}:] {spec}")
    # Forced splits keep the planned output lanes: the interleaved kernel where the default has
    # it, with three splits per tile (a warp's leaves past the last are the identity).
    force_launch("splits=3")
    xc = base.cuda()[:n].reshape(shape)
    if torch.cuda.get_device_properties(0).multi_processor_count == 132:
        names = kernels_run(lambda: torch.ops.treduce.sum(xc, [1]))
        assert any(map(is_interleaved_kernel, names)) == expected, names


LAUNCH_CASES = [
    (((1 << 20) + 17,), None),
    ((37, 5000), [1]),
    ((5000, 40), [0]),
    ((8, 64, 33, 17), [0, 2, 3]),
    ((3, 70000), [1]),
    ((4, 8, 56, 64), [0, 2, 3]),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("shape,dims", LAUNCH_CASES, ids=[case_id(c) for c in LAUNCH_CASES])
def test_cuda_bits_do_not_depend_on_launch_configuration(shape, dims, dtype, force_launch):
    """force_launch forces the block shape (Y leaf lanes of 256 threads), the leaves per
    thread and round (per = 2 is built for 1- and 2-byte inputs: a warp whose lanes' two leaves
    are whole, aligned and contiguous folds them side by side), the blocks per output tile and
    the rounds per split: they change who computes each node of the tree, never the additions."""
    n = math.prod(shape)
    x = float_data(n, dtype, seed=n).reshape(shape)
    want = torch.ops.treduce.sum(x, dims)  # CPU
    want_mean = torch.ops.treduce.mean(x, dims)
    x = x.cuda()
    assert_bits(torch.ops.treduce.sum(x, dims), want, "default vs CPU")
    pers = (None, 2) if dtype != torch.float32 else (None,)
    for y in (1, 2, 8, 32, 256):
        for splits in (1, 2, 3, 7, 64):
            for rounds in (None, 1, 8):
                for per in pers:
                    spec = (
                        f"y={y},splits={splits}"
                        + (f",rounds={rounds}" if rounds else "")
                        + (f",per={per}" if per else "")
                    )
                    force_launch(spec)
                    assert_bits(torch.ops.treduce.sum(x, dims), want, spec)
                    assert_bits(torch.ops.treduce.mean(x, dims), want_mean, "mean " + spec)


def kernels_run(fn):
    """Names of the CUDA kernels that fn() launches (the profiler's trace)."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return [e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]


def kernel_launches(fn):
    """(name, grid, block) of each CUDA kernel that fn() launches, from the profiler's Chrome
    trace (its kernel events carry the launch's grid and block)."""
    import json
    import tempfile

    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as d:
        path = str(Path(d) / "trace.json")
        prof.export_chrome_trace(path)
        with open(path) as f:
            events = json.load(f)["traceEvents"]
    return [
        (e["name"], tuple(e["args"]["grid"]), tuple(e["args"]["block"]))
        for e in events
        if e.get("cat") == "kernel" and "grid" in e.get("args", {})
    ]


def canon_args(name):
    """A kernel template's arguments after <Op, in_t, out_t, ...>: canon_kernel's kVec, kPer,
    kLat, kStage, kInter; canon_small_kernel's kL, kUnaligned, kCluster, kWhole."""
    head = name.split("(")[0]
    args, depth, cur = [], 0, ""
    for ch in head[head.index("<") + 1 :]:
        if ch == "<":
            depth += 1
        elif ch == ">":
            if depth == 0:
                break
            depth -= 1
        elif ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
            continue
        cur += ch
    args.append(cur.strip())
    return args[3:]


def is_latency_kernel(name):
    # canon_kernel<Op, in_t, out_t, 1, 1, true, ...>: the latency kernel (kLat) of launch.cuh
    return "canon_kernel<" in name and canon_args(name)[2] == "true"


# (shape, dims, the latency kernel expected by default): sizes whose default plan takes it (one
# cluster of up to 16 one-round splits per output, blocks of 32 to 256 threads; or the planned
# splits in a cluster: (64, 4096, 8) over dim 1, 8 output lanes x 2 splits) and some that do not
# (more blocks than SMs; 16 splits of 4 output lanes; many splits; no splits, though at most a
# block per SM; at most 256 aligned leaves, which canon_small_kernel takes: the forced lat=1
# runs below take the latency kernel there). Rows and full sums of float32 and 16-bit inputs
# that cluster_rows_default takes, (8, 131072), (3, 70000), (16384 + 17,) and (65536,), run in
# chunks merged in clusters instead (float64 keeps the latency kernel).
LATENCY_CASES = [
    ((17,), None, False),
    ((1000,), None, False),
    ((8192,), None, False),
    ((16384 + 17,), None, True),
    ((65536,), None, True),
    ((65536 + 100,), None, True),
    (((1 << 18) - 5,), None, True),
    ((8, 131072), [1], True),
    ((64, 4096, 8), [1], True),
    ((3, 70000), [1], True),
    ((64, 65536), [1], False),
    ((8, 65536, 4), [1], False),
    ((1024, 1024, 2), [1], False),
    (((1 << 22) + 3,), None, False),
    ((2048, 8192), [1], False),
]


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64], ids=str
)
@pytest.mark.parametrize(
    "shape,dims,expected", LATENCY_CASES, ids=[case_id(c) for c in LATENCY_CASES]
)
def test_cuda_latency_kernel_bits(shape, dims, expected, dtype, force_launch):
    """The latency kernel (both phases of a staged leaf in flight, the splits merged through a
    cluster's shared memory) makes the same nodes as the other kernels: its bits equal the CPU's,
    with it forced off (lat=0) and on (lat=1) under several forced shapes. The profiler shows it
    is the kernel that ran where the planner is expected to take it."""
    if torch.cuda.get_device_capability()[0] < 9:
        pytest.skip("thread-block clusters need sm_90")
    n = math.prod(shape)
    x = float_data(n, dtype, seed=n + 3).reshape(shape)
    want, want_mean = torch.ops.treduce.sum(x, dims), torch.ops.treduce.mean(x, dims)  # CPU
    xc = x.cuda()
    names = kernels_run(lambda: torch.ops.treduce.sum(xc, dims))
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    m, k = shape if len(shape) == 2 and dims == [1] else (1, n)  # rows, or m = 1
    in_clusters = k > chunk_len(dtype) and cluster_rows_default(dtype, m, k, sms)
    assert any(map(is_latency_kernel, names)) == (expected and not in_clusters), names
    assert_bits(torch.ops.treduce.sum(xc, dims), want, "default")
    assert_bits(torch.ops.treduce.mean(xc, dims), want_mean, "mean default")
    for spec in (
        "lat=0",
        "lat=1",
        "lat=1,y=256,splits=3",
        "lat=1,y=256,splits=16,rounds=1",
        "lat=1,y=64,splits=7,rounds=2",
        "lat=1,y=32,splits=16,rounds=1",
        "lat=1,y=256,splits=5,rounds=4",
    ):
        force_launch(spec)
        assert_bits(torch.ops.treduce.sum(xc, dims), want, spec)
        assert_bits(torch.ops.treduce.mean(xc, dims), want_mean, "mean " + spec)
    force_launch("lat=0")
    assert not any(map(is_latency_kernel, kernels_run(lambda: torch.ops.treduce.sum(xc, dims))))
    # A forced shape whose splits fit a cluster takes the latency kernel: (1 << 18) - 5 elements
    # are 4096 leaves (the last of 59), 16 rounds of 256 leaf lanes: 4 splits of 4 rounds, whose
    # round nodes go through each block's counter before the cluster's merge.
    force_launch("lat=1,y=256,splits=4,rounds=4")
    z = float_data((1 << 18) - 5, dtype, seed=5)
    zc = z.cuda()
    assert any(map(is_latency_kernel, kernels_run(lambda: torch.ops.treduce.sum(zc))))
    assert_bits(torch.ops.treduce.sum(zc), torch.ops.treduce.sum(z), "lat=1,splits=4,rounds=4")


MERGE_CASES = [
    (torch.float32, (1 << 25) + 17, ("",)),  # 2049 rounds
    (torch.bfloat16, (1 << 26) + 17, (",per=1", ",per=2")),
]  # 4097 or 2049 rounds


@pytest.mark.parametrize("dtype,n,pers", MERGE_CASES, ids=["float32", "bfloat16"])
def test_cuda_bits_of_merges_with_many_splits(dtype, n, pers, force_launch):
    """Final merges of 2049 and 4097 split nodes (one round each, 256 leaf lanes): 16 or 32
    nodes per thread (one batch, or two pushed to the counter), which warps whose 32 runs of
    nodes are whole load coalesced through shared memory (load_runs_staged) and the rest, past
    the last node, element by element with identities; and the default plan at this size."""
    x = float_data(n, dtype, seed=11)
    want, want_mean = torch.ops.treduce.sum(x), torch.ops.treduce.mean(x)  # CPU
    x = x.cuda()
    assert_bits(torch.ops.treduce.sum(x), want, "default")
    for per in pers:
        for spec in (
            "y=256,splits=64,rounds=1",
            "y=256,splits=396,rounds=1",
            "y=256,splits=7,rounds=2",
        ):
            spec += per
            force_launch(spec)
            assert_bits(torch.ops.treduce.sum(x), want, spec)
            assert_bits(torch.ops.treduce.mean(x), want_mean, "mean " + spec)


def is_small_kernel(name):
    # canon_small_kernel<Op, in_t, out_t, kL, kUnaligned, kCluster, kWhole>, or
    # canon_small_loop_kernel<Op, in_t, out_t, kUnaligned> (aligned float32 and 16-bit chunks,
    # and 16-bit ones off a boundary, several per block: kL = 1)
    return "canon_small_kernel<" in name or is_loop_kernel(name)


def is_loop_kernel(name):
    return "canon_small_loop_kernel<" in name


def small_args(name):
    """canon_small_kernel<Op, in_t, out_t, kL, kUnaligned, kCluster, kWhole>'s kL, kUnaligned,
    kCluster."""
    return canon_args(name)[:3]


def is_whole_small(name):
    """canon_small_kernel<..., kWhole = true>: one block per output, without the chunks' merge."""
    return "canon_small_kernel<" in name and canon_args(name)[3] == "true"


def small_per(name):
    """The leaves per thread (kL) of a canon_small_kernel or canon_small_loop_kernel launch."""
    return "1" if is_loop_kernel(name) else small_args(name)[0]


def is_unaligned_small(name):
    """canon_small_kernel<..., kUnaligned = true> or canon_small_loop_kernel<..., kUnaligned =
    true> (16-bit chunks off a boundary, several per block)."""
    if is_loop_kernel(name):
        return canon_args(name)[-1] == "true"
    return "canon_small_kernel<" in name and small_args(name)[1] == "true"


def is_cluster_chunks(name):
    """canon_small_kernel<..., kCluster = true>: an output's chunks merged in a cluster."""
    return "canon_small_kernel<" in name and small_args(name)[2] == "true"


# (shape, dims, view). Full sums and rows of at most 256 leaves per output that start aligned
# take canon_small_kernel by default where there are at most as many outputs as SMs, or where
# each has at least 64 leaves; 257-512 leaves of 1- and 2-byte inputs (two per thread) where
# there are more than a third as many outputs as SMs; more outputs of fewer leaves, more
# leaves, misaligned starts, rows whose kept stride is not a multiple of 16 bytes, steps and
# several reduced dims do not (small=1 forces it wherever the layout allows: up to 256 or 512
# leaves, any number of outputs). Longer outputs of that layout run in chunks of one block's
# leaves (a leaf per thread, two for 1- and 2-byte inputs but mostly one for aligned 16-bit
# ones: chunk_per_default; 64 to 256 threads: chunk_threads_default; one or several chunks per
# block: chunk_loop_default), where chunks_default says so, and wherever small=1: partial last
# chunks, merges of 3 to 301 chunk nodes (two per merging thread), several outputs.
def chunk_len(dtype):
    """The unit that chunks_default counts chunks in, and the most elements per small-kernel
    output: 256 leaves, two per thread for 1- and 2-byte inputs."""
    return 16384 * (2 if dtype.itemsize <= 2 else 1)


def chunk_per_default(dtype, m, k, aligned=True):
    """launch.cuh's chunk_per: leaves per thread of the chunks (canon_small_kernel's kL): two
    for 1- and 2-byte inputs, but one for 16-bit ones (aligned or not) where their chunks of
    one leaf per thread number at most 8192 in all or at least 8 per output."""
    most = 2 if dtype.itemsize <= 2 else 1
    if most == 1 or (not aligned and dtype.itemsize != 2):
        return most
    chunks = -(-k // 16384)
    return 1 if dtype.itemsize == 2 and (m * chunks <= 8192 or chunks >= 8) else most


def chunk_threads_default(dtype, m, k, per, sms, cluster=None):
    """launch.cuh's chunk_threads: threads per block of the chunks (each thread `per` leaves of
    64): for cluster_rows 256, but 128 for a full sum whose chunks of 128 number at most 8
    (cluster_rows_threads); else float32 128 where such chunks number at most 2048, else 256;
    then halved down to 64 while half-size chunks would be at least 16 KB and number at most
    two per SM."""
    if cluster_rows_default(dtype, m, k, sms, cluster):
        return 128 if m == 1 and -(-k // (128 * 64)) <= 8 else 256

    def chunks(t):
        return m * -(-k // (t * 64 * per))

    t = 256
    if dtype.itemsize == 4 and chunks(t // 2) <= 2048:
        t //= 2
    while t > 64 and t // 2 * 64 * per * dtype.itemsize >= 16384 and chunks(t // 2) <= 2 * sms:
        t //= 2
    return t


def chunk_loop_default(dtype, m, chunks, per, sms, forced=None, aligned=True):
    """launch.cuh's chunk_loop: chunks per block (block x takes chunks x, x + grid, ...), for
    chunks of one leaf per thread, aligned or 16-bit (`forced`, loop=C, where the kernel loops)
    of m outputs of `chunks` chunks: float32 two where an output has at least 2048 chunks, else
    one; 16-bit four where an output has at least 8192 or all have more than 8192, else two
    where all have 6 to 16 per SM, else one."""
    if dtype.itemsize not in (2, 4) or per != 1 or (not aligned and dtype.itemsize != 2):
        return 1
    if forced is not None:
        return forced
    if dtype.itemsize == 4:
        return 2 if chunks >= 2048 else 1
    if chunks >= 8192 or m * chunks > 8192:
        return 4
    return 2 if 6 * sms <= m * chunks <= 16 * sms else 1


def chunk_cluster_default(dtype, chunks, per, loop, forced=None):
    """launch.cuh's chunk_cluster: an output's aligned float32 or 16-bit chunks of one leaf per
    thread, one per block, 2 to 8 of them, merged in a thread-block cluster (unless `forced`
    is cluster=0)."""
    if dtype.itemsize not in (2, 4) or per != 1 or loop != 1 or not 2 <= chunks <= 8:
        return False
    return forced is not False


def cluster_rows_default(dtype, m, k, sms, cluster=None):
    """launch.cuh's cluster_rows: aligned outputs (full sums too) whose chunks of 256 one-leaf
    threads chunk_cluster merges (float32 or 16-bit, 2 to 8 each), at most one block per SM in
    all, that chunks_auto does not chunk, run in such chunks merged in clusters (unless
    `cluster` is forced off)."""
    chunks = -(-k // 16384)
    return (
        m * chunks <= sms
        and chunk_cluster_default(dtype, chunks, 1, 1, cluster)
        and not chunks_default(dtype, m, k, sms)
    )


def chunked_default(dtype, m, k, sms, aligned=True):
    """Whether m outputs of k > chunk_len(dtype) elements (one run each) run in chunks by
    default: chunks_auto, or cluster_rows where the base is aligned."""
    return chunks_default(dtype, m, k, sms) or (aligned and cluster_rows_default(dtype, m, k, sms))


def chunks_default(dtype, m, k, sms):
    """launch.cuh's chunks_auto: m outputs of k elements run in chunks by default."""
    chunks = -(-k // chunk_len(dtype))
    if m * chunks >= 16 * sms:
        return True
    if dtype.itemsize not in (2, 4):
        return False
    if m == 1:
        return chunks >= 32
    return 2 * m <= sms and m * chunks >= 128


SMALL_CASES = [
    ((1,), None, None),
    ((17,), None, None),
    ((64,), None, None),
    ((1000,), None, None),
    ((1024,), None, None),
    ((4096 + 3,), None, None),
    ((8192,), None, None),
    ((8192 + 64,), None, None),
    ((16384,), None, None),
    ((16384 + 1,), None, None),
    ((37, 5000), [1], None),
    ((132, 1024), [1], None),
    ((133, 1024), [1], None),
    ((200, 4096), [1], None),
    ((150, 4032), [1], None),
    ((8, 4100), [1], None),
    ((1025,), None, "x[1:]"),
    ((8, 1026), [1], "x[:, 1:]"),
    ((8, 2048), [1], "x[:, ::2]"),
    ((4, 8, 256), [0, 2], None),
    ((32768,), None, None),
    ((4, 32768), [1], None),
    ((3, 20000), [1], None),
    ((32768 + 1,), None, None),
    ((2, 24576 + 8), [1], None),
    ((64, 16384 + 64), [1], None),
    ((100003,), None, None),
    ((3, 40000 + 64), [1], None),
    ((16384 * 300 + 5,), None, None),
    ((201, 4096), [1], "rows+1"),
    ((65, 16384), [1], "rows+1"),
    ((9, 8192), [1], "rows+1"),
    ((46, 4100), [1], "rows+1"),
    ((4097,), None, "x[1:]"),
    ((33, 32768), [1], "rows+1"),
]
SMALL_VIEWS = {
    None: lambda x: x,
    "x[1:]": lambda x: x[1:],
    "x[:, 1:]": lambda x: x[:, 1:],
    "x[:, ::2]": lambda x: x[:, ::2],
    # rows (m - 1, k) from the base + 1: every row one element past where it was
    "rows+1": lambda x: x.reshape(-1)[1 : 1 + (x.shape[0] - 1) * x.shape[1]].view(
        x.shape[0] - 1, x.shape[1]
    ),
}


@pytest.mark.parametrize(
    "dtype",
    [torch.float32, torch.bfloat16, torch.float16, torch.float64, torch.float8_e4m3fn],
    ids=str,
)
@pytest.mark.parametrize(
    "shape,dims,view",
    SMALL_CASES,
    ids=[case_id(c) + (f"-{c[2]}" if c[2] else "") for c in SMALL_CASES],
)
def test_cuda_small_kernel_bits(shape, dims, view, dtype, force_launch):
    """canon_small_kernel (one block per output: a thread per leaf, the tree over the block)
    makes the same nodes as the other kernels: its bits equal the CPU's by default, forced on
    (small=1) and off (small=0), for sums and means; the profiler shows that it runs exactly
    where the planner should take it (by default, and forced), and that small=0 turns it off.
    Outputs that start off a 16-byte boundary, each one run whose start is as far off as the
    base's (x[1:], rows+1 of a kept stride that is whole vectors; not float64), take its
    kUnaligned kernel (16-bit inputs as many leaves per thread as aligned ones, 8-bit ones two,
    float32 one): by default where each has at least 64 leaves and there are more than a third
    as many outputs as SMs (launch.cuh's small_block and plan_canon), and wherever small=1."""
    n = math.prod(shape)
    base = float_data(n, dtype, seed=n + 5).reshape(shape)
    x = SMALL_VIEWS[view](base)
    xc = SMALL_VIEWS[view](base.cuda())
    want, want_mean = torch.ops.treduce.sum(x, dims), torch.ops.treduce.mean(x, dims)  # CPU
    k = xc.shape[-1] if dims else xc.numel()
    m = xc.numel() // k
    one_run = view in (None, "x[1:]", "rows+1") and (
        dims is None or (len(dims) == 1 and dims[0] == xc.dim() - 1)
    )
    most = chunk_len(dtype)
    aligned = xc.data_ptr() % 16 == 0
    eligible = (
        one_run
        and (aligned or dtype != torch.float64)  # (longer: chunks of `most`)
        and (m == 1 or xc.stride(0) * xc.element_size() % 16 == 0)
    )
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    if k > most:  # chunks
        default = eligible and chunked_default(dtype, m, k, sms, aligned)
    elif not aligned:  # small_block off a boundary
        default = eligible and -(-k // 64) >= 64 and 3 * m > sms
    elif k > 16384:  # two leaves per thread: where each output would get at most two SMs
        default = eligible and 3 * m > sms
    else:
        default = eligible and (m <= sms or -(-k // 64) >= 64)
    names = kernels_run(lambda: torch.ops.treduce.sum(xc, dims))
    assert any(map(is_small_kernel, names)) == default, names
    if default:  # the kUnaligned kernel exactly off a boundary
        assert any(map(is_unaligned_small, names)) == (not aligned), names
        if k <= most:  # one block per output: two leaves per thread past 256 leaves of 1- and
            # 2-byte inputs, and for misaligned 8-bit ones (16-bit ones as aligned ones)
            two = (dtype.itemsize == 1 and not aligned) or (dtype.itemsize <= 2 and k > 16384)
            small = [nm for nm in names if is_small_kernel(nm)]
            assert [small_per(nm) for nm in small] == ["2" if two else "1"], names
            # two leaves per thread: the instantiation without the chunks' merge (kWhole),
            # except float16 (whose warps fold in any order)
            assert [is_whole_small(nm) for nm in small] == [two and dtype != torch.float16], names
    for spec in (None, "small=1", "small=0", "small=1,lat=1", "small=1,whole=0", "small=1,whole=1"):
        force_launch(spec)
        assert_bits(torch.ops.treduce.sum(xc, dims), want, f"{spec}")
        assert_bits(torch.ops.treduce.mean(xc, dims), want_mean, f"mean {spec}")
    force_launch("small=0")
    assert not any(map(is_small_kernel, kernels_run(lambda: torch.ops.treduce.sum(xc, dims))))
    force_launch("small=1")
    names = kernels_run(lambda: torch.ops.treduce.sum(xc, dims))
    assert any(map(is_small_kernel, names)) == eligible, names


@pytest.mark.parametrize(
    "dtype",
    [torch.float32, torch.bfloat16, torch.float16, torch.float64, torch.float8_e4m3fn],
    ids=str,
)
@pytest.mark.parametrize("leaves", [0, 5, 28, 255, 300, 1562], ids=lambda q: f"{q}leaves")
def test_cuda_last_partial_leaf_every_length(leaves, dtype, force_launch):
    """An output's last leaf of every length 1..63 after `leaves` whole ones: the warp that
    holds it stages it (canon_small_kernel's fold_leaf_ragged) one block per output (up to
    255 whole leaves) and in the last chunk of a chunked sum (1562); at two leaves per thread
    (300, 1- and 2-byte inputs) its lane walks it. Full sums and rows, sums and means, bits
    equal to the CPU's, by default and forced into the small kernel."""
    k = 64 * (leaves + 1)  # the rows' stride: every row starts on a 16-byte boundary
    base = float_data(3 * k, dtype, seed=leaves + 11)
    for r in range(1, 64):
        n = 64 * leaves + r
        for x, dims in ((base[:n], None), (base.view(3, k)[:, :n], [1])):
            xc = x.cuda()
            want, want_mean = torch.ops.treduce.sum(x, dims), torch.ops.treduce.mean(x, dims)
            for spec in (None, "small=1"):
                force_launch(spec)
                assert_bits(torch.ops.treduce.sum(xc, dims), want, f"{spec} r={r} {x.shape}")
                assert_bits(
                    torch.ops.treduce.mean(xc, dims), want_mean, f"mean {spec} r={r} {x.shape}"
                )


@pytest.mark.parametrize(
    "dtype,shape,chunked",
    [
        (torch.bfloat16, (1 << 27,), True),
        (torch.float64, (3 << 24,), True),
        (torch.float32, (512, 131072 + 64), True),
        (torch.float32, ((1 << 26) + 100,), True),
        (torch.float32, ((1 << 28) + 5,), True),
        (torch.float32, ((1 << 18) + 100,), False),
        (torch.float32, (64, 65536 + 64), True),
        (torch.bfloat16, (8, 131072), True),
        (torch.bfloat16, ((1 << 22) + 8,), True),
        (torch.float16, ((1 << 21) + 8,), True),
        (torch.float16, ((1 << 27) + 8,), True),
        (torch.bfloat16, (32, 131072 + 64), True),
        (torch.float32, ((1 << 20) + 100,), True),
        (torch.float32, ((1 << 19) + 5,), True),
        (torch.float32, ((1 << 24) + 64,), True),
        (torch.float32, ((1 << 24) - 64,), True),
        (torch.bfloat16, ((1 << 24) + 8,), True),
        (torch.float16, (2, (1 << 24) + 64), True),
        (torch.float16, (4, (1 << 24) + 64), True),
        (torch.bfloat16, (16, (1 << 21) + 64), True),
        (torch.bfloat16, (1024, 131072 + 64), True),
        (torch.float32, (64, 65536), True),
        (torch.float32, (40, 65536 - 100), True),
        (torch.float32, (48, 5 * 8192 - 8), True),
        (torch.bfloat16, (48, 131072), True),
        (torch.float16, (520, 1 << 18), True),
        (torch.bfloat16, (1640, 81920), True),
        (torch.float32, (8, 131072), True),
        (torch.float32, (3, 70000), True),
        (torch.float16, (9, 100000), True),
        (torch.float32, (58550,), True),
        (torch.bfloat16, (46601,), True),
        (torch.float32, (65536 + 64,), True),
        (torch.bfloat16, (131072,), True),
        (torch.float32, (131072 + 64,), False),
    ],
    ids=str,
)
def test_cuda_large_sums_in_chunks(dtype, shape, chunked, force_launch):
    """Full sums and rows take canon_small_kernel in chunks by default where launch.cuh's
    chunks_auto says so (chunks_default here; the float32 2^28 + 5 sum merges 16385 chunk
    nodes, 128 per merging thread), of the leaves per thread that chunk_per says (aligned
    16-bit inputs: one, but two for bfloat16 (1640, 81920), 8200 chunks of one leaf in all,
    five per row), the threads per block that chunk_threads says (float32: 128 up to 2048
    chunks, as (64, 65600), 256 from 2^24 + 64; 2^20 + 100: 257 chunks of 64 threads, 8 nodes
    per merging thread; float16 2^21 + 8: 257 of 128) and the chunks per block that chunk_loop
    says (float32 two from 2048 chunks: 2^24 - 64, 2^26 + 100, 2^28 + 5; 16-bit four from 8192
    chunks: bfloat16 2^27, 2048 blocks, float16 2^27 + 8, 8193 chunks in 2049 blocks, the last
    with one; or more than 8192 in all and at least 8 per output: float16 (520, 2^18), 8320
    in all, bfloat16 (1024, 131072 + 64), 9 per row in 3 blocks;
    else two where all outputs have 6 to 16 chunks per SM: bfloat16 2^24 + 8, 1025 chunks,
    float16 (2, 2^24 + 64), 1025 each, bfloat16 (16, 2^21 + 64), 129 each, 2064 in all; one
    below and above: bfloat16 (32, 131072 + 64), 288 in all, float16 (4, 2^24 + 64), 4100),
    merged in a cluster where chunk_cluster says so (float32 (64, 65536), 8 chunks each; (40,
    65436), the last of the 8 partial; (48, 40952), 5; (512, 131072 + 64), 9 at 256 threads,
    not; bfloat16 (48, 131072), 8; and the rows that chunks_auto leaves but cluster_rows takes,
    in chunks of 256 threads: float32 (8, 131072), (3, 70000), bfloat16 (8, 131072), float16
    (9, 100000), whose last leaf is partial; and full sums of 2 to 8 such chunks, in chunks of
    128 threads where those are at most 8: float32 58550, bfloat16 46601, and of 256 threads
    above: float32 65600, bfloat16 131072; float32 131136, 9 chunks of 256, keeps the latency
    kernel), with the CPU's bits either way, call after call
    (the counters are left at zero), and with the leaves per thread (small=1,per=1 and per=2),
    the threads per block (threads=64, 128, 256), the chunks per block (loop=2, 3, 64) or the
    cluster (cluster=0, 1) forced."""
    m, k = math.prod(shape) // shape[-1], shape[-1]
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    assert chunked == chunked_default(dtype, m, k, sms)
    x = float_data(math.prod(shape), dtype, seed=shape[-1]).reshape(shape)
    dims = [1] if len(shape) == 2 else None
    want, want_mean = torch.ops.treduce.sum(x, dims), torch.ops.treduce.mean(x, dims)  # CPU
    xc = x.cuda()
    most = 2 if dtype.itemsize <= 2 else 1

    def canon_launch():
        runs = [
            r for r in kernel_launches(lambda: torch.ops.treduce.sum(xc, dims)) if "canon" in r[0]
        ]
        assert len(runs) == 1, runs
        return runs[0]

    name, grid, block = canon_launch()
    assert is_small_kernel(name) == chunked, name
    if chunked:
        per = chunk_per_default(dtype, m, k)
        threads = chunk_threads_default(dtype, m, k, per, sms)
        chunks = -(-k // (threads * 64 * per))
        loop = chunk_loop_default(dtype, m, chunks, per, sms)
        assert small_per(name) == str(per) and is_loop_kernel(name) == (loop > 1), name
        assert (block[0], grid[0], grid[1]) == (threads, -(-chunks // loop), m), (name, grid, block)
        cluster = chunk_cluster_default(dtype, chunks, per, loop)
        assert is_cluster_chunks(name) == cluster, name
    assert_bits(torch.ops.treduce.mean(xc, dims), want_mean, "mean")
    for _ in range(3):
        assert_bits(torch.ops.treduce.sum(xc, dims), want, "sum")
    for spec in (
        "per=1",
        "per=2",
        "threads=64",
        "threads=128",
        "threads=256",
        "per=2,threads=64",
        "loop=2",
        "loop=3",
        "threads=64,loop=64",
        "cluster=0",
        "cluster=1",
        "threads=256,cluster=1",
    ):
        force_launch(f"small=1,{spec}")
        force = dict(kv.split("=") for kv in spec.split(","))
        per = min(int(force["per"]), most) if "per" in force else chunk_per_default(dtype, m, k)
        forced_cluster = bool(int(force["cluster"])) if "cluster" in force else None
        threads = (
            int(force["threads"])
            if "threads" in force
            else chunk_threads_default(dtype, m, k, per, sms, forced_cluster)
        )
        chunks = -(-k // (threads * 64 * per))
        loop = chunk_loop_default(
            dtype, m, chunks, per, sms, int(force["loop"]) if "loop" in force else None
        )
        cluster = chunk_cluster_default(dtype, chunks, per, loop, forced_cluster)
        name, grid, block = canon_launch()
        assert small_per(name) == str(per) and is_loop_kernel(name) == (loop > 1), (spec, name)
        assert is_cluster_chunks(name) == cluster, (spec, name)
        assert (block[0], grid[0]) == (threads, -(-chunks // loop)), (spec, grid, block)
        assert_bits(torch.ops.treduce.sum(xc, dims), want, f"sum {spec}")
        assert_bits(torch.ops.treduce.mean(xc, dims), want_mean, f"mean {spec}")


@pytest.mark.parametrize(
    "dtype",
    [torch.float32, torch.bfloat16, torch.float16, torch.float8_e4m3fn, torch.float64],
    ids=str,
)
@pytest.mark.parametrize("m,k", [(1, (1 << 22) + 77), (16, 131072 + 64)], ids=["full", "rows"])
def test_cuda_misaligned_chunks(dtype, m, k, force_launch):
    """Chunks of views that start off a 16-byte boundary, x[s:s + n] for s = 0..7 (rows whose
    kept stride is a whole number of vectors keep the base's shift): canon_small_kernel<...,
    kUnaligned = true> folds them (fold_small_unaligned: 16-bit leaves shifted, float32 and
    8-bit leaves staged element by element; partial last chunks element by element), and
    canon_small_loop_kernel<..., kUnaligned = true> several 16-bit chunks of one leaf per
    thread per block, with the bits of the CPU's sum of the same values, by default and forced
    (small=1, one or two leaves per thread, looped or not), sums and means. The profiler shows
    the chunked kernel where the planner should take it: wherever chunks_default says so,
    float64 only aligned (it has no unaligned staging), and the leaves per thread that
    chunk_per gives."""
    n = m * k
    base = float_data(n + 8, dtype, seed=k + m)
    base_c = base.cuda()
    dims = [1] if m > 1 else None
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    most = 2 if dtype.itemsize <= 2 else 1  # canon_per
    for s in range(8):
        v = base[s : s + n].view(m, k) if m > 1 else base[s : s + n]
        vc = base_c[s : s + n].view(m, k) if m > 1 else base_c[s : s + n]
        want, want_mean = torch.ops.treduce.sum(v, dims), torch.ops.treduce.mean(v, dims)  # CPU
        al = vc.data_ptr() % 16 == 0
        eligible = dtype != torch.float64 or al
        for spec in (
            None,
            "small=1",
            "small=1,threads=64",
            "small=1,loop=2",
            "small=1,per=1",
            "small=1,per=2",
        ):
            force_launch(spec)
            if s < 3:
                expect = eligible and (spec is not None or chunked_default(dtype, m, k, sms, al))
                names = kernels_run(lambda: torch.ops.treduce.sum(vc, dims))
                assert any(map(is_small_kernel, names)) == expect, (s, spec, names)
                # canon_small_kernel<..., kUnaligned = true> exactly for chunks off a boundary
                off = [is_unaligned_small(nm) for nm in names]
                assert any(off) == (expect and not al), (s, spec, names)
                # loop=2: chunks of one leaf per thread loop (misaligned: 16-bit ones only)
                if spec == "small=1,loop=2":
                    per = chunk_per_default(dtype, m, k, al)
                    loops = chunk_loop_default(dtype, m, 2, per, sms, 2, al) > 1
                    assert any(map(is_loop_kernel, names)) == loops, (s, spec, names)
                # leaves per thread (misaligned 16-bit chunks: one by default here, two forced)
                if expect and spec in (None, "small=1,per=1", "small=1,per=2"):
                    per = (
                        chunk_per_default(dtype, m, k, al)
                        if spec is None
                        else most
                        if not al and dtype.itemsize != 2
                        else min(int(spec[-1]), most)
                    )
                    small = [nm for nm in names if is_small_kernel(nm)]
                    assert [small_per(nm) for nm in small] == [str(per)], (s, spec, names)
            assert_bits(torch.ops.treduce.sum(vc, dims), want, f"x[{s}:] {spec}")
            assert_bits(torch.ops.treduce.mean(vc, dims), want_mean, f"mean x[{s}:] {spec}")


# (shape, dims, default staged): columns whose reduced element's row is exactly C = 2 or 4
# outputs, the outputs read C per thread, whose warps stage their leaves (64 rows of the C
# outputs, contiguous) through shared memory: float32 pairs (canon_kernel<..., 2>) and fours,
# 16-bit fours, float64 pairs. Defaults with leaf folds enough for C outputs per thread (the
# planner takes one per thread below a wave of them), partial last leaves, runs of whole leaves
# (two reduced dims) and runs that leaves straddle (element walk for those warps); forced block
# shapes keep C per thread on the small ones.
COLUMN_STAGING_CASES = [
    ((3400000, 2), [0], True),
    ((64, 53000, 2), [1], True),
    ((1700003, 4), [0], True),
    ((64, 27000, 4), [1], True),
    ((48, 4, 640, 4), [1, 2], False),
    ((48, 4, 650, 4), [1, 2], False),
    ((40, 6, 640, 2), [1, 2], False),
    ((300001, 2), [0], False),
]


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64], ids=str
)
@pytest.mark.parametrize(
    "shape,dims,staged", COLUMN_STAGING_CASES, ids=[case_id(c) for c in COLUMN_STAGING_CASES]
)
def test_cuda_column_staging_bits(shape, dims, staged, dtype, force_launch):
    """The staged column folds (fold_leaf_staged with kCols = C: element e of a staged vector to
    output e % C) make the same nodes as the per-output folds: bits equal the CPU's by default,
    under forced shapes (which keep C outputs per thread) and from misaligned starts (one
    output per thread). The profiler shows float32 pairs and fours taking C outputs per
    thread where the planner should."""
    n = math.prod(shape)
    base = float_data(n + 2, dtype, seed=n + 7)
    c = shape[-1]
    x = base[:n].reshape(shape)
    want, want_mean = torch.ops.treduce.sum(x, dims), torch.ops.treduce.mean(x, dims)  # CPU
    xc = base.cuda()[:n].reshape(shape)
    names = [
        m for m in kernels_run(lambda: torch.ops.treduce.sum(xc, dims)) if "canon_kernel<" in m
    ]
    if staged and dtype == torch.float32:  # C outputs per thread, the staged kernel
        assert [canon_args(m)[0::3] for m in names] == [[str(c), "true"]], names
    assert_bits(torch.ops.treduce.sum(xc, dims), want, "default")
    assert_bits(torch.ops.treduce.mean(xc, dims), want_mean, "mean default")
    for spec in ("y=256,splits=1", "y=32,splits=3", "y=8,splits=64,rounds=1", "y=1,splits=2"):
        force_launch(spec)
        assert_bits(torch.ops.treduce.sum(xc, dims), want, spec)
        assert_bits(torch.ops.treduce.mean(xc, dims), want_mean, "mean " + spec)
    force_launch(None)
    for k in (1, 2):  # misaligned starts: 4 or 8 bytes (float32), 2 or 4 (16-bit) past 16
        v = base[k : k + n].reshape(shape)
        vc = base.cuda()[k : k + n].reshape(shape)
        assert_bits(torch.ops.treduce.sum(vc, dims), torch.ops.treduce.sum(v, dims), f"x[{k}:]")


# (name, view of a base tensor, dims): columns read four outputs per thread (fold_leaf), along
# one reduced dim (batches of sixteen loads, then single loads for a leaf's rest) or through a
# Walker over two reduced dims that do not merge (batches of eight).
COLUMN_FOLD_CASES = [
    ("K=37", lambda b: b[: 37 * 262144].view(37, 262144), [0]),  # two batches and five singles
    ("K=200", lambda b: b[: 200 * 65536].view(200, 65536), [0]),  # three whole leaves and eight
    ("two dims", lambda b: b[: 40 * 7 * 65536].view(40, 7, 65536)[:, :6], [0, 1]),  # Walker
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("name,view,dims", COLUMN_FOLD_CASES, ids=[c[0] for c in COLUMN_FOLD_CASES])
def test_cuda_column_fold_batches(name, view, dims, dtype, force_launch):
    """The column fold's batches (sixteen loads in flight along one reduced dim, eight through
    the Walker, single loads for a leaf's last elements) fold each leaf in order: bits equal
    the CPU's by default and under forced shapes, and the column kernel (four outputs per
    thread) is the one that runs."""
    base = float_data(40 * 7 * 65536, dtype, seed=41)
    x, xc = view(base), view(base.cuda())
    want, want_mean = torch.ops.treduce.sum(x, dims), torch.ops.treduce.mean(x, dims)  # CPU
    names = [
        m for m in kernels_run(lambda: torch.ops.treduce.sum(xc, dims)) if "canon_kernel<" in m
    ]
    assert [canon_args(m)[0] for m in names] == ["4"], names
    assert_bits(torch.ops.treduce.sum(xc, dims), want, f"{name} default")
    assert_bits(torch.ops.treduce.mean(xc, dims), want_mean, f"{name} mean default")
    for spec in ("y=1,splits=1", "y=8,splits=3", "y=64,splits=2,rounds=1"):
        force_launch(spec)
        assert_bits(torch.ops.treduce.sum(xc, dims), want, f"{name} {spec}")
        assert_bits(torch.ops.treduce.mean(xc, dims), want_mean, f"{name} mean {spec}")


def test_cuda_column_tiles_split_for_whole_waves(force_launch):
    """Columns with a wave or more of tiles: the planner cuts each tile's rounds into one-round
    splits where those fill the waves better (launch.cuh). (32, 2048, 1024) over
    dim 1 with 16 output lanes: 512 tiles of 2 rounds, on an H200 (396 resident blocks of the
    float32 column kernel) 512 x 2 blocks of one round. The bits are the CPU's either way."""
    shape, dims = (32, 2048, 1024), [1]
    n = math.prod(shape)
    x = cancel_data(n, seed=5).reshape(shape)
    want, want_mean = torch.ops.treduce.sum(x, dims), torch.ops.treduce.mean(x, dims)  # CPU
    xc = x.cuda()
    assert_bits(torch.ops.treduce.sum(xc, dims), want, "default")
    force_launch("y=16")
    assert_bits(torch.ops.treduce.sum(xc, dims), want, "y=16")
    assert_bits(torch.ops.treduce.mean(xc, dims), want_mean, "mean y=16")
    grids = [
        g
        for m, g, _ in kernel_launches(lambda: torch.ops.treduce.sum(xc, dims))
        if "canon_kernel<" in m
    ]
    props = torch.cuda.get_device_properties(0)
    if props.multi_processor_count == 132:  # an H200 or H100 SXM: 396 resident blocks
        assert grids == [(512, 2, 1)], grids
    else:
        assert len(grids) == 1 and grids[0][0] == 512 and grids[0][1] in (1, 2), grids


# (shape, dtype): the grid on an H200 (132 SMs: 396 resident blocks of either kernel)
NCHW_LANES = [
    ((32, 512, 28, 28), torch.float32, (16, 49, 1)),
    ((32, 512, 28, 28), torch.bfloat16, (16, 49, 1)),
    ((64, 256, 56, 56), torch.float32, (256, 3, 1)),
    ((64, 256, 56, 56), torch.bfloat16, (256, 3, 1)),
]


@pytest.mark.parametrize("shape,dtype,grid", NCHW_LANES, ids=str)
def test_cuda_nchw_statistics_take_output_lanes_for_whole_waves(shape, dtype, grid, force_launch):
    """NCHW statistics whose outputs are one to two waves of few-round blocks: the planner takes
    the output lanes of least makespan (in whole waves) where they save a quarter of one lane's
    (launch.cuh). (32, 512, 28, 28) over (0, 2, 3): 512 outputs of 392 leaves,
    one lane 512 blocks of 2 rounds (4 rounds on 396 slots), 32 lanes 16 tiles x 49 one-round
    splits (2 rounds), which its runs of 12.25 leaves also take (lanes_for_short_runs: runs
    that are not whole leaves); (64, 256, 56, 56) keeps one lane in float32 and in bfloat16, whose leaves
    over runs are one per thread (256 x 3 blocks: 10 rounds against 8 at best). The bits are the
    CPU's with the planned lanes and with one and 32 forced."""
    n = math.prod(shape)
    x = float_data(n, dtype, seed=7).reshape(shape)
    dims = [0, 2, 3]
    want, want_mean = torch.ops.treduce.sum(x, dims), torch.ops.treduce.mean(x, dims)  # CPU
    xc = x.cuda()
    for spec in (None, "y=256", "y=8"):
        force_launch(spec)
        assert_bits(torch.ops.treduce.sum(xc, dims), want, f"{spec}")
        assert_bits(torch.ops.treduce.mean(xc, dims), want_mean, f"mean {spec}")
    force_launch(None)
    grids = [
        g
        for m, g, _ in kernel_launches(lambda: torch.ops.treduce.sum(xc, dims))
        if "canon_kernel<" in m
    ]
    assert len(grids) == 1, grids
    if torch.cuda.get_device_properties(0).multi_processor_count == 132:
        assert grids[0] == grid, grids


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize(
    "shape", [(128, 256, 7, 7), (32, 1024, 14, 14), (256, 160, 5, 5), (64, 256, 28, 28)], ids=str
)
def test_cuda_short_runs_take_32_output_lanes(shape, dtype, force_launch):
    """NCHW statistics whose H x W runs are shorter than 1 KB, or up to 4 KB and not whole
    64-element leaves (28 x 28: 12.25 leaves; 16 lanes before), with leaves enough for fewer
    than 8 output lanes: the planner takes 32, so that a block's leaves at one reduced position
    are 32 neighbouring channels' runs, one stretch of memory, crossing a run's end together
    (plan_canon.cuh's lanes_for_short_runs): ceil(C / 32) tiles. The bits are the CPU's with
    the planned launch and with one output lane forced."""
    n = math.prod(shape)
    x = float_data(n, dtype, seed=n + 3).reshape(shape)
    dims = [0, 2, 3]
    want, want_mean = torch.ops.treduce.sum(x, dims), torch.ops.treduce.mean(x, dims)  # CPU
    xc = x.cuda()
    for spec in (None, "y=256"):
        force_launch(spec)
        assert_bits(torch.ops.treduce.sum(xc, dims), want, f"{spec}")
        assert_bits(torch.ops.treduce.mean(xc, dims), want_mean, f"mean {spec}")
    force_launch(None)
    launches = [
        (g, b)
        for m, g, b in kernel_launches(lambda: torch.ops.treduce.sum(xc, dims))
        if "canon_kernel<" in m
    ]
    assert len(launches) == 1, launches
    ((grid, block),) = launches
    assert grid[0] == math.ceil(shape[1] / 32) and block[0] == 256, launches


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize(
    "shape",
    [
        (32, 512, 28, 28),
        (6, 40, 14, 14),
        (5, 24, 9, 80),
        (3, 16, 1, 100),
        (4, 8, 7, 7),
        (7, 24, 5, 5),
    ],
    ids=str,
)
def test_cuda_leaves_across_two_runs(shape, dtype, force_launch):
    """Statistics over (0, 2, 3) whose H x W is not a multiple of 64: a whole leaf that crosses
    from one run into the next is two pieces, loaded in one batch where both are whole aligned
    vectors (canon.cuh's fold_leaf_two_runs: H x W = 784 for every dtype, 196 and 720 for
    float32), else element by element (H x W = 100: pieces off a 16-byte boundary; 49 and 25:
    runs shorter than a leaf; (7, 24, 5, 5): 175 elements per output, two whole leaves and one
    of 47). The bits are the CPU's with one, 8 and 32 output lanes, and with the latency kernel
    where it fits."""
    n = math.prod(shape)
    x = float_data(n, dtype, seed=n + 11).reshape(shape)
    dims = [0, 2, 3]
    want, want_mean = torch.ops.treduce.sum(x, dims), torch.ops.treduce.mean(x, dims)  # CPU
    xc = x.cuda()
    for spec in (None, "y=256", "y=32", "y=8", "y=256,lat=1", "y=8,splits=4"):
        force_launch(spec)
        assert_bits(torch.ops.treduce.sum(xc, dims), want, f"{spec}")
        assert_bits(torch.ops.treduce.mean(xc, dims), want_mean, f"mean {spec}")


# Launches that reach canon_kernel's leaf loaders over NCHW statistics: the plan, one, 8 and 32
# output lanes, two leaves per thread (16-bit and 8-bit inputs) or one, forced splits, the
# latency kernel.
RUN_SPECS = (
    None,
    "y=256",
    "y=256,per=2",
    "y=256,per=1",
    "y=32",
    "y=8",
    "y=8,splits=4",
    "y=256,lat=1",
)


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float8_e4m3fn], ids=str
)
@pytest.mark.parametrize(
    "shape",
    [
        (32, 512, 28, 28),  # runs of 784: 12.25 leaves
        (8, 40, 9, 16),  # 144: 2.25 leaves
        (6, 24, 10, 8),  # 80: a run holds one leaf, not a pair
        (16, 64, 7, 16),  # 112
        (3, 32, 20, 20),  # 400
        (4, 8, 56, 64),  # 3584: whole leaves and whole pairs (a control)
    ],
    ids=str,
)
def test_cuda_leaves_across_runs_of_whole_vectors(shape, dtype, force_launch):
    """Statistics over (0, 2, 3) whose H x W is whole 16-byte vectors (of every dtype here) but
    not whole leaves (and one of whole leaves and pairs, a control): a warp whose leaves (or pairs)
    all lie inside runs stages them, one whose leaves cross from one run into the next folds
    each on its lane (fold_leaf_two_runs), pairs that cross fall back to one leaf at a time; a
    misaligned view of the same input (x[1:] of the flat storage) takes the unaligned loaders.
    The bits are the CPU's under every launch in RUN_SPECS."""
    n = math.prod(shape)
    flat = float_data(n + 16, dtype, seed=n + 13)
    for x in (flat[:n].reshape(shape), flat[1 : n + 1].reshape(shape)):
        assert_sum_mean_bits_under(RUN_SPECS, x, [0, 2, 3], force_launch)


@pytest.mark.parametrize("op", ["sum", "mean"])
def test_cuda_leaves_across_runs_property(op, force_launch):
    """Property-based: an (N, C, HW) input, HW a drawn multiple of the dtype's 16-byte vector
    (some runs shorter than a pair of leaves, most not whole leaves), from an aligned or a
    shifted base, reduced over (0, 2) with a drawn dtype= (or none), gives the CPU's bits under
    a drawn launch (RUN_SPECS)."""
    from fuzz_cases import FUZZ_SETTINGS
    from hypothesis import given, settings
    from hypothesis import strategies as st

    dtypes = [torch.float32, torch.bfloat16, torch.float16, torch.float8_e5m2]

    @settings(FUZZ_SETTINGS, max_examples=120)
    @given(data=st.data())
    def prop(data):
        dtype = data.draw(st.sampled_from(dtypes))
        vec = 16 // torch.empty((), dtype=dtype).element_size()
        hw = vec * data.draw(st.integers(64 // vec, 1200 // vec))
        shape = (data.draw(st.integers(1, 12)), data.draw(st.integers(1, 70)), hw)
        shift = data.draw(st.sampled_from([0, 0, 1]))
        n = math.prod(shape)
        x = float_data(n + 1, dtype, seed=data.draw(st.integers(0, 1 << 16)))
        x = x[shift : n + shift].reshape(shape)
        out = data.draw(st.sampled_from([None, torch.float32, torch.float64, dtype]))
        spec = data.draw(st.sampled_from(RUN_SPECS))
        fn = getattr(torch.ops.treduce, op)
        try:
            want = fn(x, [0, 2], dtype=out)
        except (RuntimeError, TypeError):
            return  # a dtype= pair the op refuses (checked against torch elsewhere)
        force_launch(spec)
        got = fn(x.cuda(), [0, 2], dtype=out)
        force_launch(None)
        assert_bits_or_nan(got, want, f"{shape} shift {shift} {out} {spec}")

    prop()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize(
    "shape,dims",
    [
        ((128, 256, 7, 7), [0, 2, 3]),
        ((64, 96, 5, 5), [0, 2, 3]),
        ((300, 40, 3, 3), [0, 2, 3]),
        ((2048, 33, 31), [0, 2]),
        ((4096, 24, 1, 2), [0, 3]),
        ((96, 130, 63), [0, 2]),
        ((48, 40, 10, 10), [0, 2, 3]),
        ((40, 24, 15, 15), [0, 2, 3]),
        ((20, 72, 14, 14), [0, 2, 3]),
        ((4, 3, 10, 10), [0, 2, 3]),
        ((3, 5, 7, 9), [0, 2, 3]),
    ],
    ids=str,
)
def test_cuda_leaves_over_short_runs(shape, dims, dtype, force_launch):
    """Reductions over an outer dim and an innermost run shorter than a leaf (NCHW statistics
    with H x W < 64): every whole leaf spans two or more runs, and a warp's 32 whole leaves are
    staged together (canon.cuh's fold_leaves_staged_short_runs: one or two runs per load
    instruction, the position advanced from leaf to leaf without a division; runs of 49, 25, 9,
    31, 2 and 63 elements), and over runs of at least a leaf whose bytes are not whole 16-byte
    vectors (100, 196 16-bit elements; 225 of any dtype), whose leaves are staged the same way
    instead of walked. A warp whose leaves end the output (a partial last leaf, lanes past it:
    (4, 3, 10, 10) has 400 elements per output, (3, 5, 7, 9) 189, (300, 40, 3, 3) 2700) stages
    them too, each lane folding its own leaf's length. The bits are the CPU's with the planned
    launch and with 1, 2, 8, 32 and 256 output lanes, two leaves per thread, forced splits and
    the latency kernel."""
    n = math.prod(shape)
    x = float_data(n, dtype, seed=n + 5).reshape(shape)
    want, want_mean = torch.ops.treduce.sum(x, dims), torch.ops.treduce.mean(x, dims)  # CPU
    xc = x.cuda()
    for spec in (
        None,
        "y=256",
        "y=256,per=2",
        "y=128",
        "y=32",
        "y=8",
        "y=1",
        "y=8,splits=4",
        "y=256,lat=1",
    ):
        force_launch(spec)
        assert_bits(torch.ops.treduce.sum(xc, dims), want, f"{spec}")
        assert_bits(torch.ops.treduce.mean(xc, dims), want_mean, f"mean {spec}")


def test_plain_mode_is_the_plain_kernel(force_launch):
    """force_launch("plain") (the bench's baseline) runs the plain kernels: on data where
    the order matters it gives other bits than the canonical sum; on ordinary data a value
    within float32 rounding of it."""
    x = cancel_data(1 << 20, seed=4).cuda()
    y = torch.randn(1 << 20, device="cuda")
    canon, canon_y = torch.ops.treduce.sum(x), torch.ops.treduce.sum(y)
    force_launch("plain")
    assert not torch.equal(bits(torch.ops.treduce.sum(x)), bits(canon))
    plain_y = torch.ops.treduce.sum(y)
    assert abs(plain_y.item() - canon_y.item()) <= 1e-5 * y.abs().sum().item()


def test_cuda_bits_repeat_over_100_runs():
    x = wide_data((1 << 22) + 5, seed=9).cuda()
    want = bits(torch.ops.treduce.sum(x))
    rows = x[: 64 * 65536].view(64, 65536)
    want_rows = bits(torch.ops.treduce.sum(rows, [1]))
    for _ in range(100):
        assert torch.equal(bits(torch.ops.treduce.sum(x)), want)
        assert torch.equal(bits(torch.ops.treduce.sum(rows, [1])), want_rows)


def half_data(n, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, generator=g) * torch.exp2(torch.empty(n).uniform_(-6, 6, generator=g))
    if dtype in (torch.float8_e4m3fn, torch.float8_e5m2):
        x = x.clamp(-200, 200)
    return x.to(dtype)


def float_data(n, dtype, seed):
    """Hard sums in any float dtype: cancellation for float32 (and float64, nudged off float32
    values), wide exponent ranges for the 16- and 8-bit types."""
    if dtype == torch.float64:
        return cancel_data(n, seed=seed).double() * (1 + 1e-9)
    if dtype == torch.float32:
        return cancel_data(n, seed=seed)
    return half_data(n, dtype, seed=seed)


@pytest.mark.parametrize(
    "dtype", [torch.float64, torch.float16, torch.bfloat16, torch.float8_e4m3fn, torch.float8_e5m2]
)
@pytest.mark.parametrize(
    "shape,dims",
    [
        ((100003,), None),
        ((37, 5000), [1]),
        ((5000, 40), [0]),
        ((8, 64, 33, 17), [0, 2, 3]),
        ((3001, 16), [1]),
        ((1501, 32), [1]),
        ((4096, 2048), [0]),
        (((1 << 24) + 3,), None),
        ((2048, 8192), [1]),
    ],
)
def test_cuda_bits_equal_cpu_for_every_float_dtype(dtype, shape, dims):
    n = math.prod(shape)
    x = float_data(n, dtype, seed=n).reshape(shape)
    xc = x.cuda()
    out_dtypes = [None]
    if dtype in (torch.float16, torch.bfloat16):
        out_dtypes.append(torch.float32)
    for out in out_dtypes:
        assert_bits(
            torch.ops.treduce.sum(xc, dims, dtype=out),
            torch.ops.treduce.sum(x, dims, dtype=out),
            f"sum dtype={out}",
        )
        assert_bits(
            torch.ops.treduce.mean(xc, dims, dtype=out),
            torch.ops.treduce.mean(x, dims, dtype=out),
            f"mean dtype={out}",
        )
    if dtype == torch.float64:  # also float32 input with a float64 result
        f = cancel_data(n, seed=n).reshape(shape)
        assert_bits(
            torch.ops.treduce.sum(f.cuda(), dims, dtype=torch.float64),
            torch.ops.treduce.sum(f, dims, dtype=torch.float64),
            "float32 -> float64",
        )


@pytest.mark.parametrize(
    "shape,dims",
    [((37, 5000), [1]), ((5000, 40), [0]), ((8, 64, 33, 17), [0, 2, 3]), (((1 << 22) + 3,), None)],
)
def test_cuda_float64_partial_overflow_follows_the_cpu(shape, dims):
    """float64 values just below 2^1024 of either sign, about five per output among small ones:
    partial sums overflow (float64 has no wider format), and each output, finite, inf or NaN, is
    the canonical order's on both devices (NaN payloads aside)."""
    n = math.prod(shape)
    g = torch.Generator().manual_seed(n)
    x = torch.randn(n, generator=g, dtype=torch.float64)
    per_output = n if dims is None else math.prod(shape[d] for d in dims)
    huge = torch.rand(n, generator=g) < 5 / per_output
    sign = torch.randint(0, 2, (n,), generator=g).double() * 2 - 1
    top = (1 + torch.rand(n, generator=g, dtype=torch.float64) * 0.99) * 2.0**1023 * sign
    x = torch.where(huge, top, x).reshape(shape)
    for op in ("sum", "mean"):
        cpu = getattr(torch.ops.treduce, op)(x, dims)
        gpu = getattr(torch.ops.treduce, op)(x.cuda(), dims).cpu()
        nan = torch.isnan(cpu)
        assert torch.equal(nan, torch.isnan(gpu)), f"{op}: NaN on one device only"
        assert not torch.isfinite(cpu).all(), f"{op}: the data should overflow somewhere"
        assert_bits(gpu[~nan], cpu[~nan], op)


@pytest.mark.parametrize("n", [1 << 20, 1 << 23], ids=["2^20", "2^23"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32], ids=str)
def test_cuda_float_specials_and_extremes(dtype, n):
    """Staged leaves summed in double: inf, -inf (in one leaf and in two), NaN, the largest
    finite values, subnormals (the smallest too) and negative zeros give the CPU's bits (NaN
    where it has NaN), for full sums (2^23: in chunks), rows, a view with a step of 2, mid dims
    of two and columns (a whole and a partial last leaf), and 16-bit sums with a float32
    result."""
    info = torch.finfo(dtype)
    inf, nan = float("inf"), float("nan")
    base = torch.randn(n, generator=torch.Generator().manual_seed(3)).to(dtype)
    edits = {
        "inf": {100: inf},
        "-inf, later leaf": {70001: -inf},
        "inf and -inf in one leaf": {640: inf, 700: -inf},
        "inf and -inf in two leaves": {640: inf, 7000: -inf},
        "inf and -inf in one column's leaf": {640: inf, 640 + 5 * 1024: -inf},
        "inf and -inf in two of a column's leaves": {641: -inf, 641 + 100 * 1024: inf},
        "nan and inf in one column": {642 + 3 * 1024: nan, 642 + 9 * 1024: inf},
        "nan": {5000: nan},
        "largest finite": {i: info.max * (1 if i % 3 else -1) for i in range(128, 256)},
        "one largest": {300: info.max},
        "subnormals": {i: info.tiny * 0.5 * (-1) ** i for i in range(4096, 4096 + 512)},
        "smallest subnormals": {i: info.tiny * info.eps for i in range(8192, 8192 + 64)},
        "negative zeros": {i: -0.0 for i in range(0, 4096)},
    }
    out_dtypes = [None, torch.float32] if dtype != torch.float32 else [None]
    for name, edit in edits.items():
        x = base.clone()
        for i, v in edit.items():
            x[i] = v
        xc = x.cuda()
        views = (
            ("full sum", lambda t: t, None),
            ("rows", lambda t: t.view(256, n // 256), [1]),
            ("step 2", lambda t: t.view(512, n // 512)[:, ::2], [1]),
            ("mid dims of 2", lambda t: t.view(n // 2048, 1024, 2), [1]),
            ("columns", lambda t: t.view(n // 1024, 1024), [0]),
            ("columns, a partial last leaf", lambda t: t.view(n // 1024, 1024)[:1000], [0]),
        )
        for out in out_dtypes:
            for what, view, dims in views:
                got = torch.ops.treduce.sum(view(xc), dims, dtype=out).cpu()
                want = torch.ops.treduce.sum(view(x), dims, dtype=out)
                # NaN payloads may differ between the devices' conversions: NaN where the CPU
                # has NaN, the bits everywhere else
                assert torch.equal(got.isnan(), want.isnan()), f"{name}: {what} dtype={out}"
                keep = ~want.isnan()
                assert_bits(got[keep], want[keep], f"{name}: {what} dtype={out}")
    zeros = torch.full((1 << 16,), -0.0, dtype=dtype)
    assert_bits(
        torch.ops.treduce.sum(zeros.cuda()), torch.zeros((), dtype=dtype), "a zero sum is +0"
    )


def float16_run_data(n, k, seed):
    """float16 values whose runs need every bit of a double: 65504 at 70% of each output's k
    positions (a pattern of period 10, positive in the first half, negative in the second: the
    output's big values cancel exactly, while its nodes of 2^14 elements and more pass 2^29 and
    round), and subnormals of random sign and mantissa, so that the result is small and its
    float32 bits show how the nodes above the exact runs rounded."""
    g = torch.Generator().manual_seed(seed)
    i = torch.arange(n) % k
    big = torch.where(i < k // 2, 65504.0, -65504.0)
    sign = 2 * torch.randint(0, 2, (n,), generator=g) - 1
    tiny = (torch.randint(1, 1024, (n,), generator=g) * sign).double() * 2.0**-24
    mirror = torch.where(i < k // 2, i, i - k // 2)
    x = torch.where((mirror % 10 < 7) & (i < k // 2 * 2), big, tiny)
    return x.to(torch.float16)


@pytest.mark.parametrize(
    "spec",
    [
        None,
        "small=1,per=1",
        "small=1,per=2",
        "small=1,threads=64",
        "small=1,threads=128,per=1",
        "small=1,per=1,loop=4",
        "small=1,cluster=1",
        "small=1,cluster=0",
        "small=0",
    ],
)
@pytest.mark.parametrize(
    "shape,dims",
    [
        (((1 << 22) + 64,), None),
        ((4, 1 << 20), [1]),
        ((8, 1 << 16), [1]),
        ((64, 16384), [1]),
        ((3, 32768), [1]),
        (((1 << 20) + 4096 + 40,), None),
        ((5, 3000), [1]),
    ],
    ids=str,
)
def test_cuda_float16_runs_sum_exactly_in_any_order(shape, dims, spec, force_launch):
    """float16 sums fold each warp's whole aligned run in any order, straight from global
    memory (canon.cuh's fold_run_any_order): every sum of at most 2^13 float16
    values is exact in double, and the tree above a warp is unchanged. With data whose runs
    need all 53 bits and whose larger nodes round, the double results (dtype=float64, where a
    different grouping above 2^13 elements shows in the last bits), the float32 and float16
    ones and the means equal the CPU's bits, for every small-kernel configuration."""
    k = shape[-1] if dims else math.prod(shape)
    x = float16_run_data(math.prod(shape), k, seed=sum(shape)).reshape(shape)
    xc = x.cuda()
    force_launch(spec)
    for out in (torch.float32, None, torch.float64):
        assert_bits(
            torch.ops.treduce.sum(xc, dims, dtype=out),
            torch.ops.treduce.sum(x, dims, dtype=out),
            f"sum dtype={out}",
        )
    assert_bits(
        torch.ops.treduce.mean(xc, dims, dtype=torch.float32),
        torch.ops.treduce.mean(x, dims, dtype=torch.float32),
        "mean",
    )
    if k >= 1 << 16:
        # the data tells orders apart: torch's double sums (another tree), rounded to float32,
        # differ in the bits
        assert (
            torch.sum(x.double(), dims).float()
            != torch.ops.treduce.sum(x, dims, dtype=torch.float32)
        ).any()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cuda_ignores_the_cpu_flush_denormal_switch(dtype):
    """torch.set_flush_denormal(True) sets the CPU's flush-to-zero modes only: the CUDA sum of
    subnormal values keeps them (docs/numerics.md), and equals the CPU's bits with the switch
    off."""
    x = torch.full((1000,), 1e-40, dtype=dtype)
    want = torch.ops.treduce.sum(x)
    assert want.item() > 0
    if not torch.set_flush_denormal(True):
        pytest.skip("this CPU cannot flush denormals")
    try:
        on_gpu = torch.ops.treduce.sum(x.cuda())
    finally:
        torch.set_flush_denormal(False)
    assert_bits(on_gpu, want, "subnormal sum with the CPU's flush switch on")


def _transposed(shape, order, dtype, seed):
    """A tensor of logical `shape` stored with its dims in memory order `order` (outermost
    first), filled with hard sums (float_data)."""
    stored = [shape[d] for d in order]
    base = float_data(math.prod(shape), dtype, seed=seed).reshape(stored)
    return base.permute([order.index(d) for d in range(len(shape))])


def _draw_stored(data, st, nds, sizes, most):
    """A drawn logical shape (nds: the range of its dim count; each dim from `sizes`, the
    largest halved until at most `most` elements) and a drawn memory order for _transposed."""
    nd = data.draw(st.integers(*nds))
    shape = [data.draw(st.sampled_from(sizes)) for _ in range(nd)]
    while math.prod(shape) > most:
        shape[shape.index(max(shape))] //= 2
    return tuple(shape), list(data.draw(st.permutations(range(nd))))


def assert_bits_or_nan(got, want, msg):
    """NaN where the CPU has NaN (the two devices' NaNs may differ in sign and payload), the
    same bits elsewhere."""
    nan = want.isnan()
    assert torch.equal(got.isnan().cpu(), nan), msg
    assert_bits(got.cpu().masked_fill(nan, 0), want.masked_fill(nan, 0), msg)


def assert_sum_mean_bits_under(specs, x, dims, force_launch):
    """The CUDA sum and mean of the CPU tensor x over dims give the CPU's bits (assert_bits_or_nan)
    under each forced launch in specs; the default plan after."""
    want = [torch.ops.treduce.sum(x, dims), torch.ops.treduce.mean(x, dims)]
    xc = x.cuda()
    for spec in specs:
        force_launch(spec)
        assert_bits_or_nan(torch.ops.treduce.sum(xc, dims), want[0], f"sum {spec}")
        assert_bits_or_nan(torch.ops.treduce.mean(xc, dims), want[1], f"mean {spec}")
    force_launch(None)


def _tile_fits(sizes, dtype):
    """Whether canon_tile_kernel stages a reduced block of `sizes` of `dtype` (canon_config.cuh's
    tile_stage: one block's leaves, kTileStageMaxBytes of leaves padded by 4 bytes, 8 for 8-byte
    ones, and at most four dims longer than 1: geometry.h's tile_map_fits, whose 32-bit offsets
    the tests' small blocks never pass)."""
    K = math.prod(sizes)
    size = torch.empty((), dtype=dtype).element_size()
    per = 2 if size <= 2 else 1
    pad = 1 if size >= 4 else 4 // size
    walk = sum(n > 1 for n in sizes) <= 4  # an upper bound of the dims left after merging
    return walk and K <= 256 * 64 * per and -(-K // 64) * (64 + pad) * size <= 68 << 10


# Forced routes of a transposed reduced block: by default, staged (tile=1) or not (tile=0),
# walked in place (copy=0,tile=0), copied first wherever allowed (copy=1).
TRANSPOSED_SPECS = (None, "tile=1", "tile=0", "copy=0", "copy=0,tile=0", "copy=1")


# tuning.cuh's kTileMinElems: shorter transposed blocks are not staged by default.
TILE_MIN_ELEMS = 1024


def _transposed_route(spec, applies, fits, K):
    """(staged, copied) for a reduced block of K elements an output under `spec` (inputs under
    8 MiB), `applies` where it is stored transposed: staged where it fits and K is at least
    TILE_MIN_ELEMS, unless tile=0 or copy=1, and forced (tile=1) whatever the layout and K; else
    copied unless copy=0."""
    automatic = applies and K >= TILE_MIN_ELEMS
    staged = fits and (
        spec == "tile=1" or (automatic and spec not in ("tile=0", "copy=0,tile=0", "copy=1"))
    )
    return staged, applies and not staged and spec not in ("copy=0", "copy=0,tile=0")


# (logical shape, memory order, reduced dims): reduced blocks dense in memory but transposed
# against the canonical order (reduce_cuda.cu: copies_transposed_block; canon_config.cuh:
# tile_stage), and two controls that the routes leave alone unless tile=1 forces the stage (a
# column, a step-2 inner dim).
TRANSPOSED_CASES = [
    ((4, 16, 7, 7), (0, 1, 3, 2), (2, 3)),  # H x W maps transposed in memory
    ((8, 3, 56, 56), (0, 1, 3, 2), (2, 3)),
    ((4, 16, 14, 14), (0, 1, 3, 2), (0, 2, 3)),  # BatchNorm statistics of that layout
    ((4, 16, 14, 14), (0, 2, 3, 1), (1, 2, 3)),  # channels-last images over (C, H, W)
    ((4, 16, 14, 14), (0, 2, 3, 1), (1, 3)),
    ((6, 100, 33), (0, 2, 1), (1, 2)),
    ((6, 100, 33), (2, 1, 0), None),  # a full sum of a transposed block
    ((128, 128), (1, 0), None),  # 16384 elements: the most float32 leaves the stage takes
    ((8, 3, 120, 255), (0, 1, 3, 2), (2, 3)),  # 30600: 16-bit at two leaves per thread
    ((3, 2, 4, 5, 6, 7), (5, 0, 3, 1, 4, 2), (1, 2, 4, 5)),  # four dims, no two merged
    ((300, 70), (1, 0), (1,)),  # a column: one reduced dim, not copied
    ((6, 2, 50), (0, 2, 1), (1, 2)),  # an innermost stride of 2 (the kernels' step): not copied
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
@pytest.mark.parametrize(
    "shape,order,dims", TRANSPOSED_CASES, ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in TRANSPOSED_CASES]
)
def test_cuda_transposed_blocks_staged_copied_or_walked_give_the_cpus_bits(
    shape, order, dims, dtype, force_launch
):
    """A transposed reduced block is staged in shared memory in the canonical order
    (canon_tile_kernel, where it fits), copied into that order before the reduction (under
    kCopyTransposedMaxBytes, or forced with copy=1) or walked in place (copy=0,tile=0): the same
    elements in the same order, so sums, means and products give the CPU's bits every way. The
    profiler shows the tile kernel, or torch's copy kernel before ours, exactly where each
    route applies."""
    x = _transposed(shape, order, dtype, seed=sum(shape))
    if dims is None:
        dims = tuple(range(len(shape)))
    xp = x.abs() * 0.25 + 0.875  # products of magnitudes near 1
    want = [torch.ops.treduce.sum(x, dims), torch.ops.treduce.mean(x, dims)]
    want_prod = torch.ops.treduce.prod(xp, dims)
    xc, xpc = x.cuda(), xp.cuda()
    red = sorted(xc.stride(d) for d in dims if shape[d] > 1)
    inner = xc.stride(max(d for d in dims if shape[d] > 1))
    applies = len(red) >= 2 and red[0] == 1 and inner > 2
    fits = _tile_fits([shape[d] for d in dims], dtype)
    for spec in TRANSPOSED_SPECS:
        force_launch(spec)
        assert_bits_or_nan(torch.ops.treduce.sum(xc, dims), want[0], f"sum {spec}")
        assert_bits_or_nan(torch.ops.treduce.mean(xc, dims), want[1], f"mean {spec}")
        assert_bits_or_nan(torch.ops.treduce.prod(xpc, dims), want_prod, f"prod {spec}")
        names = kernels_run(lambda: torch.ops.treduce.sum(xc, dims))
        first = next(i for i, n in enumerate(names) if "treduce::" in n)
        copied = any("copy" in n for n in names[:first])  # torch's copy kernel, before ours
        staged = any("canon_tile_kernel" in n for n in names)
        route = _transposed_route(spec, applies, fits, math.prod(shape[d] for d in dims))
        assert (staged, copied) == route, (spec, names)
    force_launch(None)


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e5m2], ids=str)
@pytest.mark.parametrize(
    "shape,order,dims",
    [
        ((4, 16, 112, 112), (0, 1, 3, 2), (2, 3)),  # runs of 112: whole 16-element vectors
        ((4, 16, 56, 56), (0, 1, 3, 2), (2, 3)),  # runs of 56: staged element by element
        ((8, 64, 14, 14), (0, 2, 3, 1), (1, 2, 3)),  # channels-last, runs of C = 64
    ],
    ids=str,
)
def test_cuda_transposed_float8_blocks_give_the_cpus_bits(shape, order, dims, dtype, force_launch):
    """float8 sums and means of transposed blocks: staged a 16-element vector at a time where the
    block lies in runs of whole vectors (stage_tile_runs), element by element where not, copied
    or walked: the CPU's bits every way."""
    x = _transposed(shape, order, dtype, seed=sum(shape))
    assert_sum_mean_bits_under(TRANSPOSED_SPECS, x, dims, force_launch)


# Inputs over kCopyTransposedMaxBytes (8 MiB), float32: staged where an output's elements fit
# the stage, else copied only where each transposed tile (the reduced elements from the
# contiguous reduced dim inward) is small (kCopySmallTileElems), else walked.
LARGE_TRANSPOSED_CASES = [
    ((16, 64, 56, 56), (0, 1, 3, 2), (2, 3), "tile"),  # 56 x 56 maps transposed
    ((4, 64, 112, 112), (0, 1, 3, 2), (2, 3), "tile"),  # 112 x 112: 12544 elements an output
    ((32, 128, 28, 28), (0, 1, 3, 2), (0, 2, 3), "copy"),  # 28 x 28 tiles under a kept dim
    ((16, 64, 56, 56), (0, 2, 3, 1), (1, 2, 3), "walk"),  # channels-last, C x HW tiles
]


@pytest.mark.parametrize(
    "shape,order,dims,route",
    LARGE_TRANSPOSED_CASES,
    ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in LARGE_TRANSPOSED_CASES],
)
def test_cuda_large_transposed_blocks_routed_by_size(shape, order, dims, route):
    """Over 8 MiB a transposed block is staged where an output fits the stage, copied where
    its tiles are small and walked otherwise; every way the mean gives the CPU's bits."""
    x = _transposed(shape, order, torch.float32, seed=sum(shape))
    assert x.numel() * x.element_size() > 8 << 20
    want = torch.ops.treduce.mean(x, dims)
    xc = x.cuda()
    assert_bits_or_nan(torch.ops.treduce.mean(xc, dims), want, "mean")
    names = kernels_run(lambda: torch.ops.treduce.mean(xc, dims))
    first = next(i for i, n in enumerate(names) if "treduce::" in n)
    copied = any("copy" in n for n in names[:first])
    staged = any("canon_tile_kernel" in n for n in names)
    assert (staged, copied) == (route == "tile", route == "copy"), names


@pytest.mark.parametrize("op", ["sum", "mean", "prod"])
def test_cuda_transposed_blocks_property(op, force_launch):
    """Property-based: a tensor whose dims are stored in a drawn memory order, reduced over a
    drawn set of dims with a drawn dtype= (or none), gives the CPU's bits whether its reduced
    block is staged (tile=1), copied into the canonical order (copy=1) or walked in place
    (copy=0,tile=0), and by default."""
    from fuzz_cases import FUZZ_SETTINGS
    from hypothesis import given, settings
    from hypothesis import strategies as st

    dtypes = [torch.float32, torch.bfloat16, torch.float16, torch.float64]

    @settings(FUZZ_SETTINGS, max_examples=150)
    @given(data=st.data())
    def prop(data):
        shape, order = _draw_stored(data, st, (2, 5), [1, 2, 3, 5, 7, 16, 33, 64], 1 << 16)
        nd = len(shape)
        dims = tuple(sorted(data.draw(st.sets(st.integers(0, nd - 1), min_size=1))))
        dtype = data.draw(st.sampled_from(dtypes))
        out = data.draw(st.sampled_from([None, *dtypes]))
        x = _transposed(shape, order, dtype, seed=data.draw(st.integers(0, 1 << 16)))
        if op == "prod":
            x = x.abs() * 0.25 + 0.875
        fn = getattr(torch.ops.treduce, op)
        try:
            want = fn(x, dims, dtype=out)
        except RuntimeError:
            return  # a dtype= pair the op refuses (checked against torch elsewhere)
        for spec in (None, "tile=1", "copy=0,tile=0", "copy=1"):
            force_launch(spec)
            got = fn(x.cuda(), dims, dtype=out)
            assert_bits_or_nan(got, want, f"{shape} {order} {dims} {spec}")
        force_launch(None)

    prop()


@pytest.mark.parametrize("op", ["sum", "mean", "prod"])
def test_cuda_tile_stage_forced_on_any_view_property(op, force_launch):
    """Property-based: forced (tile=1), canon_tile_kernel stages any reduced block that fits,
    whatever its layout (rows, columns, step-2, sliced, off a 16-byte boundary, dims in a drawn
    memory order), and gives the CPU's bits with a drawn dtype= (or none)."""
    from fuzz_cases import FUZZ_SETTINGS
    from hypothesis import given, settings
    from hypothesis import strategies as st

    dtypes = [torch.float32, torch.bfloat16, torch.float16, torch.float64]

    @settings(FUZZ_SETTINGS, max_examples=120)
    @given(data=st.data())
    def prop(data):
        shape, order = _draw_stored(data, st, (1, 4), [1, 2, 3, 7, 14, 33, 64, 100], 1 << 15)
        nd = len(shape)
        dtype = data.draw(st.sampled_from(dtypes))
        base = _transposed(shape, order, dtype, seed=data.draw(st.integers(0, 1 << 16)))
        if op == "prod":
            base = base.abs() * 0.25 + 0.875  # keeps the memory order (dense)
        d = data.draw(st.integers(0, nd - 1))
        cut = data.draw(st.sampled_from(["none", "offset", "step2"]))

        def view(t):  # the same view of the CPU and the CUDA copy (dense: strides kept)
            if cut == "offset" and t.shape[d] > 1:
                return t.narrow(d, 1, t.shape[d] - 1)  # the base one element on
            if cut == "step2":
                return t[(slice(None),) * d + (slice(None, None, 2),)]
            return t

        x, xc = view(base), view(base.cuda())
        assert xc.stride() == x.stride()
        dims = tuple(sorted(data.draw(st.sets(st.integers(0, nd - 1), min_size=1))))
        out = data.draw(st.sampled_from([None, *dtypes]))
        fn = getattr(torch.ops.treduce, op)
        try:
            want = fn(x, dims, dtype=out)
        except RuntimeError:
            return  # a dtype= pair the op refuses (checked against torch elsewhere)
        force_launch("tile=1")
        got = fn(xc, dims, dtype=out)
        force_launch(None)
        assert_bits_or_nan(got, want, f"{tuple(x.shape)} {x.stride()} {dims} {dtype} {out}")

    prop()
