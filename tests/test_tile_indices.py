"""canon_tile_kernel's staging indices (geometry.h: tile_map, TileWalkerOf), on the host.

tests/tile_indices.cpp is compiled with g++ (a second or two) and loaded with ctypes. For a
reduced block of drawn dims, stored in a drawn memory order with drawn gaps, the kernel's threads
walking the block in memory order must stage every logical position once, from the element that
the logical order puts there; a block of more than four dims longer than 1, or with offsets past
32 bits, does not fit the walk (tile_map_fits: the route steps aside). The kernel itself runs in the CUDA tests
(test_numerics_cuda.py's transposed blocks).
"""

import ctypes
from pathlib import Path

import pytest
from conftest import host_library
from hypothesis import given, settings
from hypothesis import strategies as st

SRC = Path(__file__).resolve().parent / "tile_indices.cpp"


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    so = host_library(tmp_path_factory, SRC, "tile_indices", "-O1")
    so.tile_staging_errors.restype = ctypes.c_int64
    so.tile_staging_errors.argtypes = [
        ctypes.c_int,
        ctypes.POINTER(ctypes.c_int64),
        ctypes.POINTER(ctypes.c_int64),
        ctypes.c_int,
    ]
    so.tile_run_errors.restype = ctypes.c_int64
    so.tile_run_errors.argtypes = [
        ctypes.c_int,
        ctypes.POINTER(ctypes.c_int64),
        ctypes.POINTER(ctypes.c_int64),
        ctypes.c_int,
        ctypes.c_int,
    ]
    so.tile_fits.restype = ctypes.c_int
    so.tile_fits.argtypes = [
        ctypes.c_int,
        ctypes.POINTER(ctypes.c_int64),
        ctypes.POINTER(ctypes.c_int64),
    ]
    return so


def staging_errors(lib, sizes, strides, threads):
    n = len(sizes)
    return lib.tile_staging_errors(
        n, (ctypes.c_int64 * n)(*sizes), (ctypes.c_int64 * n)(*strides), threads
    )


def run_errors(lib, sizes, strides, threads, vec):
    n = len(sizes)
    return lib.tile_run_errors(
        n, (ctypes.c_int64 * n)(*sizes), (ctypes.c_int64 * n)(*strides), threads, vec
    )


def strides_of(sizes, order, gaps, inner):
    """Strides of `sizes` stored with dims in memory order `order` (outermost first), the
    innermost `inner` elements apart and gaps[i] elements of padding after each run of the
    i-th stored dim."""
    strides = [0] * len(sizes)
    step = inner
    for i in reversed(range(len(order))):
        strides[order[i]] = step
        step *= sizes[order[i]] + gaps[i]
    return strides


@pytest.mark.parametrize(
    "sizes,strides",
    [
        ((56, 56), (1, 56)),  # an H x W map stored transposed
        ((7, 7), (1, 7)),
        ((16, 14, 14), (50176, 1, 14)),  # N x (H x W transposed): BatchNorm statistics
        ((64, 14, 14), (1, 896, 64)),  # channels-last (C, H, W)
        ((3, 5), (1, 0)),  # an expanded dim
        ((2, 4, 6, 7), (42, 1, 336, 6)),  # four dims, none merged
        ((1, 5, 1, 3, 1, 1), (99, 1, 7, 5, 3, 2)),  # six dims, two longer than 1
    ],
)
@pytest.mark.parametrize("threads", [32, 128, 256])
def test_tile_staging_covers_the_block_in_logical_order(lib, sizes, strides, threads):
    assert staging_errors(lib, sizes, strides, threads) == 0


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_tile_staging_property(lib, data):
    """Property-based: any dims, memory order, gaps and innermost stride; any block size."""
    nd = data.draw(st.integers(1, 6))
    sizes = [data.draw(st.integers(1, 9)) for _ in range(nd)]
    order = data.draw(st.permutations(range(nd)))
    gaps = [data.draw(st.sampled_from([0, 0, 1, 3])) for _ in range(nd)]
    inner = data.draw(st.sampled_from([1, 1, 2, 3]))
    threads = data.draw(st.sampled_from([32, 64, 128, 256, 7]))
    strides = strides_of(sizes, list(order), gaps, inner)
    errors = staging_errors(lib, sizes, strides, threads)
    if sum(s > 1 for s in sizes) > 4:
        assert errors == -1, (sizes, strides)  # more dims than the walk holds
    else:
        assert errors == 0, (sizes, strides, threads)


@pytest.mark.parametrize(
    "sizes,strides,fits",
    [
        ((2, 3, 4, 5), (60, 20, 5, 1), True),
        ((2, 3, 4, 5, 6), (360, 120, 30, 6, 1), False),  # five dims longer than 1
        ((2, 3, 1, 4, 5, 1), (60, 20, 7, 5, 1, 9), True),  # size-1 dims dropped
        ((3, 7), (1 << 30, 1), False),  # an offset of 2^31
        ((2, 7), (1 << 30, 1), True),  # the last offset 2^30 + 6
    ],
)
def test_tile_map_fits(lib, sizes, strides, fits):
    n = len(sizes)
    got = lib.tile_fits(n, (ctypes.c_int64 * n)(*sizes), (ctypes.c_int64 * n)(*strides))
    assert got == int(fits)


@pytest.mark.parametrize(
    "sizes,strides,vec,runs",
    [
        ((56, 56), (1, 56), 4, True),  # an H x W map stored transposed: runs of H, float32
        ((56, 56), (1, 56), 8, True),  # 16-bit vectors of 8
        ((112, 112), (1, 112), 8, True),
        ((28, 28), (1, 28), 8, False),  # runs of 28: not whole 16-bit vectors
        ((16, 14, 14), (50176, 1, 14), 4, False),  # runs of 14
        ((64, 14, 14), (1, 896, 64), 4, True),  # channels-last (C, H, W): runs of C
        ((64, 14, 14), (1, 900, 64), 4, True),  # rows of H padded by a whole vector
        ((64, 14, 14), (1, 898, 64), 4, False),  # ... by half a vector
        ((2, 4, 8, 6), (48, 8, 1, 384), 4, True),  # four dims, none merged
        ((3, 5), (1, 0), 2, False),  # an expanded dim
    ],
)
@pytest.mark.parametrize("threads", [32, 128, 256])
def test_tile_runs_stage_every_element_once(lib, sizes, strides, vec, runs, threads):
    """stage_tile_runs' walk (geometry.h: tile_map_runs, tile_vector_map): a block in runs of
    whole vectors is staged a vector at a time, each element once at its logical position;
    other blocks are left to the element walk."""
    assert run_errors(lib, sizes, strides, threads, vec) == (0 if runs else -2)


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_tile_runs_property(lib, data):
    """Property-based: any dims, memory order and gaps, vectors of 2, 4 or 8 elements: where the
    block is in runs of whole vectors, every element is staged once from its own offset."""
    nd = data.draw(st.integers(1, 5))
    vec = data.draw(st.sampled_from([2, 4, 8]))
    sizes = [data.draw(st.integers(1, 9)) * data.draw(st.sampled_from([1, vec])) for _ in range(nd)]
    order = data.draw(st.permutations(range(nd)))
    gaps = [data.draw(st.sampled_from([0, 0, 1, vec])) for _ in range(nd)]
    threads = data.draw(st.sampled_from([32, 64, 128, 256, 7]))
    strides = strides_of(sizes, list(order), gaps, 1)
    errors = run_errors(lib, sizes, strides, threads, vec)
    assert errors in (0, -1, -2), (sizes, strides, threads, vec)
    if errors == -1:
        assert sum(s > 1 for s in sizes) > 4
