"""geometry.h's TwoDimWalker on the host: the offsets of a walk r, r + step, ... through a map of
two dims must be Walker's and IndexMap.in_offset's; and RunVectors, rows_kernel's split of a row
(contiguous or at stride 2) into head, aligned vectors and tail, must give every index once. tests/walkers.cpp is compiled with g++ and
loaded with ctypes; the kernels that use the walker (rows_kernel's runs of vectors: NCHW
statistics, the fp8 block view) run in the CUDA tests."""

import ctypes
from pathlib import Path

import pytest
from conftest import host_library
from hypothesis import given, settings
from hypothesis import strategies as st

SRC = Path(__file__).resolve().parent / "walkers.cpp"


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    so = host_library(tmp_path_factory, SRC, "walkers", "-O1")
    so.two_dim_walk_errors.restype = ctypes.c_int64
    so.two_dim_walk_errors.argtypes = [
        ctypes.POINTER(ctypes.c_int64),
        ctypes.POINTER(ctypes.c_int64),
        ctypes.c_int64,
        ctypes.c_int64,
        ctypes.c_int64,
    ]
    so.run_vectors_check.restype = ctypes.c_int64
    so.run_vectors_check.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    return so


def walk_errors(lib, sizes, strides, r, step):
    """Mismatched offsets over the whole walk (the steps that stay inside the map)."""
    n = max(0, (sizes[0] * sizes[1] - r + step - 1) // step)
    return lib.two_dim_walk_errors(
        (ctypes.c_int64 * 2)(*sizes), (ctypes.c_int64 * 2)(*strides), r, step, n
    )


@pytest.mark.parametrize(
    "sizes, strides, r, step",
    [
        ((128, 32), (6400, 4), 0, 256),  # fp8 blocks, float32 vectors: the step is whole runs
        ((128, 16), (6784, 8), 5, 256),  # bfloat16 vectors, a lane past the first
        ((64, 98), (1605632, 8), 17, 256),  # NCHW runs of 98 vectors: the step wraps
        ((3, 7), (100, 1), 6, 1),  # a step of one element: a wrap every 7 steps
        ((5, 7), (7, 1), 0, 7),  # contiguous rows, a step of exactly one run
        ((4, 5), (1, 4), 2, 13),  # a transposed map: the inner stride is the larger
        ((1000, 3), (3, 1000), 999, 2999),  # a step of several runs and a remainder
    ],
)
def test_two_dim_walker_cases(lib, sizes, strides, r, step):
    assert walk_errors(lib, sizes, strides, r, step) == 0


@settings(max_examples=300, deadline=None)
@given(
    sizes=st.tuples(st.integers(1, 300), st.integers(1, 300)),
    strides=st.tuples(st.integers(0, 1 << 20), st.integers(0, 1 << 10)),
    data=st.data(),
)
def test_two_dim_walker_property(lib, sizes, strides, data):
    total = sizes[0] * sizes[1]
    r = data.draw(st.integers(0, total - 1))
    step = data.draw(st.integers(1, 2 * total))
    assert walk_errors(lib, sizes, strides, r, step) == 0


@pytest.mark.parametrize(
    "step, V, misalign, K",
    [
        (2, 8, 0, 1),  # one element: the head is the span
        (2, 8, 1, 4),  # a span of 7 inside the first vector's head
        (2, 8, 7, 5),  # one head element, then one vector of the odd positions
        (2, 4, 3, 1000),  # float32 at stride 2, odd head
        (2, 16, 0, 33),  # 1-byte elements: a whole vector, an element past it
        (1, 8, 5, 3),  # contiguous, shorter than the head
        (1, 4, 0, 4096),  # contiguous and aligned: no head, no tail
    ],
)
def test_run_vectors_cases(lib, step, V, misalign, K):
    assert lib.run_vectors_check(step, V, misalign, K) == 0


def test_run_vectors_every_short_run(lib):
    """Every run of up to 70 elements, every misalignment: where the head is clamped to the span
    and where one or two vectors fit."""
    bad = [
        (step, V, m, K)
        for step in (1, 2)
        for V in (2, 4, 8, 16)
        for m in range(V)
        for K in range(1, 71)
        if lib.run_vectors_check(step, V, m, K) != 0
    ]
    assert not bad, bad[:10]


@settings(max_examples=400, deadline=None)
@given(
    step=st.sampled_from([1, 2]),
    V=st.sampled_from([2, 4, 8, 16]),
    K=st.integers(1, 600),
    data=st.data(),
)
def test_run_vectors_property(lib, step, V, K, data):
    misalign = data.draw(st.integers(0, V - 1))
    assert lib.run_vectors_check(step, V, misalign, K) == 0
