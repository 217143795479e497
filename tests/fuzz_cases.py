"""Drawn calls for the property-based tests (test_fuzz.py): inputs, layouts, dims and dtypes, and
what torch says each call should give.

A call is (op, x, dim, keepdim, dtype). `expected(call)` returns torch's answer in the form the
comparison needs, or the exception type torch raises; float8 inputs (which torch does not reduce)
are taken through float32 and bitwise reductions (which torch lacks) through numpy, as the README
defines them.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np
import torch
from conftest import ALL_DTYPES, FP8_DTYPES, OUT_RTOL
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

import torch_reduce

OPS = [
    "sum",
    "mean",
    "prod",
    "amax",
    "amin",
    "argmax",
    "argmin",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
]
TAKES_DTYPE = ("sum", "mean", "prod")
TAKES_FP8 = ("sum", "mean", "amax", "amin")
INT_OUT = (torch.int8, torch.int16, torch.int32, torch.int64, torch.uint8, torch.bool)

# Profiles: TREDUCE_FUZZ=ci (the default: CI's bounded run) or soak (>= 20,000 examples per op
# and device). TREDUCE_FUZZ_EXAMPLES overrides the count, and TREDUCE_FUZZ_EXAMPLES_BY_OP
# ("amin=300,prod=250"; ops not named keep the count above) sets it op by op, so that a soak
# can top up the ops that an earlier one left short.
PROFILE = os.environ.get("TREDUCE_FUZZ", "ci")
EXAMPLES = int(os.environ.get("TREDUCE_FUZZ_EXAMPLES", {"ci": 200, "soak": 20000}[PROFILE]))


def examples_for(op: str) -> int:
    """The examples to draw for op (TREDUCE_FUZZ_EXAMPLES_BY_OP, else EXAMPLES)."""
    by_op = os.environ.get("TREDUCE_FUZZ_EXAMPLES_BY_OP", "")
    counts = dict(item.split("=") for item in by_op.replace(" ", ",").split(",") if item)
    unknown = set(counts) - set(OPS)
    if unknown:
        raise ValueError(f"TREDUCE_FUZZ_EXAMPLES_BY_OP names no op: {sorted(unknown)}")
    return int(counts.get(op, EXAMPLES))


FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
    ],
)

# Sizes: 0, 1, odd, primes, powers of two and their neighbours; small ones most often.
SIZES = [
    0,
    1,
    1,
    2,
    2,
    3,
    3,
    4,
    5,
    7,
    8,
    9,
    13,
    16,
    17,
    31,
    32,
    33,
    64,
    65,
    100,
    127,
    128,
    129,
    255,
    256,
    257,
    1000,
    1025,
    4096,
    4099,
]
SMALL_LIMIT = 1 << 14  # elements in most draws
BIG_LIMIT = 1 << 20  # elements in a few (long reductions: the split and chunked kernels)
LAYOUTS = [
    "contiguous",
    "permuted",
    "sliced",
    "expanded",
    "channels_last",
    "offset",
    "overlapping",
    "mixed",
]


@dataclass
class Call:
    op: str
    x: torch.Tensor
    dim: object
    keepdim: bool
    dtype: torch.dtype | None
    note: str

    def __repr__(self) -> str:
        return (
            f"Call({self.op}, {self.x.dtype} shape={tuple(self.x.shape)} "
            f"stride={self.x.stride()} offset={self.x.storage_offset()}, dim={self.dim}, "
            f"keepdim={self.keepdim}, dtype={self.dtype}, {self.note})"
        )


def _numel(shape) -> int:
    return math.prod(shape) if shape else 1


@st.composite
def shapes(draw):
    nd = draw(st.integers(0, 6))
    shape = [draw(st.sampled_from(SIZES)) for _ in range(nd)]
    limit = BIG_LIMIT if draw(st.integers(0, 19)) == 0 else SMALL_LIMIT
    # Zero sizes count as 1: an empty tensor's other dims are views of a base that has them.
    while _numel([max(s, 1) for s in shape]) > limit:
        i = max(range(nd), key=lambda k: shape[k])
        shape[i] //= 2
    return shape


def _values(n: int, dtype: torch.dtype, op: str, mode: int, gen: torch.Generator) -> torch.Tensor:
    """n fresh values of `dtype` (on the CPU): mode 0 normal (small integers), 1 ties (few
    distinct values), 2 specials (NaN, +-inf, +-0 sprinkled in; the full integer range), 3 huge
    (sums and means: magnitudes of a quarter to two thirds of the dtype's largest, so that two
    of one sign overflow it; half the draws each odd value the negation of the one before, so
    that the exact sum is finite; other ops as mode 0)."""
    if dtype.is_floating_point and mode == 3 and op in ("sum", "mean"):
        # float64: scaled down, so that the float64 reference cannot overflow
        top = torch.finfo(dtype).max if dtype != torch.float64 else 2.0**1000
        v = (torch.rand(n, generator=gen, dtype=torch.float64) * 0.4 + 0.26) * top
        v = torch.where(torch.rand(n, generator=gen) < 0.5, -v, v)
        if torch.rand(1, generator=gen).item() < 0.5:
            v[1::2] = -v[0::2][: n // 2]
        return v.to(dtype)
    if dtype.is_floating_point:
        if op == "prod":  # magnitudes near 1, so that products stay in range
            v = torch.exp(torch.rand(n, generator=gen) * 1.2 - 0.6)
            v = torch.where(torch.rand(n, generator=gen) < 0.5, -v, v)
        else:
            v = torch.randn(n, generator=gen)
        if mode == 1:
            v = torch.randint(-3, 4, (n,), generator=gen).float()
            if op == "prod":
                v = torch.where(v == 0, 1.0, v / 2)
        if mode == 2 and n:
            pick = torch.rand(n, generator=gen)
            for lo, val in (
                (0.00, float("nan")),
                (0.02, float("inf")),
                (0.04, -float("inf")),
                (0.06, 0.0),
                (0.08, -0.0),
            ):
                v = torch.where((pick >= lo) & (pick < lo + 0.02), torch.tensor(val), v)
        return v.to(dtype)
    if dtype == torch.bool:
        return torch.rand(n, generator=gen) < 0.5
    info = torch.iinfo(dtype)
    if mode == 2:
        lo, hi = info.min, info.max
    elif op == "prod":
        lo, hi = (0, 3) if dtype == torch.uint8 else (-2, 3)
    else:
        lo, hi = (0, 60) if dtype == torch.uint8 else (-50, 50)
    if mode == 1:
        lo, hi = max(lo, 0), min(hi, 3)
    return torch.randint(lo, hi, (n,), generator=gen, dtype=torch.int64).to(dtype)


def _steps(draw, shape):
    """Steps of 1-3 per dim, the base they slice at most 8x the view's elements (steps of 3 in
    six dims would make a base 729x the view, gigabytes for the larger draws)."""
    steps = [draw(st.integers(1, 3)) for _ in shape]
    view = _numel([max(s, 1) for s in shape])
    while max(steps, default=1) > 1 and _numel(
        [max(s, 1) * t for s, t in zip(shape, steps)]
    ) > 8 * max(view, 1024):
        steps[steps.index(max(steps))] = 1
    return steps


def _strided(draw, shape, kind, dtype, op, mode, gen, device):
    """A tensor of logical `shape` laid out as `kind` (values fresh from `gen`)."""
    nd = len(shape)
    n = _numel(shape)

    def fill(m):
        return _values(m, dtype, op, mode, gen).to(device)

    if kind == "contiguous" or nd == 0:
        return fill(n).view(shape)
    if kind == "permuted" or kind == "mixed":
        perm = draw(st.permutations(range(nd)))
        steps = _steps(draw, shape) if kind == "mixed" else [1] * nd
        offset = draw(st.integers(0, 3)) if kind == "mixed" else 0
        base_shape = [shape[p] * steps[p] for p in perm]
        base = fill(_numel(base_shape) + offset)[offset:].view(base_shape)
        inv = [perm.index(i) for i in range(nd)]
        x = base.permute(inv)
        return x[tuple(slice(None, None, s) for s in steps)]
    if kind == "sliced":
        steps = _steps(draw, shape)
        starts = [draw(st.integers(0, s - 1)) for s in steps]
        base_shape = [sz * s + b for sz, s, b in zip(shape, steps, starts)]
        base = fill(_numel(base_shape)).view(base_shape)
        return base[tuple(slice(b, b + sz * s, s) for sz, s, b in zip(shape, steps, starts))]
    if kind == "expanded":
        flags = [draw(st.booleans()) for _ in range(nd)]
        base = fill(_numel([1 if f else s for s, f in zip(shape, flags)]))
        return base.view([1 if f else s for s, f in zip(shape, flags)]).expand(shape)
    if kind == "channels_last":
        x = fill(n).view(shape)
        if nd == 4:
            return x.contiguous(memory_format=torch.channels_last)
        if nd == 5:
            return x.contiguous(memory_format=torch.channels_last_3d)
        return x
    if kind == "offset":
        offset = draw(st.integers(1, 3))
        return fill(n + offset)[offset:].view(shape)
    # overlapping: each dim's stride drawn up to its contiguous stride (0 and overlaps included)
    strides, step = [], 1
    for size in reversed(shape):
        strides.append(draw(st.integers(0, step)))
        step *= max(size, 1)
    strides.reverse()
    offset = draw(st.integers(0, 3))
    span = 1 + sum((s - 1) * t for s, t in zip(shape, strides)) if n else 0
    return fill(span + offset).as_strided(shape, strides, offset)


@st.composite
def dims_arg(draw, nd: int, single: bool):
    """None, [], a dim, or a list of dims; negative, repeated and out-of-range ones included."""
    lo, hi = -max(nd, 1) - 1, max(nd, 1)
    if single:
        return draw(st.one_of(st.none(), st.integers(lo, hi)))
    return draw(
        st.one_of(
            st.none(),
            st.just([]),
            st.integers(lo, hi),
            st.lists(st.integers(lo, hi), min_size=1, max_size=nd + 1),
        )
    )


@st.composite
def calls(draw, op: str, device: str = "cpu"):
    """A call of `op` on a drawn input (made on `device`)."""
    dtypes = ALL_DTYPES + (FP8_DTYPES if op in TAKES_FP8 else [])
    if op.startswith("bitwise") and draw(st.integers(0, 9)) != 0:
        dtypes = [d for d in ALL_DTYPES if not d.is_floating_point]  # floats: an error, rarely
    dtype = draw(st.sampled_from(dtypes))
    shape = draw(shapes())
    kind = draw(st.sampled_from(LAYOUTS))
    mode = draw(st.integers(0, 3))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**32 - 1)))
    x = _strided(draw, shape, kind, dtype, op, mode, gen, device)
    dim = draw(dims_arg(len(shape), single=op in ("argmax", "argmin")))
    keepdim = draw(st.booleans())
    out = draw(st.one_of(st.none(), st.sampled_from(ALL_DTYPES))) if op in TAKES_DTYPE else None
    return Call(op, x, dim, keepdim, out, f"layout={kind} values={mode}")


def run(call: Call, x: torch.Tensor):
    """Our op on x with the call's dim, keepdim and (sum, mean, prod) dtype=."""
    fn = getattr(torch_reduce, call.op)
    if call.op in TAKES_DTYPE:
        return fn(x, call.dim, call.keepdim, dtype=call.dtype)
    return fn(x, call.dim, call.keepdim)


def same_layout(x: torch.Tensor, device: str) -> torch.Tensor:
    """x's values on `device`, with the same sizes, strides and storage offset. To CUDA from
    pinned memory, queued on the stream: no round trip to the GPU (see to_host)."""
    n = x.untyped_storage().nbytes() // x.element_size()
    flat = x.as_strided((n,), (1,), 0)
    if device == "cuda" and n > 0:
        flat = flat.pin_memory()
    return flat.to(device, non_blocking=True).as_strided(x.shape, x.stride(), x.storage_offset())


def to_host(*ts):
    """The CUDA tensors among ts copied to the host with one synchronisation, the rest (None
    included) as they are. Each .cpu() waits for the GPU; in a soak, 32 processes share it, and
    each wait costs a turn."""
    out = [
        t.to("cpu", non_blocking=True) if isinstance(t, torch.Tensor) and t.is_cuda else t
        for t in ts
    ]
    if any(isinstance(t, torch.Tensor) and t.is_cuda for t in ts):
        torch.cuda.synchronize()
    return out


# ----------------------------------------------------------------------------------------------
# What torch says


def _dims(call: Call) -> list[int] | None:
    if call.dim is None:
        return None
    return [call.dim] if isinstance(call.dim, int) else list(call.dim)


def _reduced(x: torch.Tensor, dims) -> list[int]:
    if not dims:
        return list(range(x.dim()))
    n = max(x.dim(), 1)
    return sorted({d % n for d in dims} & set(range(x.dim())))


def scaled_prod(v: torch.Tensor, red: list[int]) -> torch.Tensor:
    """The product over dims `red` of float64 values by the README's rule (NaN if a value is NaN
    or the values hold both a zero and an infinity, else 0 if one is zero, else inf if one is
    infinite, else the product of the finite values with no intermediate overflow or
    underflow), in float64, kept dims in order. The finite product multiplies frexp mantissas
    pairwise, renormalising each level, and sums the exponents exactly."""
    keep = [i for i in range(v.dim()) if i not in red]
    m = v.permute(keep + red).reshape(
        math.prod(v.shape[i] for i in keep), math.prod(v.shape[i] for i in red)
    )
    neg = torch.signbit(m).sum(1) % 2 == 1
    nan = torch.isnan(m).any(1)
    zero = (m == 0).any(1)
    inf = torch.isinf(m).any(1)
    finite = torch.where(torch.isfinite(m) & (m != 0), m.abs(), torch.ones_like(m))
    mant, expo = torch.frexp(finite)
    expo = expo.long()
    while mant.shape[1] > 1:
        if mant.shape[1] % 2:
            mant = torch.cat([mant, torch.ones_like(mant[:, :1])], 1)
            expo = torch.cat([expo, torch.zeros_like(expo[:, :1])], 1)
        mant, e2 = torch.frexp(mant[:, 0::2] * mant[:, 1::2])
        expo = expo[:, 0::2] + expo[:, 1::2] + e2.long()
    mant = (
        mant.reshape(-1) if mant.numel() else torch.ones(m.shape[0], dtype=v.dtype, device=v.device)
    )
    expo = (
        expo.reshape(-1)
        if expo.numel()
        else torch.zeros(m.shape[0], dtype=torch.long, device=v.device)
    )
    e = expo.clamp(-4096, 4096)
    half = torch.div(e, 2, rounding_mode="floor")
    mag = mant * torch.pow(2.0, half.double()) * torch.pow(2.0, (e - half).double())
    out = torch.where(inf, torch.full_like(mag, float("inf")), mag)
    out = torch.where(zero, torch.zeros_like(mag), out)
    out = torch.where(zero & inf, torch.full_like(mag, float("nan")), out)
    out = torch.where(neg, -out, out)
    return torch.where(nan, torch.full_like(mag, float("nan")), out)


def _error_of(fn) -> type | None:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 (the type is what is compared)
        return type(e)
    return None


def expected(call: Call):
    """(error type or None, torch's result or None, exact value in float64/int64 or None, sum of
    |x| for sums and means or None)."""
    op, x, keepdim, dt = call.op, call.x, call.keepdim, call.dtype
    dims = _dims(call)
    fx = x.float() if x.dtype in FP8_DTYPES else x  # float8: through float32 (exact)
    if op in ("sum", "mean"):
        fn = torch.sum if op == "sum" else torch.mean
        err = _error_of(lambda: fn(fx, dims, keepdim, dtype=dt))
        if err is not None:
            return err, None, None, None
        theirs = fn(fx, dims, keepdim, dtype=dt)
        src = x.to(dt) if dt is not None else fx
        wide = src.double() if src.is_floating_point() else src.long()
        if not theirs.is_floating_point():
            return None, theirs, None, None
        return None, theirs, fn(wide, dims, keepdim), fn(wide.abs(), dims, keepdim)
    if op == "prod":  # torch.prod takes one dim: the errors of the same dims in torch.sum
        err = _error_of(lambda: torch.sum(x, dims, keepdim, dtype=dt))
        if err is not None:
            return err, None, None, None
        src = x.to(dt) if dt is not None else x
        out_dtype = dt if dt is not None else (x.dtype if x.is_floating_point() else torch.int64)
        red = _reduced(x, dims)
        out_shape = [1 if i in red else s for i, s in enumerate(x.shape)]
        if not keepdim:
            out_shape = [s for i, s in enumerate(x.shape) if i not in red]
        if out_dtype.is_floating_point:
            want = scaled_prod(src.double(), red).reshape(out_shape)
            return None, want.to(out_dtype), want, None
        want = src.long()
        for d in sorted(red, reverse=True):
            want = want.prod(d, keepdim=True)
        return None, want.reshape(out_shape).to(out_dtype), None, None
    if op in ("amax", "amin"):
        fn = getattr(torch, op)
        d = dims or []
        err = _error_of(lambda: fn(fx, d, keepdim))
        if err is not None:
            return err, None, None, None
        return None, fn(fx, d, keepdim).to(x.dtype), None, None
    if op in ("argmax", "argmin"):
        fn = getattr(torch, op)
        err = _error_of(lambda: fn(x, call.dim, keepdim))
        if err is not None:
            return err, None, None, None
        return None, fn(x, call.dim, keepdim), None, None
    # bitwise: torch has none; the dims are checked as torch.sum checks them, then numpy
    if x.is_floating_point():
        return TypeError, None, None, None
    err = _error_of(lambda: torch.sum(x, dims, keepdim))
    if err is not None:
        return err, None, None, None
    ufunc = {
        "bitwise_and": np.bitwise_and,
        "bitwise_or": np.bitwise_or,
        "bitwise_xor": np.bitwise_xor,
    }[op]
    a = x.cpu().numpy()
    red = tuple(_reduced(x, dims))
    if x.dim() == 0:
        want = a.copy()
    elif a.size == 0 and red:
        # numpy's identity is int64's all ones for AND; the dtype's own (True, 255) here
        ident = {np.bitwise_and: -1, np.bitwise_or: 0, np.bitwise_xor: 0}[ufunc]
        shape = [1 if i in red else s for i, s in enumerate(x.shape)]
        want = (
            np.full(shape, ident).astype(a.dtype)
            if a.dtype != np.bool_
            else np.full(shape, bool(ident))
        )
        if not keepdim:
            want = want.reshape([s for i, s in enumerate(x.shape) if i not in red])
    else:
        want = ufunc.reduce(a, axis=red, keepdims=keepdim) if red else a.copy()
    return None, torch.from_numpy(np.array(want, order="C")).to(x.dtype), None, None


# ----------------------------------------------------------------------------------------------
# Comparisons


def check_against_torch(call: Call, ours: torch.Tensor, theirs, exact, absref) -> None:
    msg = repr(call)
    assert ours.dtype == theirs.dtype, f"{msg}: dtype {ours.dtype}, torch {theirs.dtype}"
    assert ours.shape == theirs.shape, (
        f"{msg}: shape {tuple(ours.shape)}, torch {tuple(theirs.shape)}"
    )
    ours, theirs = ours.cpu(), theirs.cpu()
    if not ours.is_floating_point():
        assert torch.equal(ours, theirs), f"{msg}: values differ"
        return
    nan = torch.isnan(ours)
    if call.op in ("amax", "amin"):  # one of the inputs: the same value (either zero sign)
        assert torch.equal(nan, torch.isnan(theirs)), f"{msg}: NaN differs"
        assert torch.equal(ours[~nan].double(), theirs[~nan].double()), f"{msg}: values differ"
        return
    exact = exact.cpu()
    want_nan = torch.isnan(exact)
    assert torch.equal(nan, want_nan), f"{msg}: NaN where the exact result has none (or not)"
    inf = torch.isinf(exact)
    assert torch.equal(ours[inf].double(), exact[inf]), f"{msg}: infinities differ"
    fin = ~(want_nan | inf)
    o, e = ours[fin].double(), exact[fin]
    if call.op == "prod":
        k = max(1, call.x.numel() // max(1, ours.numel()))
        eps = torch.finfo(ours.dtype).eps
        tol = (eps + 2 * k * 2.0**-53) * e.abs() + torch.finfo(ours.dtype).tiny
        check_within(o, e, tol, ours.dtype, f"{msg}: products differ")
        return
    a = absref.cpu()[fin]
    tol = OUT_RTOL[ours.dtype] * e.abs() + 2e-6 * a + 1e-30
    if ours.dtype in (torch.float16, torch.bfloat16):  # rounding to the result's own dtype
        tol = tol + torch.finfo(ours.dtype).tiny
    check_within(o, e, tol, ours.dtype, f"{msg}: values differ from the exact result")


def overflow_bound(dtype: torch.dtype) -> float:
    """The least magnitude that rounds to infinity in `dtype` (to nearest, ties to even): the
    largest finite value plus half its ulp (float16 65520, not 65504)."""
    if dtype == torch.float64:
        return math.inf  # (2^1024 - 2^970, past float64's range: an exact float64 never reaches it)
    fi = torch.finfo(dtype)
    top = math.frexp(fi.max)[1] - 1  # max = (2 - eps) * 2^top
    return 2.0 ** (top + 1) - fi.eps * 2.0 ** (top - 1)


def check_within(o: torch.Tensor, e: torch.Tensor, tol: torch.Tensor, dtype, msg: str) -> None:
    """Each result o (float64) is a value within tol of the finite exact e, rounded to dtype: a
    finite one lies within tol, and an infinity has e's sign and e + tol reaches the overflow
    bound. So e past the bound by more than tol must give inf, and e within tol of it (a sum of
    16-bit values of 65508 rounds to float16's 65504) may give either."""
    bound = overflow_bound(dtype)
    inf = torch.isinf(o)
    must = e.abs() - tol >= bound
    assert inf[must].all(), f"{msg}: finite where the result overflows"
    may = (e.abs() + tol >= bound) & (torch.sign(o) == torch.sign(e))
    assert may[inf].all(), f"{msg}: inf where the result is finite (or of the other sign)"
    err = (o - e).abs()[~inf] - tol[~inf]
    assert (err <= 0).all(), f"{msg}: by {err.max().item():.3e} past the tolerance"


def bits(t: torch.Tensor) -> torch.Tensor:
    """The result's bit patterns as integers (floats), or the values themselves."""
    t = t.cpu().contiguous()
    if not t.is_floating_point():
        return t
    return t.view(
        {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()]
    )


def converts_in_range(call: Call) -> bool:
    """False where dtype= converts floats to an integer type that cannot hold them (infinities,
    NaN, values past its range): C++ leaves that conversion undefined, and torch's CPU and CUDA
    give different integers. The README excepts it from the CPU/CUDA bit-identity."""
    x, dt = call.x, call.dtype
    if dt is None or dt.is_floating_point or dt == torch.bool or not x.is_floating_point():
        return True
    v = x.double().cpu()
    info = torch.iinfo(dt)
    return bool((torch.isfinite(v) & (v.trunc() >= info.min) & (v.trunc() <= info.max)).all())


def check_same_bits(call: Call, cpu: torch.Tensor, cuda: torch.Tensor) -> None:
    """The CUDA result against the CPU backend's: the same bits, as the README promises for
    every op. amax and amin may differ in the sign of a zero maximum (+0 and -0 tie) and in NaN
    payloads; every NaN may differ in its payload."""
    msg = repr(call)
    assert cpu.dtype == cuda.dtype and cpu.shape == cuda.shape, msg
    if not converts_in_range(call):
        return  # each device converts as torch does there, and torch's CPU and CUDA differ
    cuda = cuda.cpu()
    if not cpu.is_floating_point():
        assert torch.equal(cpu, cuda), f"{msg}: CPU and CUDA differ"
        return
    nan = torch.isnan(cpu)
    assert torch.equal(nan, torch.isnan(cuda)), f"{msg}: NaN on one device only"
    if call.op in ("amax", "amin"):
        assert torch.equal(cpu[~nan].double(), cuda[~nan].double()), f"{msg}: CPU and CUDA differ"
        return
    assert torch.equal(bits(cpu)[~nan], bits(cuda)[~nan]), f"{msg}: CPU and CUDA bits differ"
