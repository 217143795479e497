"""On the CPU: float sums in the canonical order (docs/numerics.md).

The order: the K reduced elements of an output, in logical order, are cut into leaves of 64 at
fixed positions; each leaf is folded in order, every element widened to float64 (float32 and
narrower inputs); the leaf sums are merged in float64 by the perfect binary tree over leaf index
(missing leaves are the identity); the result is rounded once. `canonical_sum` below is an
independent numpy implementation of that order: the CPU backend must match it bit for bit,
whatever the layout, offset or thread count. The CUDA kernels follow the same order:
tests/test_numerics_cuda.py compares their bits with the CPU's.
"""

import itertools
import math
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from conftest import DEVICES, cancel_data, data_sets, wide_data
from hypothesis import given, settings
from hypothesis import strategies as st

LEAF = 64


def leaf_matrix(x, leaf):
    """x (1-d) in float64 as rows of `leaf` values, the last row padded with zeros."""
    nleaves = -(-x.size // leaf)
    pad = np.zeros(nleaves * leaf, dtype=np.float64)
    pad[: x.size] = x
    return pad.reshape(nleaves, leaf)


def canonical_sum(values, leaf=LEAF):
    """The canonical sum of a 1-d float32 array, in numpy float64 arithmetic, rounded to float32."""
    leaves = leaf_matrix(np.asarray(values, dtype=np.float32), leaf)
    if leaves.size == 0:
        return np.float32(0.0)
    with np.errstate(invalid="ignore", over="ignore"):
        s = np.zeros(len(leaves), dtype=np.float64)
        for j in range(leaf):  # in order inside each leaf; zero padding adds nothing
            s = s + leaves[:, j]
        while s.size > 1:  # the perfect binary tree: pair (2k, 2k + 1), an odd last one waits
            if s.size % 2:
                s = np.append(s, 0.0)
            s = s[0::2] + s[1::2]
        return np.float32(s[0])


def canonical_sum64(values, leaf=LEAF, compensated=True):
    """The canonical float64 sum (CompSumOp): each leaf folds its values in order into a pair
    (s, c), s the running sum and c the sum of TwoSum's rounding errors; the pairs meet in the
    perfect binary tree (s by TwoSum, c plus c plus the error); the result is s + c, rounded
    once (s where s is infinite or NaN). compensated=False: the plain in-order double sum."""
    leaves = leaf_matrix(np.asarray(values, dtype=np.float64), leaf)
    if leaves.size == 0:
        return np.float64(0.0)

    def two_sum(a, b):
        t = a + b
        bb = t - a
        return t, (a - (t - bb)) + (b - bb)

    with np.errstate(invalid="ignore", over="ignore"):
        s, c = np.zeros(len(leaves)), np.zeros(len(leaves))
        for j in range(leaf):
            if compensated:
                s, e = two_sum(s, leaves[:, j])
                c = c + e
            else:
                s = s + leaves[:, j]
        while s.size > 1:
            if s.size % 2:
                s, c = np.append(s, 0.0), np.append(c, 0.0)
            t, e = two_sum(s[0::2], s[1::2])
            s, c = t, (c[0::2] + c[1::2]) + e
        return s[0] + c[0] if s[0] - s[0] == 0 else s[0]


def f32_bits(t):
    return np.asarray(t, dtype=np.float32).view(np.uint32)


@pytest.mark.parametrize("n", [1, 2, 63, 64, 65, 127, 1000, 16384, 16385, 100003, 262147])
def test_cpu_follows_the_canonical_order(n):
    for x in (cancel_data(n, seed=n), wide_data(n, seed=n)):
        want = canonical_sum(x.numpy())
        got = torch.ops.treduce.sum(x)
        assert f32_bits(got.numpy()) == f32_bits(want), f"n={n}: {got.item()!r} vs {want!r}"


def test_the_reference_pins_the_order():
    """On this data a different leaf size or order, a plain float32 sum or numpy's own float64
    sum gives other bits, so the test above fails if the backend's order changes."""
    x = cancel_data(100003, seed=7).numpy()
    ref = f32_bits(canonical_sum(x))
    assert f32_bits(canonical_sum(x, leaf=32)) != ref
    assert f32_bits(canonical_sum(x[::-1].copy())) != ref
    assert f32_bits(np.float32(np.sum(x, dtype=np.float32))) != ref
    assert f32_bits(np.float32(np.sum(x.astype(np.float64)))) != ref


def float64_data(n, seed):
    """cancel_data in float64 plus noise of 2^-20: pairs up to 2^60 that cancel, so the running
    sums round (their float32 values span more than 53 bits) while the true sum is small; the
    compensation, and its order, show in the bits."""
    g = torch.Generator().manual_seed(seed + 1)
    noise = torch.randn(n, generator=g, dtype=torch.float64) * 2.0**-20
    return cancel_data(n, seed).double() + noise


@pytest.mark.parametrize("n", [1, 63, 64, 65, 511, 512, 513, 1000, 16384, 16385, 100003])
def test_float64_follows_the_canonical_order(n):
    x = float64_data(n, seed=n)
    want = canonical_sum64(x.numpy())
    assert torch.ops.treduce.sum(x).numpy().view(np.uint64) == np.float64(want).view(np.uint64)
    assert torch.ops.treduce.mean(x).item() == want / n
    rows = x[: n - n % 7].view(7, -1)  # rows: each output's own leaves
    got = torch.ops.treduce.sum(rows, [1]).numpy().view(np.uint64)
    want_rows = [np.float64(canonical_sum64(r)).view(np.uint64) for r in rows.numpy()]
    assert got.tolist() == want_rows


def test_the_float64_reference_pins_the_order():
    """On this data the plain in-order sum, another leaf size, the reversed order and numpy's
    sum give other bits than the compensated canonical order, so the test above would see them."""
    x = float64_data(100003, seed=7).numpy()
    ref = np.float64(canonical_sum64(x)).view(np.uint64)
    others = [
        canonical_sum64(x, compensated=False),
        canonical_sum64(x, leaf=32),
        canonical_sum64(x[::-1].copy()),
        np.sum(x),
    ]
    for other in others:
        assert np.float64(other).view(np.uint64) != ref


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 3000),
    spread=st.integers(0, 1000),
    special=st.sampled_from([None, "inf", "-inf", "nan", "zeros"]),
    near_max=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_float64_canonical_order_at_any_spread(n, spread, special, near_max, seed):
    """float64 values of random sign over `spread` binades, with infinities, NaN or zeros mixed
    in: the compensated leaves (in vector lanes where the CPU has them) keep the reference's bits.
    near_max: the largest values just below 2^1024, so that partial sums overflow (no wider
    format holds them): the result is the canonical order's inf or NaN (docs/semantics.md)."""
    g = np.random.default_rng(seed)
    x = g.uniform(1, 2, n) * 2.0 ** g.integers(-spread // 2, spread // 2 + 1, n)
    x *= g.choice([-1.0, 1.0], n)
    if near_max:
        x *= 2.0 ** (1022 - spread // 2)
    if special is not None:
        x[g.random(n) < 0.01] = {"inf": np.inf, "-inf": -np.inf, "nan": np.nan, "zeros": 0.0}[
            special
        ]
    ours = torch.ops.treduce.sum(torch.from_numpy(x)).numpy()
    want = np.float64(canonical_sum64(x))
    if np.isnan(want):
        assert np.isnan(ours)
    else:
        assert ours.view(np.uint64) == want.view(np.uint64)


# Expected bits of canonical_sum(cancel_data(n, seed)) (torch 2.11's CPU generator), stored
# once: they pin the reference itself, so that the order cannot drift together with the test.
# (Re-pinned only where the order itself changes, as when the leaves and the tree went from
# compensated float32 pairs to float64.)
PINNED_BITS = {(100003, 7): 0xC5C00000, (16385, 3): 0xC4E2C748, (262147, 1): 0x45AA8000}


def test_pinned_bits():
    for (n, seed), bits in PINNED_BITS.items():
        x = cancel_data(n, seed)
        ours = int(f32_bits(torch.ops.treduce.sum(x).numpy()))
        ref = int(f32_bits(canonical_sum(x.numpy())))
        assert ours == ref == bits, (n, seed, hex(ours), hex(ref), hex(bits))


@pytest.mark.parametrize("name", ["D1 randn", "D2 uniform", "D3 0.1", "D4 2^U(-20,20)"])
def test_float32_sums_are_correctly_rounded(name):
    n = 1 << 22
    x = data_sets(n)[name]
    exact = math.fsum(x.double().tolist())
    got = torch.ops.treduce.sum(x)
    assert got.item() == float(np.float32(exact)), f"{name}: {got.item()!r} vs {exact!r}"
    # mean: the float64 sum / K in double, rounded once: within 1 ulp of fl32(exact / K)
    m = torch.ops.treduce.mean(x).item()
    want = np.float32(exact / n)
    assert abs(m - float(want)) <= float(np.spacing(np.abs(want))), name


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_inputs(dtype):
    n = 1 << 20
    for name, x in data_sets(n, seed=1).items():
        h = x.to(dtype) if name != "D4 2^U(-20,20)" else (x * 2**-8).to(dtype)
        exact = math.fsum(h.double().tolist())
        # float32 output: correctly rounded
        assert torch.ops.treduce.sum(h, dtype=torch.float32).item() == float(np.float32(exact))
        # 16-bit output: never worse than torch (ours is the exact sum rounded to float32, then
        # to the 16-bit type: within half a 16-bit ulp plus half a float32 ulp)
        ours = torch.ops.treduce.sum(h).double().item()
        theirs = torch.sum(h).double().item()
        if torch.tensor(exact).float().to(dtype).isinf():  # so rounded, the result overflows
            assert math.isinf(ours) and (ours > 0) == (exact > 0), name
            continue
        mant = {torch.float16: 10, torch.bfloat16: 7}[dtype]
        e = math.floor(math.log2(abs(exact)))
        bound = 0.5 * 2.0 ** (e - mant) + 0.5 * 2.0 ** (e - 23)
        if math.isfinite(theirs):
            bound = max(bound, abs(theirs - exact))
        assert abs(ours - exact) <= bound, f"{name}: {ours} vs exact {exact}, torch {theirs}"


def test_bits_do_not_depend_on_layout_offset_or_threads():
    base = cancel_data(8 * 64 * 33 * 17 + 8, seed=11)
    x = base[: 8 * 64 * 33 * 17].reshape(8, 64, 33, 17)
    want_all = torch.ops.treduce.sum(x)
    want_stats = torch.ops.treduce.sum(x, [0, 2, 3])
    want_rows = torch.ops.treduce.sum(x, [3])
    layouts = {
        "transposed": x.permute(3, 2, 1, 0).contiguous().permute(3, 2, 1, 0),
        "channels_last": x.contiguous(memory_format=torch.channels_last),
        "sliced": torch.zeros(16, 64, 33, 17)[::2].copy_(x),
    }
    for name, y in layouts.items():
        assert torch.equal(y, x)
        assert torch.equal(f32(torch.ops.treduce.sum(y)), f32(want_all)), name
        assert torch.equal(f32(torch.ops.treduce.sum(y, [0, 2, 3])), f32(want_stats)), name
        assert torch.equal(f32(torch.ops.treduce.sum(y, [3])), f32(want_rows)), name
    flat = x.reshape(-1)
    want = torch.ops.treduce.sum(flat)
    for k in range(8):  # misaligned views of the same values
        view = base[k : k + flat.numel()]
        view_copy = view.clone()
        assert torch.equal(f32(torch.ops.treduce.sum(view)), f32(torch.ops.treduce.sum(view_copy)))
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = torch.ops.treduce.sum(flat)
        one_stats = torch.ops.treduce.sum(x, [0, 2, 3])
    finally:
        torch.set_num_threads(threads)
    assert torch.equal(f32(one), f32(want)) and torch.equal(f32(one_stats), f32(want_stats))
    for _ in range(5):
        assert torch.equal(f32(torch.ops.treduce.sum(flat)), f32(want))


def test_each_output_follows_the_canonical_order():
    """Rows and columns (the CPU's tile path) give each output the canonical sum of its values."""
    x = cancel_data(37 * 5000, seed=5).reshape(37, 5000)
    rows = torch.ops.treduce.sum(x, [1])
    cols = torch.ops.treduce.sum(x.t().contiguous(), [0])  # columns of the transposed copy
    for i in range(37):
        want = f32_bits(canonical_sum(x[i].numpy()))
        assert f32_bits(rows[i].numpy()) == want and f32_bits(cols[i].numpy()) == want, i


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("k,c", [(1, 64), (63, 64), (65, 130), (1000, 200), (4100, 64)])
def test_columns_follow_the_canonical_order(dtype, k, c):
    """Column sums (the CPU's tiles of neighbouring outputs, vector lanes where a tile is whole):
    every output the canonical sum of its column, partial tiles included."""
    # every column cancels (cancel_data), so another order within a leaf gives other bits
    x = torch.stack([cancel_data(k, seed=k + j) for j in range(c)], 1).to(dtype)
    got = torch.ops.treduce.sum(x, [0], dtype=torch.float32)
    for j in range(c):
        want = f32_bits(canonical_sum(x[:, j].float().numpy()))
        assert f32_bits(got[j].numpy()) == want, j


def f32(t):
    return t.view(torch.int32)  # compare bits (and -0.0 against +0.0)


def test_special_values():
    inf, nan = float("inf"), float("nan")
    s = torch.ops.treduce.sum
    assert s(torch.tensor([inf, 1.0, 2.0])).item() == inf
    assert math.isnan(s(torch.tensor([inf, -inf])).item())
    assert math.isnan(s(torch.tensor([1.0, nan])).item())
    # Overflow is the result's: float32 partial sums past FLT_MAX that cancel again stay finite
    # (torch's float32 partial sum gives inf here; a deliberate difference, README).
    assert s(torch.tensor([3e38, 3e38, -3e38])).item() == np.float32(3e38)
    assert s(torch.tensor([3e38, 3e38])).item() == inf
    assert s(torch.tensor([-3e38, -3e38, 1.0])).item() == -inf
    zero = s(torch.tensor([-0.0, -0.0]))
    assert zero.item() == 0.0 and not torch.signbit(zero)  # one rule: a zero sum is +0


def leaves_with_spread(batches, spread, seed, mantissa=23):
    """Batches of eight leaves: one holds 28 large values (exponent 20), then 8 small ones
    `spread` binades lower whose exact sum is one unit of theirs, then the 28 large ones negated;
    the other seven are zeros. The exact sum is that unit, so a fold that rounds the small values
    against the large partial sum (the in-order fold, once the range passes 53 bits) shows in the
    float32 result, and so would a fold in another order where the in-order one rounds."""
    g = np.random.default_rng(seed)
    unit = 2.0 ** (20 - spread - mantissa)
    out = []
    for _ in range(batches):
        big = g.integers(1 << mantissa, 1 << (mantissa + 1), 28) * 2.0 ** (20 - mantissa)
        m = g.integers(1 << mantissa, 1 << (mantissa + 1), 4).astype(np.float64)
        small = np.concatenate([m, -m[:3], [-(m[3] - 1)]]) * unit
        leaf = np.concatenate([big, small, -big])
        out.append(np.concatenate([leaf, np.zeros(7 * 64)]))
    return np.concatenate(out)


@pytest.mark.parametrize("spread", [0, 12, 22, 23, 24, 25, 26, 31])
def test_leaves_summed_in_any_order_only_where_that_is_exact(spread):
    """The CPU sums float32 leaves lane-parallel where every order gives the exact sum (exponent
    range <= 23) and in order elsewhere: bits equal to the in-order reference on both sides."""
    for seed in range(8):
        x = leaves_with_spread(1, spread, seed=spread * 100 + seed).astype(np.float32)
        ours = torch.ops.treduce.sum(torch.from_numpy(x))
        assert f32_bits(ours.numpy()) == f32_bits(canonical_sum(x)), seed
        if spread <= 23:  # inside the bound the in-order double sum is the exact sum
            assert canonical_sum(x) == np.float32(2.0 ** (20 - spread - 23))


# 12-17: the bound of bfloat16 leaves summed in float32 lanes first (13 with AVX2's eight lanes,
# 14 with AVX-512's sixteen); 39-42: the double bound.
@pytest.mark.parametrize("spread", [0, 12, 13, 14, 15, 16, 17, 30, 39, 40, 41, 42, 47])
def test_bfloat16_leaves_in_any_order_only_where_that_is_exact(spread):
    for seed in range(8):
        x = torch.from_numpy(leaves_with_spread(1, spread, seed=seed, mantissa=7)).bfloat16()
        ours = torch.ops.treduce.sum(x, dtype=torch.float32)
        assert f32_bits(ours.numpy()) == f32_bits(canonical_sum(x.float().numpy())), seed


def representable_parts(units, mantissa):
    """A positive integer as a list of integers of at most mantissa + 1 significant bits each
    (values that a format with `mantissa` stored bits holds exactly, scaled by a power of two)."""
    parts = []
    while units:
        low = max(units.bit_length() - (mantissa + 1), 0)
        parts.append((units >> low) << low)
        units -= parts[-1]
    return parts


def batch_pinning_the_leaf_tree(mantissa, max_range, k, big=0, small=(2, 4)):
    """One batch of eight leaves that the vector path sums (exponent range exactly at its bound,
    from 2^k to 2^(k + max_range)), whose float32 result shows where each leaf's sum meets the
    tree. Leaves `big` and `big` + 1 hold 128 large values summing to P; the two `small` leaves
    hold s = 2^k + u each (u: s's last mantissa bit); the rest are zeros. Where the tree adds
    (P + s) + s (big = 0, small = (2, 4)), each addition is a tie in double (P's double ulp is
    2u) that rounds down to P + 2^(k+1), exactly a float32 midpoint, which rounds to even below;
    where it adds P + (s + s) (small = (2, 3)), that is exact and rounds up. So a batch whose leaf
    sums meet out of place shows. Returns the batch and f, the float32 below the midpoint."""
    e = k + max_range  # the largest values' exponent; P lies in [2^(e+7), 2^(e+8))
    u = 2.0 ** (k - mantissa)
    f = 2.0 ** (e + 7) + 2.0 ** (e + 1)  # a float32 with an even last bit
    half = 2.0 ** (e - 17)  # half a float32 ulp at f
    adjust = int((half - 2.0 ** (k + 1)) / 2.0**k)  # P = f + adjust * 2^k
    adjust_values = [p * 2.0**k for p in representable_parts(adjust, mantissa)]
    # 128 values: 1.5 * 2^e n15 times and 2^e n1 times (130 * 2^e = f in all), then the adjustment.
    n15 = 2 * (2 + len(adjust_values))
    n1 = 128 - len(adjust_values) - n15
    values = [1.5 * 2.0**e] * n15 + [2.0**e] * n1 + adjust_values
    assert sum(values) == f + half - 2.0 ** (k + 1)  # P, exact in float64
    x = np.zeros((8, 64))
    x[big : big + 2] = np.reshape(values, (2, 64))
    for leaf in small:
        x[leaf, 0] = 2.0**k + u
    return x.reshape(-1), f


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_any_order_batches_keep_the_leaf_tree(dtype):
    """Leaves summed in any order (a batch of eight at the vector path's range bound: float32's
    23 binades, bfloat16's double tier at 39) still meet in the tree at their own places: every
    placement of the large pair and the two small leaves has the in-order reference's bits."""
    mantissa, max_range = (23, 23) if dtype == torch.float32 else (7, 39)
    x, f = batch_pinning_the_leaf_tree(mantissa, max_range, k=-20)
    assert canonical_sum(x.astype(np.float32)) == np.float32(f)  # the ties, rounded below
    x, _ = batch_pinning_the_leaf_tree(mantissa, max_range, k=-20, small=(2, 3))
    assert canonical_sum(x.astype(np.float32)) > np.float32(f)  # the exact sum, above
    for big in (0, 2, 4, 6):
        others = [leaf for leaf in range(8) if leaf not in (big, big + 1)]
        for small in itertools.combinations(others, 2):
            x, _ = batch_pinning_the_leaf_tree(mantissa, max_range, -20, big, small)
            t = torch.from_numpy(x).to(dtype)
            assert torch.equal(t.double(), torch.from_numpy(x))  # every value exact in dtype
            ours = torch.ops.treduce.sum(t, dtype=torch.float32)
            want = canonical_sum(x.astype(np.float32))
            assert f32_bits(ours.numpy()) == f32_bits(want), (big, small)


def assert_in_order_bits(x, bf16):
    """The float32 sum of x (rounded to float32, and with bf16 then to bfloat16) has the in-order
    reference's bits."""
    t = torch.from_numpy(x.astype(np.float32))
    if bf16:
        t = t.bfloat16()
    ours = torch.ops.treduce.sum(t, dtype=torch.float32)
    want = canonical_sum(t.float().numpy())
    assert f32_bits(ours.numpy()) == f32_bits(want)


@settings(max_examples=300, deadline=None)
@given(
    n=st.integers(1, 3000),
    spread=st.integers(0, 60),
    top=st.sampled_from([0, 0, 100, 125, 126, 127]),
    pairs=st.booleans(),
    zeros=st.sampled_from([0.0, 0.1, 0.9]),
    bf16=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_leaves_have_the_in_order_bits_at_any_exponent_spread(
    n, spread, top, pairs, zeros, bf16, seed
):
    """Values of random sign and mantissa over `spread` binades below 2^(top + 1), some zero,
    with pairs=True each odd element the negation of the one before (sums that cancel, so that
    partial sums near float32's overflow show): whichever path a batch of leaves or a leaf
    takes (lane-parallel where that is exact, in order elsewhere), the bits are the in-order
    reference's."""
    g = np.random.default_rng(seed)
    x = g.uniform(1, 1.99, n) * 2.0 ** g.integers(top - spread, top + 1, n)
    x *= g.choice([-1.0, 1.0], n)
    if pairs:
        x[1::2] = -x[0::2][: n // 2]
    x[g.random(n) < zeros] = 0.0
    assert_in_order_bits(x, bf16)


@settings(max_examples=60, deadline=None)
@given(
    spreads=st.lists(st.sampled_from([0, 5, 14, 15, 20, 24, 30, 45]), min_size=1, max_size=40),
    tail=st.integers(0, 600),
    bf16=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_runs_of_exact_batches_stop_and_resume_at_inexact_ones(spreads, tail, bf16, seed):
    """Each batch of eight leaves (512 values) over its own exponent spread, some within the
    vector paths' bounds (bfloat16's float32 tier at 14 binades, float32's at 23, bfloat16's
    double tier at 39) and some beyond: the runs of exact batches that one vector call takes stop
    at a batch that is not exact and start again after it. The bits are the in-order
    reference's."""
    g = np.random.default_rng(seed)
    parts = [
        g.uniform(1, 1.99, 512) * 2.0 ** g.integers(-s, 1, 512) * g.choice([-1.0, 1.0], 512)
        for s in spreads
    ]
    x = np.concatenate([*parts, g.standard_normal(tail)])
    assert_in_order_bits(x, bf16)


@pytest.mark.parametrize("capability", ["avx2", "default"])
def test_leaf_paths_at_each_instruction_set(capability):
    """The vector paths (exact leaves, column tiles, float64's compensated leaves, argmax's and
    argmin's lanes) use the instruction set torch's CPU kernels
    use, which ATEN_CPU_CAPABILITY lowers: their tests, run again at a lower level in a process of
    their own, so that a machine with AVX-512 tests the AVX2 and the scalar paths too."""
    env = {**os.environ, "ATEN_CPU_CAPABILITY": capability}
    probe = "import torch; print(torch.backends.cpu.get_cpu_capability())"
    level = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True)
    assert level.stdout.strip() == capability.upper(), level.stdout + level.stderr
    tests = (
        "any_order or exponent_spread or runs_of_exact or overflow or infinities or canonical_order"
        " or columns or lanes"
    )
    here = os.path.dirname(__file__)
    files = [__file__, os.path.join(here, "test_family.py")]
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *files, "-k", tests]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=os.path.dirname(__file__))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert " passed" in r.stdout.splitlines()[-1], r.stdout[-500:]


@pytest.mark.parametrize("big", [1e38, 2.5e38, 3.3e38])
def test_bfloat16_leaves_near_overflow_keep_the_in_order_bits(big):
    """bfloat16 has float32's exponent range, so its float32-lane tier could overflow where the
    in-order double fold does not: +big twice in one lane beside -big (with +-1e38 around) made
    the whole sum NaN. Such leaves take the double tier: the in-order bits, finite."""
    x = torch.full((512,), 1e38)
    x[1::2] = -1e38
    x[0] = x[32] = big
    x[1] = -big
    t = x.bfloat16()
    want = canonical_sum(t.float().numpy())
    assert np.isfinite(want)
    ours = torch.ops.treduce.sum(t, dtype=torch.float32)
    assert f32_bits(ours.numpy()) == f32_bits(want)
    assert torch.equal(torch.ops.treduce.sum(t), torch.tensor(float(want)).bfloat16())
    mean = torch.ops.treduce.mean(t, dtype=torch.float32)
    assert torch.isfinite(mean)
    rows = torch.ops.treduce.sum(torch.stack([t, -t, t]), [1], dtype=torch.float32)
    assert torch.equal(rows, torch.tensor([want, -want, want], dtype=torch.float32))


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("quarters", [1, 2, 3])
def test_16bit_sums_overflow_where_the_exact_sum_rounds_to_inf(quarters, dtype, device):
    """A 16-bit sum is infinite where its exact value rounds to infinity: from the largest finite
    value plus half its ulp on (float16 65520, a tie that goes to the even infinity), not from
    past the largest finite value (65504): max + a quarter ulp (65512) gives max, as torch does."""
    fi = torch.finfo(dtype)
    ulp = fi.eps * 2.0 ** (math.frexp(fi.max)[1] - 1)
    x = torch.zeros(3, 1000, dtype=dtype)
    x[:, 0] = fi.max
    x[:, 700] = quarters * ulp / 4
    x[1] = -x[1]
    x = x.to(device)
    want = fi.max if quarters == 1 else math.inf
    assert torch.equal(
        torch.ops.treduce.sum(x, [1]).cpu().double(), torch.tensor([want, -want, want])
    )
    assert torch.equal(torch.ops.treduce.sum(x, [1]), torch.sum(x, [1]))
    assert torch.equal(torch.ops.treduce.sum(x[0]).double().cpu(), torch.tensor(want))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_cpu_flushes_subnormals_as_torch_does_when_asked(dtype):
    """With torch.set_flush_denormal(True) the CPU treats subnormal values as zero, in our
    kernels as in torch's (docs/numerics.md: CUDA then keeps them); with it off they count."""
    x = torch.full((1000,), 1e-40, dtype=dtype)
    kept = torch.ops.treduce.sum(x)
    assert kept.item() > 0
    assert f32_bits(torch.ops.treduce.sum(x, dtype=torch.float32).numpy()) == f32_bits(
        canonical_sum(x.float().numpy())
    )
    if not torch.set_flush_denormal(True):
        pytest.skip("this CPU cannot flush denormals")
    try:
        flushed, theirs = torch.ops.treduce.sum(x), torch.sum(x)
    finally:
        torch.set_flush_denormal(False)
    assert flushed.item() == 0 and theirs.item() == 0


def test_leaves_with_infinities_and_nan_keep_the_in_order_result():
    x = torch.randn(64 * 16)
    x[70] = float("inf")
    x[300] = float("nan")
    x[700] = float("-inf")
    ours = torch.ops.treduce.sum(x)
    assert torch.isnan(ours)
    x[300] = 0.0
    assert torch.isnan(torch.ops.treduce.sum(x))  # inf - inf
    x[700] = 1.0
    assert torch.ops.treduce.sum(x) == float("inf")
