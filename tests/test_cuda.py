"""CUDA-only behaviour: large inputs (every strategy with and without the in-kernel cross-block
combine), streams, CUDA graphs, run-to-run determinism, and the self-resetting counters."""

import math

import numpy as np
import pytest
import torch
from conftest import assert_same_bits, assert_sum_close, make_input, reference_sum
from hypothesis import given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.cuda

# Shapes chosen to reach each strategy: rows (contiguous K, split or not), columns (inner outputs
# contiguous, split or not), strided (anything else), full reductions.
BIG_CASES = [
    ((1 << 24,), None, "contiguous"),  # full, split over many blocks
    ((1 << 25,), None, "misaligned"),  # full, unaligned start
    ((3, 1 << 23), [1], "contiguous"),  # few long rows: split rows
    ((1 << 22, 4), [1], "contiguous"),  # short rows (whole rows in each vector)
    (((1 << 23) + 3, 2), [1], "contiguous"),  # K = 2: packed rows, with leftover rows
    ((1 << 16, 257), [1], "contiguous"),  # odd row length: heads and tails
    ((4096, 4096), [0], "contiguous"),  # columns
    ((1 << 20, 17), [0], "contiguous"),  # narrow columns, split K
    ((256, 8192, 8), [1], "contiguous"),  # mid dim, small inner
    ((8, 2048, 1024), [0, 1], "contiguous"),  # bias-gradient style
    ((64, 128, 56, 56), [0, 2, 3], "channels_last"),  # NHWC statistics
    ((64, 128, 56, 56), [0, 2, 3], "contiguous"),  # NCHW statistics: runs of vectors
    ((4096, 8192), [1], "sliced"),  # strided rows
    ((4096, 4096), [1], "transposed"),  # rows of a transposed matrix = columns
    ((512, 64, 520), [0, 2], "permuted"),
]


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.bfloat16, torch.float16, torch.int32], ids=str
)
@pytest.mark.parametrize("case", range(len(BIG_CASES)))
def test_large_inputs(case, dtype):
    shape, dim, layout = BIG_CASES[case]
    x = make_input(shape, dtype, "cuda", layout)
    assert x.numel() >= (1 << 24)
    ref, absref, theirs = reference_sum(x, dim, False)
    out = torch.ops.treduce.sum(x, dim)
    assert out.dtype == theirs.dtype and out.shape == theirs.shape
    assert_sum_close(out, ref, absref, f"sum {shape} {dim} {layout}")
    d = dim or []
    assert_same_bits(torch.ops.treduce.amax(x, d), torch.amax(x, d), f"amax {shape} {dim} {layout}")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("case", range(len(BIG_CASES)))
def test_large_inputs_family(case, dtype):
    """The rest of the family on the same large shapes: mean, prod, amin; argmax and argmin on
    data with many ties (the first index must win across blocks); bitwise ops on int32."""
    shape, dim, layout = BIG_CASES[case]
    x = make_input(shape, dtype, "cuda", layout)
    msg = f"{shape} {dim} {layout} {dtype}"
    d = dim or []
    mean = torch.ops.treduce.mean(x, dim)
    exact = torch.mean(x.double(), dim)
    scale = torch.mean(x.double().abs(), dim)
    tol = 4e-6 if dtype == torch.float32 else 8e-3
    assert mean.dtype == dtype and mean.shape == exact.shape
    assert ((mean.double() - exact).abs() <= tol * scale).all(), "mean " + msg
    assert_same_bits(torch.ops.treduce.amin(x, d), torch.amin(x, d), "amin " + msg)
    # Products: ones with a few 2, 0.5 and -1 at random places, written into x's own layout.
    # Every partial product is a signed power of two, so the result is exact and any element
    # dropped or counted twice shows. (Near-1 floats cannot be checked tightly at this K: float32
    # rounding alone moves a 2^24-term product by percents, in torch.prod as in ours.)
    vals = torch.ones(shape, device="cuda")
    flat = vals.view(-1)
    pos = torch.randperm(flat.numel(), device="cuda")[:113]
    flat[pos[:60]] = 2.0
    flat[pos[60:110]] = 0.5
    flat[pos[110:]] = -1.0
    p = make_input(shape, dtype, "cuda", layout).copy_(vals)  # copy_ keeps the layout's strides
    want = p.double()
    for dd in sorted(dim if dim is not None else range(p.dim()), reverse=True):
        want = want.prod(dd)
    assert_same_bits(torch.ops.treduce.prod(p, dim), want.to(dtype), "prod " + msg)
    ties = x.copy_((x.float() * 2).round().clamp(-3, 3))  # 7 distinct values, x's layout
    args = [None] + ([dim[0]] if dim is not None and len(dim) == 1 else [])
    for one in args:
        for name in ("argmax", "argmin"):
            assert_same_bits(
                getattr(torch.ops.treduce, name)(ties, one),
                getattr(torch, name)(ties, one),
                f"{name} dim={one} " + msg,
            )
    if dtype == torch.float32:
        bits = make_input(shape, torch.int32, "cuda", layout)
        bits.bitwise_or_(0x1100).bitwise_and_(~0x2000)  # in place: the layout stays; AND and
        # OR over many values are then neither 0 nor -1
        for name in ("bitwise_and", "bitwise_or", "bitwise_xor"):
            ours = getattr(torch.ops.treduce, name)(bits, dim)
            cpu = getattr(torch.ops.treduce, name)(bits.cpu(), dim)
            assert torch.equal(ours.cpu(), cpu), f"{name} " + msg


def test_vocabulary_argmax_ties_bf16():
    """(B, 128256) bf16 logits, dim 1: bf16 has many ties; the first index must win."""
    for b in (1, 64):
        x = torch.randn(b, 128256, device="cuda").to(torch.bfloat16)
        x[:, 100000] = x.max()  # a tie with an earlier maximum in some rows
        assert_same_bits(torch.ops.treduce.argmax(x, 1), torch.argmax(x, 1), f"B={b}")
        assert_same_bits(torch.ops.treduce.argmin(x, 1), torch.argmin(x, 1), f"B={b}")


# Short contiguous rows of K = 2 .. 16 vectors (packed_rows_kernel with R = K / V neighbouring
# lanes per row; argmax and argmin up to 8 vectors, longer rows through rows_kernel): float32
# rows of 8-64, 16-bit rows of 16-128, 1-byte rows of 32-128, 8-byte
# rows of 4-32; M odd, so that the last warp's lanes run past the end.
SPLIT_ROW_CASES = [
    (torch.float32, (8, 16, 32, 64)),
    (torch.bfloat16, (16, 32, 64, 128)),
    (torch.float16, (16, 64, 128)),
    (torch.int8, (32, 64, 128)),
    (torch.uint8, (32, 128)),
    (torch.float64, (4, 8, 16, 32)),
    (torch.int64, (4, 16, 32)),
    (torch.int32, (8, 32, 64)),
    (torch.bool, (32, 64, 128)),
]


@pytest.mark.parametrize("dtype,ks", SPLIT_ROW_CASES, ids=[str(c[0]) for c in SPLIT_ROW_CASES])
def test_short_rows_over_neighbouring_lanes(dtype, ks):
    """Rows that span 2-16 vectors, held by neighbouring lanes that meet by shuffles: amax, amin
    (with NaNs), argmax and argmin (ties, NaNs: the first index), prod, integer sums and the
    bitwise ops match torch exactly, with a NaN or tie in the last part of some rows."""
    for k in ks:
        m = (1 << 20) // k + 3
        x = make_input((m, k), dtype, "cuda")
        if dtype.is_floating_point:
            x = (x * 2).round().to(dtype)  # ties
            x[::7, -1] = float("nan")
            x[::11, k // 2] = float("nan")
        msg = f"{dtype} ({m}, {k})"
        if dtype != torch.bool:
            for name in ("amax", "amin"):
                assert_same_bits(
                    getattr(torch.ops.treduce, name)(x, [1]),
                    getattr(torch, name)(x, 1),
                    f"{name} {msg}",
                )
            for name in ("argmax", "argmin"):
                assert_same_bits(
                    getattr(torch.ops.treduce, name)(x, 1),
                    getattr(torch, name)(x, 1),
                    f"{name} {msg}",
                )
        if not dtype.is_floating_point:
            assert_same_bits(torch.ops.treduce.sum(x, [1]), torch.sum(x, 1), f"sum {msg}")
            ints = x if dtype == torch.bool else (x % 3) - 1  # products that wrap
            assert_same_bits(torch.ops.treduce.prod(ints, [1]), torch.prod(ints, 1), f"prod {msg}")
            if dtype != torch.bool:
                want = x.cpu().numpy()
                for name, uf in (
                    ("bitwise_and", np.bitwise_and),
                    ("bitwise_or", np.bitwise_or),
                    ("bitwise_xor", np.bitwise_xor),
                ):
                    got = getattr(torch.ops.treduce, name)(x, [1]).cpu()
                    ref = torch.from_numpy(np.asarray(uf.reduce(want, axis=1))).to(dtype)
                    assert torch.equal(got, ref), f"{name} {msg}"
        else:
            y = 1 + 0.01 * make_input((m, k), torch.float32, "cuda")
            y = y.to(dtype)
            got = torch.ops.treduce.prod(y, [1]).double()
            assert torch.allclose(
                got, y.double().prod(1), rtol=2 * k * torch.finfo(dtype).eps, atol=0
            ), f"prod {msg}"


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize(
    "shape,dim",
    [
        ((65536, 64), [0]),
        ((4096, 1024), [0]),
        ((40, 8), [0]),
        ((16, 4096, 16), [1]),
        ((64, 8, 24, 24), [0, 2, 3]),
    ],
)
def test_column_extremes_16bit_nan_inf(shape, dim, dtype):
    """amax/amin of 16-bit columns read 16-byte vectors of 8 neighbouring columns and keep each
    two columns in one packed pair (cols.cuh, ColumnFold): a NaN in one column of a pair must
    reach that column only, +-inf must win or lose as in torch, and a column of nothing but the
    identity (-inf for max, +inf for min) must give it back. Split columns (many rows) and the
    unsplit ones, mid dims and NHWC statistics (channels_last)."""
    keep = [d for d in range(len(shape)) if d not in dim]
    perm = dim + keep
    pv = torch.randn([shape[d] for d in perm]).contiguous()
    flat = pv.view(-1, math.prod(shape[d] for d in keep))  # [reduced, kept]
    rows, cols = flat.shape
    where = torch.randint(0, rows, (cols,)).tolist()
    vals = {1: float("nan"), 2: float("inf"), 3: float("-inf"), 5: float("nan")}
    for c in range(cols):  # one element of the column, at a random reduced position
        if c % 8 in vals:
            flat[where[c], c] = vals[c % 8]
    flat[:, 6::8] = float("-inf")  # whole columns of -inf and of +inf
    flat[:, 7::8] = float("inf")
    x = pv.permute([perm.index(d) for d in range(len(shape))]).to(dtype)
    x = x.contiguous(memory_format=torch.channels_last) if len(shape) == 4 else x.contiguous()
    x = x.cuda()
    for name in ("amax", "amin"):
        ours = getattr(torch.ops.treduce, name)(x, dim)
        want = getattr(torch, name)(x, dim)
        assert_same_bits(ours, want, f"{name} {shape} {dim} {dtype}")
        assert torch.isnan(ours).any() and torch.isinf(ours).any()


@settings(max_examples=60, deadline=None)
@given(
    outer=st.integers(1, 40),
    kept=st.integers(1, 24),
    inner_vecs=st.integers(1, 40),
    blocks=st.booleans(),
    dtype=st.sampled_from([torch.float32, torch.bfloat16, torch.float16, torch.int32]),
    op=st.sampled_from(["amax", "amin", "sum"]),
)
def test_runs_of_vectors_property(outer, kept, inner_vecs, blocks, dtype, op):
    """Reduced elements in runs of whole aligned 16-byte vectors (rows_kernel's runs of vectors,
    walked by TwoDimWalker where they are two dims): NCHW statistics (outer, kept, run) over
    (0, 2), and the fp8 block view (outer, run, kept, run) over (1, 3). amax/amin and integer
    sums are exact: the bits must be torch's."""
    run = inner_vecs * 16 // dtype.itemsize  # whole vectors
    if blocks:
        shape, dim = (outer, run, kept, run), [1, 3]
    else:
        shape, dim = (outer, kept, run), [0, 2]
    if dtype == torch.int32:
        x = torch.randint(-1000, 1000, shape, dtype=dtype, device="cuda")
    else:
        x = torch.randn(shape, device="cuda").to(dtype)
    if op == "sum" and dtype != torch.int32:
        op = "amax"  # floating sums take the canonical kernels, not these
    ours = getattr(torch.ops.treduce, op)(x, dim)
    want = getattr(torch, op)(x, dim)
    assert_same_bits(ours, want, f"{op} {shape} {dim} {dtype}")


PLAIN_OPS = ["amax", "amin", "argmax", "argmin", "sum", "prod", "bitwise_or", "bitwise_xor"]
PLAIN_DTYPES = [torch.float32, torch.bfloat16, torch.float16, torch.float64, torch.int8,
                 torch.uint8, torch.int16, torch.int32, torch.int64, torch.bool]  # fmt: skip


def plain_input(op, dtype, shape, special):
    """Values with ties: small integers (in -3..3 for products and floating inputs, -100..100
    for the other integer ops), `special` (NaN or an infinity) at about 1% of the places of
    floating inputs."""
    if dtype == torch.bool:
        return torch.rand(shape, device="cuda") < 0.5
    lo, hi = (-3, 4) if op == "prod" or dtype.is_floating_point else (-100, 101)
    x = torch.randint(lo, hi, shape, device="cuda").to(dtype)
    if dtype.is_floating_point and special is not None:
        where = torch.randint(0, x.numel(), (max(1, x.numel() // 97),), device="cuda")
        x.view(-1)[where] = special
    return x


def plain_op(op, dtype, floating, boolean):
    """op where the plain kernels take it for dtype, else `floating` (floating sums, products and
    bitwise ops: the canonical kernels, or none) or `boolean` (arg ops of bool, which torch lacks)."""
    if dtype.is_floating_point and (op in ("sum", "prod") or op.startswith("bitwise")):
        return floating
    if dtype == torch.bool and op in ("argmax", "argmin"):
        return boolean
    return op


def plain_reference(op, x, dim):
    """torch's answer (numpy's for the bitwise ops, which torch lacks)."""
    if op.startswith("bitwise"):
        uf = {"bitwise_or": np.bitwise_or, "bitwise_xor": np.bitwise_xor}[op]
        return torch.from_numpy(np.asarray(uf.reduce(x.cpu().numpy(), axis=dim))).to(x.dtype)
    return getattr(torch, op)(x, dim)


def test_plain_columns_property(force_launch):
    """The plain column kernels (cols.cuh) over (outer, k, inner) reduced over k: the 16-byte
    variant across neighbouring outputs where the layout is aligned for it, and one output a
    thread forced ("vec=0"). The bits are torch's for every exact op: ties, NaNs and infinities
    for the extremes and the arg ops (the first index wins), integer sums and wrapping
    products, the bitwise ops."""

    @settings(max_examples=150, deadline=None)
    @given(
        outer=st.sampled_from([1, 1, 2, 3, 5]),
        k=st.integers(1, 300) | st.sampled_from([1024, 4099, 20000]),
        inner=st.integers(1, 70) | st.sampled_from([256, 1000, 4096]),
        dtype=st.sampled_from(PLAIN_DTYPES),
        op=st.sampled_from(PLAIN_OPS),
        one_a_thread=st.booleans(),
        special=st.sampled_from([None, float("nan"), float("-inf"), float("inf")]),
    )
    def prop(outer, k, inner, dtype, op, one_a_thread, special):
        op = plain_op(op, dtype, "argmax", "amin")
        k = max(1, min(k, (1 << 22) // (outer * inner)))  # at most 4M elements
        x = plain_input(op, dtype, (outer, k, inner), special)
        force_launch("vec=0" if one_a_thread else None)
        ours = getattr(torch.ops.treduce, op)(x, 1 if op.startswith("arg") else [1])
        force_launch(None)
        msg = f"{op} {dtype} ({outer}, {k}, {inner}) one_a_thread={one_a_thread}"
        assert_same_bits(ours.cpu(), plain_reference(op, x, 1).cpu(), msg)

    prop()


def test_step_two_rows_property():
    """Rows at stride 2 (x[..., ::2]: rows.cuh's kLoadStepTwo) read as 16-byte vectors of which
    every other element is folded: rows that start at any element past a 16-byte boundary (either
    parity), any row pitch, short rows (a head and a tail, no whole vector) and rows long enough
    to split over blocks, a single row (a full reduction of x[::2]). The bits are torch's for
    every exact op of the plain kernels, with ties, NaNs and infinities."""

    @settings(max_examples=150, deadline=None)
    @given(
        rows=st.sampled_from([1, 1, 2, 3, 7, 64, 1000]),
        k=st.integers(1, 300) | st.sampled_from([4099, 20000, 100000]),
        pad=st.integers(-1, 9),
        offset=st.integers(0, 17),
        dtype=st.sampled_from([d for d in PLAIN_DTYPES if d.itemsize <= 4]),
        op=st.sampled_from(PLAIN_OPS),
        special=st.sampled_from([None, float("nan"), float("-inf"), float("inf")]),
    )
    def prop(rows, k, pad, offset, dtype, op, special):
        op = plain_op(op, dtype, "argmin", "amax")
        rows = max(1, min(rows, (1 << 22) // k))  # at most 4M elements read
        pitch = max(1, 2 * k - 1 + pad)  # (pad -1: rows that share their end and start)
        storage = plain_input(op, dtype, (offset + (rows - 1) * pitch + 2 * k,), special)
        x = storage.as_strided((rows, k), (pitch, 2), offset)
        ours = getattr(torch.ops.treduce, op)(x, 1 if op.startswith("arg") else [1])
        msg = f"{op} {dtype} rows={rows} k={k} pitch={pitch} offset={offset}"
        assert_same_bits(ours.cpu(), plain_reference(op, x, 1).cpu(), msg)

    prop()


@pytest.mark.parametrize("offset", [0, 1])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("rows,k", [(3, 5), (64, 1000), (1, 100003), (1000, 37)])
def test_plain_mode_step_two_rows(rows, k, dtype, offset, force_launch):
    """The plain float-accumulator sums and means (force_launch("plain"), the bench's baseline)
    over rows at stride 2 take the stride-2 row loader too: within float32 rounding of the exact
    sum and mean, from an aligned base and one element off."""
    storage = torch.randn(offset + rows * 2 * k, device="cuda").to(dtype)
    x = storage[offset:].view(rows, 2 * k)[:, ::2]
    exact = x.double().sum(1)
    tol = 1e-5 * x.double().abs().sum(1) + 2 * torch.finfo(torch.float32).eps * exact.abs()
    force_launch("plain")
    got_sum = torch.ops.treduce.sum(x, [1], dtype=torch.float32).double()
    got_mean = torch.ops.treduce.mean(x, [1], dtype=torch.float32).double()
    force_launch(None)
    assert ((got_sum - exact).abs() <= tol).all(), f"sum {dtype} ({rows}, {k}) +{offset}"
    assert ((got_mean - exact / k).abs() <= tol / k).all(), f"mean {dtype} ({rows}, {k}) +{offset}"


@pytest.mark.parametrize(
    "shape,dim", [((1 << 24,), None), ((5, 1 << 22), [1]), ((1 << 22, 6), [0]), ((2048, 2048), [0])]
)
def test_bitwise_identical_run_to_run(shape, dim):
    x = make_input(shape, torch.float32, "cuda")
    first = torch.ops.treduce.sum(x, dim)
    for _ in range(50):
        assert torch.equal(torch.ops.treduce.sum(x, dim), first)


def test_counters_reset_between_calls():
    """Split reductions of different shapes, back to back: stale counters would skip outputs."""
    for i in range(30):
        n = (1 << 20) + 977 * i
        x = make_input((n,), torch.float32, "cuda")
        y = make_input((3, n // 3), torch.float32, "cuda")
        for t, dim in ((x, None), (y, [1]), (y.t(), [0])):
            ref, absref, _ = reference_sum(t, dim, False)
            assert_sum_close(torch.ops.treduce.sum(t, dim), ref, absref, f"iteration {i}")


def test_non_default_stream():
    s = torch.cuda.Stream()
    x = make_input((1 << 22,), torch.float32, "cuda")
    y = make_input((4096, 1024), torch.bfloat16, "cuda")
    torch.cuda.synchronize()
    with torch.cuda.stream(s):
        a = torch.ops.treduce.sum(x)
        b = torch.ops.treduce.amax(y, [0])
        c = torch.ops.treduce.sum(y, [1], dtype=torch.float32)
    s.synchronize()
    ref, absref, _ = reference_sum(x, None, False)
    assert_sum_close(a, ref, absref)
    assert_same_bits(b, torch.amax(y, [0]))
    ref, absref, _ = reference_sum(y, [1], False, dtype=torch.float32)
    assert_sum_close(c, ref, absref)


def test_two_streams_concurrently():
    streams = [torch.cuda.Stream() for _ in range(4)]
    xs = [make_input((1 << 21,), torch.float32, "cuda") for _ in streams]
    torch.cuda.synchronize()
    outs = []
    for _ in range(10):
        for s, x in zip(streams, xs):
            with torch.cuda.stream(s):
                outs.append((x, torch.ops.treduce.sum(x)))
    torch.cuda.synchronize()
    for x, out in outs:
        ref, absref, _ = reference_sum(x, None, False)
        assert_sum_close(out, ref, absref)


def test_cuda_graph_capture_and_replay():
    full = make_input((1 << 22,), torch.float32, "cuda")
    rows = make_input((8, 1 << 18), torch.bfloat16, "cuda")
    cols = make_input((1 << 16, 48), torch.float32, "cuda")
    # Warm up on a side stream, as torch recommends before capture.
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            torch.ops.treduce.sum(full)
    torch.cuda.current_stream().wait_stream(s)

    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        o1 = torch.ops.treduce.sum(full)
        o2 = torch.ops.treduce.amax(rows, [1])
        o3 = torch.ops.treduce.sum(cols, [0])
        o4 = torch.ops.treduce.sum(rows, [1], dtype=torch.float32)
    for _ in range(5):
        full.copy_(torch.randn_like(full))
        rows.copy_(torch.randn_like(rows))
        cols.copy_(torch.randn_like(cols))
        g.replay()
        torch.cuda.synchronize()
        ref, absref, _ = reference_sum(full, None, False)
        assert_sum_close(o1, ref, absref, "graph full")
        assert_same_bits(o2, torch.amax(rows, [1]), "graph amax")
        ref, absref, _ = reference_sum(cols, [0], False)
        assert_sum_close(o3, ref, absref, "graph cols")
        ref, absref, _ = reference_sum(rows, [1], False, dtype=torch.float32)
        assert_sum_close(o4, ref, absref, "graph rows f32")
    # Eager calls still work after capture, interleaved with replays.
    e = torch.ops.treduce.sum(full)
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(e, o1)


def test_other_device_guard():
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    x = make_input((1 << 20,), torch.float32, "cuda:1")
    out = torch.ops.treduce.sum(x)
    assert out.device == x.device
    ref, absref, _ = reference_sum(x, None, False)
    assert_sum_close(out, ref, absref)


# In test_large's xdist group: its cases hold up to 100 GiB, and this test's check of the free
# memory would otherwise race with them in another worker.
@pytest.mark.xdist_group("large")
def test_over_two_to_the_31_elements():
    """One launch, int64 indexing: 2^31 + 5 bytes of int8 (about 2 GiB)."""
    free, _ = torch.cuda.mem_get_info()
    if free < 12 * (1 << 30):
        pytest.skip("needs 12 GiB of free GPU memory")
    n = (1 << 31) + 5
    x = torch.ones(n, dtype=torch.int8, device="cuda")
    x[-1] = 3
    x[7] = -1
    assert torch.ops.treduce.sum(x).item() == n - 2 + 2
    assert torch.ops.treduce.amax(x).item() == 3
    assert torch.ops.treduce.argmax(x).item() == n - 1  # an index past 2^31
    assert torch.ops.treduce.argmin(x).item() == 7
    assert torch.ops.treduce.amin(x).item() == -1
    y = x.view(-1)[: (1 << 31) + 4].view(2, -1)
    assert torch.equal(torch.ops.treduce.sum(y, [1]), y.sum(1))
