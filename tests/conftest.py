"""Shared test helpers: devices, fresh random inputs in every layout, references and tolerances.

Every result our ops return is first filled with NaN (or an unlikely integer) by the C++ layer
(TREDUCE_POISON=1, set here before the extension loads), so an output element that a kernel
never writes fails the comparison.
"""

import os

os.environ.setdefault("TREDUCE_POISON", "1")

import pytest  # noqa: E402
import torch  # noqa: E402

import torch_reduce  # noqa: E402,F401

HAS_CUDA = torch.cuda.is_available()
DEVICES = ["cpu", pytest.param("cuda", marks=pytest.mark.cuda)]

FLOAT_DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INT_DTYPES = [torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8]
ALL_DTYPES = FLOAT_DTYPES + INT_DTYPES + [torch.bool]

LAYOUTS = [
    "contiguous",
    "transposed",
    "permuted",
    "sliced",
    "expanded",
    "channels_last",
    "misaligned",
]
# LAYOUTS plus views whose elements share memory (as_strided windows), which only reads accept.
ALL_LAYOUTS = LAYOUTS + ["overlapping"]

# What torch_reduce accepts beyond ALL_DTYPES: float8 inputs of sum, mean, amax and amin.
FP8_DTYPES = [torch.float8_e4m3fn, torch.float8_e5m2]


def pytest_collection_modifyitems(config, items):
    if HAS_CUDA:
        return
    skip = pytest.mark.skip(reason="needs a CUDA device")
    for item in items:
        if "cuda" in item.keywords:
            item.add_marker(skip)


# Shapes: 0-d, size 1, odd and prime sizes, powers of two, several dims.
SHAPES = [
    (),
    (1,),
    (7,),
    (1024,),
    (1, 1),
    (13, 17),
    (64, 33),
    (3, 1, 5),
    (257, 129),
    (2, 3, 5, 7),
    (8, 4, 3, 16),
    (5, 6, 1, 9),
]


def dims_for(shape):
    """None, [], a single dim, a negative dim, several dims, all dims (as a list)."""
    nd = len(shape)
    out = [None, []]
    if nd >= 1:
        out += [0, -1]
    if nd >= 2:
        out += [[0, nd - 1], [-1, 0] if nd == 2 else [1, -1]]
    if nd >= 3:
        out += [list(range(nd)), [1]]
    if nd == 4:
        out += [[0, 2, 3]]  # per-channel statistics
    return out


def cases(layout):
    for shape in SHAPES:
        if layout == "channels_last" and len(shape) != 4:
            continue
        if layout in ("transposed", "permuted", "sliced", "expanded") and len(shape) < 1:
            continue
        for dim in dims_for(shape):
            for keepdim in (False, True):
                yield shape, dim, keepdim


def random_values(shape, dtype, device):
    """Fresh random values, never zeros: normal floats, small signed/unsigned ints, random bools."""
    if dtype in FP8_DTYPES:
        return torch.randn(shape, dtype=torch.float32, device=device).to(dtype)
    if dtype.is_floating_point:
        return torch.randn(shape, dtype=torch.float32, device=device).to(dtype)
    if dtype == torch.bool:
        return torch.rand(shape, device=device) < 0.5
    lo, hi = (0, 60) if dtype == torch.uint8 else (-50, 50)
    return torch.randint(lo, hi, shape, device=device).to(dtype)


def make_input(shape, dtype, device, layout="contiguous"):
    """A tensor of logical `shape` whose memory follows `layout` (values are fresh random)."""
    shape = tuple(shape)
    nd = len(shape)
    if layout == "contiguous" or nd == 0:
        return random_values(shape, dtype, device)
    if layout == "transposed":  # every dim reversed in memory
        return random_values(shape[::-1], dtype, device).permute(*reversed(range(nd)))
    if layout == "permuted":  # a fixed non-trivial permutation
        perm = list(range(1, nd)) + [0]
        base = random_values([shape[p] for p in perm], dtype, device)
        inv = [perm.index(i) for i in range(nd)]
        return base.permute(*inv)
    if layout == "sliced":  # every dim taken with step 2
        base = random_values([2 * s for s in shape], dtype, device)
        return base[tuple(slice(None, None, 2) for _ in shape)]
    if layout == "expanded":  # dim 0 has stride 0
        base = random_values((1,) + shape[1:], dtype, device)
        return base.expand(shape)
    if layout == "channels_last":
        if nd != 4:
            return (
                random_values(shape, dtype, device).transpose(0, -1).contiguous().transpose(0, -1)
            )
        return random_values(shape, dtype, device).contiguous(memory_format=torch.channels_last)
    if layout == "overlapping":  # each dim's stride half the contiguous one: windows overlap
        strides, step = [], 1
        for size in reversed(shape):
            strides.append(max(1, step // 2))
            step *= max(size, 1)
        strides.reverse()
        n = 1 + sum((s - 1) * st for s, st in zip(shape, strides)) if all(shape) else 0
        return random_values((n + 3,), dtype, device).as_strided(shape, strides, 3)
    if layout == "misaligned":  # data pointer one element past a 16-byte boundary
        n = 1
        for s in shape:
            n *= s
        flat = random_values((n + 1,), dtype, device)
        return flat[1:].view(shape)
    raise ValueError(layout)


def reference_sum(x, dim, keepdim, dtype=None):
    """(exact sum in float64 or int64, sum of |x| for the tolerance, torch.sum's own result)."""
    theirs = torch.sum(x, dim=dim, keepdim=keepdim, dtype=dtype)
    src = x.to(dtype) if dtype is not None else x
    wide = src.double() if src.dtype.is_floating_point else src.long()
    ref = torch.sum(wide, dim=dim, keepdim=keepdim)
    absref = torch.sum(wide.abs(), dim=dim, keepdim=keepdim) if wide.is_floating_point() else None
    return ref, absref, theirs


# Tolerance: |ours - exact| <= OUT_RTOL * |exact| + ACC_RTOL * sum|x| (+ a tiny absolute term).
OUT_RTOL = {torch.float32: 2e-7, torch.float64: 1e-15, torch.float16: 1e-3, torch.bfloat16: 8e-3}
ACC_RTOL = {torch.float32: 2e-6, torch.float64: 1e-13, torch.float16: 2e-6, torch.bfloat16: 2e-6}


def assert_sum_close(out, ref, absref, msg=""):
    if out.dtype.is_floating_point:
        assert not torch.isnan(out).any(), f"NaN in result (unwritten output?) {msg}"
        err = (out.double() - ref).abs()
        tol = OUT_RTOL[out.dtype] * ref.abs() + ACC_RTOL[out.dtype] * absref + 1e-30
        bad = err > tol
        assert not bad.any(), (
            f"{msg}: max err {err.max().item():.3e}, worst excess {(err - tol).max().item():.3e}"
        )
    else:
        expect = ref.to(out.dtype)
        assert torch.equal(out, expect), f"{msg}: integer result differs"


def assert_same_bits(out, ref, msg=""):
    """Exact equality, NaN == NaN, and the same dtype and shape."""
    assert out.dtype == ref.dtype and out.shape == ref.shape, (
        f"{msg}: got {out.dtype}{tuple(out.shape)}, want {ref.dtype}{tuple(ref.shape)}"
    )
    if out.dtype.is_floating_point:
        same = (out == ref) | (torch.isnan(out) & torch.isnan(ref))
        assert bool(same.all()), f"{msg}: values differ"
    else:
        assert torch.equal(out, ref), f"{msg}: values differ"


def host_library(tmp_path_factory, source, name, opt="-O2"):
    """`source` (C++ host code) compiled with g++ into a shared library and loaded with ctypes;
    the test skips where g++ is not installed."""
    import ctypes  # noqa: PLC0415
    import shutil  # noqa: PLC0415
    import subprocess  # noqa: PLC0415

    if shutil.which("g++") is None:
        pytest.skip("g++ is not installed")
    out = tmp_path_factory.mktemp(name) / f"lib{name}.so"
    cmd = ["g++", opt, "-std=c++17", "-shared", "-fPIC", "-o", str(out), str(source)]
    subprocess.run(cmd, check=True)
    return ctypes.CDLL(str(out))


@pytest.fixture
def force_launch():
    """force_launch(spec) forces the canonical kernels' launch configuration for the rest of the
    test (torch_reduce._testing; None is the default plan), which is restored afterwards."""
    from torch_reduce._testing import force_launch as force  # noqa: PLC0415

    yield force
    force(None)


@pytest.fixture(autouse=True)
def fresh_seed():
    """Fresh random data every run; the seed is printed (pytest shows it beside a failure), and
    TREDUCE_SEED=<seed> replays it."""
    chosen = os.environ.get("TREDUCE_SEED")
    seed = int(chosen) if chosen else int.from_bytes(os.urandom(4), "little") % (2**31)
    print(f"seed = {seed}")
    torch.manual_seed(seed)
    return seed


def data_sets(n: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """bench/accuracy.py's data sets D1-D4, on the CPU."""
    g = torch.Generator().manual_seed(seed)
    sign = torch.randint(0, 2, (n,), generator=g).float() * 2 - 1
    return {
        "D1 randn": torch.randn(n, generator=g),
        "D2 uniform": torch.rand(n, generator=g),
        "D3 0.1": torch.full((n,), 0.1),
        "D4 2^U(-20,20)": sign * torch.exp2(torch.empty(n).uniform_(-20, 20, generator=g)),
    }


def wide_data(n, seed):
    """Values over 2^-40 .. 2^40 with random signs."""
    g = torch.Generator().manual_seed(seed)
    sign = torch.randint(0, 2, (n,), generator=g).float() * 2 - 1
    return sign * torch.exp2(torch.empty(n).uniform_(-40, 40, generator=g))


def cancel_data(n, seed):
    """Pairs of values up to 2^60 that cancel (in shuffled order), plus noise of size 1: the
    true sum is small, the running sums are huge and round in float64 too, so a different
    summation order gives different bits (test_the_reference_pins_the_order)."""
    g = torch.Generator().manual_seed(seed)
    h = n // 2
    sign = torch.randint(0, 2, (h,), generator=g).float() * 2 - 1
    big = sign * torch.exp2(torch.empty(h).uniform_(0, 60, generator=g))
    perm = torch.randperm(h, generator=g)
    x = torch.cat([big, -big[perm], torch.randn(n - 2 * h, generator=g)])
    return x[torch.randperm(n, generator=g)] + torch.randn(n, generator=g)
