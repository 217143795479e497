"""The private hook that forces the canonical kernels' launch configuration (tests and bench):
its spec is parsed when it is set, off the production path, on any machine with the CUDA build."""

import pytest
import torch

import torch_reduce  # noqa: F401

pytestmark = pytest.mark.skipif(
    not hasattr(torch.ops.treduce, "_force_launch"), reason="a build without the CUDA backend"
)

BAD_SPECS = [
    "y=3",
    "y=512",
    "splits=0",
    "splits=65536",
    "rounds=3",
    "per=3",
    "lat=2",
    "small=2",
    "grid=4",
    "threads=32",
    "threads=96",
    "loop=0",
    "loop=65",
    "cluster=2",
    "whole=2",
    "copy=2",
    "tile=2",
    "vec=1",
    "vec=-1",
    "fast",
]

GOOD_SPECS = [
    "",
    "plain",
    "y=256,per=2",
    "y=32,splits=3,rounds=4",
    "lat=1,y=256,splits=4,rounds=4",
    "small=1,threads=64,loop=2,cluster=0,whole=1",
    "copy=0",
    "copy=1,y=64",
    "tile=1,copy=0",
    "vec=0",
    "vec=0,y=32",
]


@pytest.mark.parametrize("bad", BAD_SPECS)
def test_a_bad_spec_is_refused_where_it_is_set(bad, force_launch):
    with pytest.raises(RuntimeError, match="_force_launch"):
        force_launch(bad)


@pytest.mark.parametrize("spec", GOOD_SPECS)
def test_good_specs_are_taken_and_released(spec, force_launch):
    force_launch(spec)
    force_launch(None)
