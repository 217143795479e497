"""The exact-sum prototype (bench/exact): its host code against Python's exact rationals.

bench/exact/exact_host.cpp is compiled with g++ (a few seconds) and loaded with ctypes. Both of
its paths (runs with merges, and every element straight into the digits) must give the correctly
rounded sum and mean, ties to even, of float32, bfloat16 and float16 inputs.
"""

import ctypes
import math
import struct
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from conftest import host_library
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1] / "bench" / "exact"
FORMATS = {0: (24, -149, 127), 1: (8, -133, 127), 2: (11, -24, 15)}  # p, qmin, emax
KINDS = {0: "float32", 1: "bfloat16", 2: "float16"}


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    so = host_library(tmp_path_factory, ROOT / "exact_host.cpp", "exact")
    for name in ("exact_sum", "exact_sum_digits"):
        fn = getattr(so, name)
        fn.restype = ctypes.c_double
        fn.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.c_int]
    return so


def encode(values, kind):
    """The values (Python floats, each exactly representable) as the kind's storage array."""
    if kind == 0:
        return np.array(values, dtype=np.float32)
    if kind == 2:
        return np.array(values, dtype=np.float16)
    f32 = np.array(values, dtype=np.float32)
    return (f32.view(np.uint32) >> 16).astype(np.uint16)


def decode(arr, kind):
    if kind == 1:
        return (arr.astype(np.uint32) << 16).view(np.float32).astype(np.float64).tolist()
    return arr.astype(np.float64).tolist()


def round_fraction(x: Fraction, kind: int) -> float:
    """x rounded to nearest, ties to even, in the kind's format (with subnormals, overflow)."""
    p, qmin, emax = FORMATS[kind]
    if x == 0:
        return 0.0
    a = abs(x)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    q = max(e - (p - 1), qmin)
    scaled = a / Fraction(2) ** q
    k = math.floor(scaled)
    rem = scaled - k
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and k % 2 == 1):
        k += 1
    r = math.ldexp(k, q) if k else 0.0
    if r >= 2.0 ** (emax + 1):
        r = math.inf
    return math.copysign(r, x) if r else 0.0


def reference(values, mean: bool, kind: int) -> float:
    if any(math.isnan(v) for v in values) or (math.inf in values and -math.inf in values):
        return math.nan
    if math.inf in values:
        return math.inf
    if -math.inf in values:
        return -math.inf
    total = sum((Fraction(v) for v in values), Fraction(0))
    return round_fraction(total / len(values) if mean else total, kind)


def check(lib, values, kind, mean=False):
    arr = encode(values, kind)
    exact_values = decode(arr, kind)
    want = reference(exact_values, mean, kind)
    ptr = arr.ctypes.data_as(ctypes.c_void_p)
    for name in ("exact_sum", "exact_sum_digits"):
        got = getattr(lib, name)(ptr, len(arr), kind, int(mean))
        same = (math.isnan(got) and math.isnan(want)) or (
            got == want and math.copysign(1, got) == math.copysign(1, want)
        )
        assert same, f"{name} {KINDS[kind]} mean={mean}: {got!r}, exact {want!r}"


@pytest.mark.parametrize("kind", [0, 1, 2])
@pytest.mark.parametrize("mean", [False, True])
def test_cancellation(lib, kind, mean):
    big = {0: 2.0**60, 1: 2.0**60, 2: 2.0**15}[kind]
    check(lib, [big, 1.0, -big], kind, mean)
    check(lib, [big] + [1.0] * 300 + [-big] + [0.5] * 3, kind, mean)
    check(lib, [1.0, big, -big, 1.0] * 100, kind, mean)


def test_cancellation_in_double_order(lib):
    # 0 in every double order of the three terms; exact sum 1
    arr = np.array([2.0**60, 1.0, -(2.0**60)], dtype=np.float32)
    assert lib.exact_sum(arr.ctypes.data_as(ctypes.c_void_p), 3, 0, 0) == 1.0


@pytest.mark.parametrize("kind", [0, 1, 2])
def test_ties_to_even(lib, kind):
    p = FORMATS[kind][0]
    one_ulp = 2.0 ** (1 - p)
    # 1 + half an ulp: a tie, stays 1; 1 + 3/2 ulp: a tie, goes up to 1 + 2 ulp
    check(lib, [1.0, one_ulp / 2], kind)
    check(lib, [1.0, one_ulp, one_ulp / 2], kind)
    # a tie plus a tiny amount far below it rounds up
    tiny = {0: 2.0**-140, 1: 2.0**-120, 2: 2.0**-20}[kind]
    check(lib, [1.0, one_ulp / 2, tiny], kind)
    check(lib, [1.0, one_ulp / 2, -tiny], kind)


@pytest.mark.parametrize("kind", [0, 1, 2])
@pytest.mark.parametrize("mean", [False, True])
def test_subnormals_and_specials(lib, kind, mean):
    sub = {0: 2.0**-149, 1: 2.0**-133, 2: 2.0**-24}[kind]
    check(lib, [sub] * 7, kind, mean)
    check(lib, [sub, -sub, sub * 3], kind, mean)
    big = {0: 3.0e38, 1: 3.0e38, 2: 60000.0}[kind]
    check(lib, [big, big], kind, mean)  # overflow of the result only
    check(lib, [big, big, -big], kind, mean)  # partial sums past the max, result finite
    for extra in ([math.inf], [-math.inf], [math.nan], [math.inf, -math.inf]):
        check(lib, [1.0, 2.0] + extra, kind, mean)
    check(lib, [0.0, -0.0], kind, mean)


def test_mean_rounds_once(lib):
    # sum 2^24 + 1 (needs 25 bits) over 2: a quotient that a float32 sum would first round
    check(lib, [2.0**24, 1.0], 0, True)
    check(lib, [1.0, 2.0**-24, 2.0**-60] * 3, 0, True)


def _values(kind):
    p, qmin, emax = FORMATS[kind]
    finite = st.builds(
        lambda m, e, s: s * math.ldexp(m, e),
        st.integers(0, 2**p - 1),
        st.integers(qmin, emax - p + 1),
        st.sampled_from([1, -1]),
    )
    specials = st.sampled_from([math.inf, -math.inf, math.nan, 0.0, -0.0])
    return st.one_of(finite, finite, finite, specials)


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_random_against_rationals(lib, data):
    kind = data.draw(st.sampled_from([0, 1, 2]))
    values = data.draw(st.lists(_values(kind), min_size=1, max_size=700))
    # narrow runs too: most inputs sit within a few binades, and take the fast path
    if data.draw(st.booleans()):
        scale = data.draw(st.integers(-20, 20)) if kind != 2 else 0
        narrow = data.draw(
            st.lists(st.floats(-4, 4, width=16 if kind == 2 else 32), min_size=1, max_size=2000)
        )
        values = [math.ldexp(v, scale) for v in narrow]
    check(lib, values, kind, data.draw(st.booleans()))


def test_many_runs_and_merges(lib):
    rng = np.random.default_rng(7)
    for kind in (0, 1, 2):
        x = rng.standard_normal(100_000) * (
            2.0 ** rng.integers(-10, 10, 100_000) if kind < 2 else 1
        )
        values = decode(encode(x.tolist(), kind), kind)
        check(lib, values, kind, False)
        check(lib, values, kind, True)


def test_float32_bits_roundtrip():
    # the encoding of the tests: bfloat16 as the high halves of float32 patterns
    v = struct.unpack("<f", struct.pack("<I", 0x3F810000))[0]
    assert decode(encode([v], 1), 1) == [v]


def test_run_bound(lib):
    """A chunk whose double sum would lose its lowest bit: the exact sum lies just above a tie.
    The magnitudes span 27 binades; within run_exact's bound they would not take the fast path."""
    values = [2.0**27] * 127 + [2.0**27 + 1024, 1 + 2.0**-23, -1.0]
    check(lib, values, 0)
    arr = np.array(values, dtype=np.float32)
    assert lib.exact_sum(arr.ctypes.data_as(ctypes.c_void_p), len(arr), 0, 0) == 2.0**34 + 2048
