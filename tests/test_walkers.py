"""geometry.h's TwoDimWalker on the host: the offsets of a walk r, r + step, ... through a map of
two dims must be Walker's and IndexMap.in_offset's. tests/walkers.cpp is compiled with g++ and
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
