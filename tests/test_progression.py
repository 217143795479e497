"""The tutorial's kernels (bench/progression/progression.cu), each step against a float64
reference, on sizes that leave partial blocks, several combine passes and a float4 tail."""

import os
from pathlib import Path

import pytest
import torch

# One xdist worker runs them all (scripts/h200.sh: --dist loadgroup): the module's extension is
# compiled once (about 50 s) instead of once per worker.
pytestmark = [pytest.mark.cuda, pytest.mark.xdist_group("progression")]

SOURCE = Path(__file__).resolve().parents[1] / "bench" / "progression" / "progression.cu"


@pytest.fixture(scope="module")
def ext(tmp_path_factory):
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    from torch.utils.cpp_extension import load

    os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0")
    return load(
        "treduce_progression_test",
        [str(SOURCE)],
        build_directory=str(tmp_path_factory.mktemp("progression")),
        extra_cuda_cflags=["-O3", "-std=c++17"],
    )


@pytest.mark.parametrize("step", range(1, 9))
@pytest.mark.parametrize("n", [0, 1, 255, 256, 257, 1000, 65537, 1 << 20, (1 << 22) + 3])
def test_step_sums_exactly(ext, step, n):
    """Small integers: every partial sum is an integer below 2^24, so any order is exact in
    float32 and the result must equal the sum exactly; a missed or repeated element shows."""
    torch.manual_seed(n + step)
    x = torch.randint(-1, 3, (n,), device="cuda").float()
    out = ext.progression_sum(x, step)
    assert out.shape == (1,) and out.dtype == torch.float32
    assert out.item() == x.double().sum().item(), (step, n)


@pytest.mark.parametrize("step", range(1, 9))
def test_step_against_float64(ext, step):
    torch.manual_seed(step)
    x = torch.rand(1 << 20, device="cuda") - 0.25
    ref = x.double().sum().item()
    # float32 accumulation: a generous bound, far below what a lost block would change
    assert abs(ext.progression_sum(x, step).item() - ref) <= 1e-4 * x.double().abs().sum().item()


def test_rejects_bad_input(ext):
    with pytest.raises(RuntimeError):
        ext.progression_sum(torch.rand(10, device="cuda", dtype=torch.float64), 4)
    with pytest.raises(RuntimeError):
        ext.progression_sum(torch.rand(10, device="cuda"), 9)
