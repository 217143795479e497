"""Past 2^31: inputs of more than 2^31 elements and 2^32 bytes, outputs of more than 2^31
elements, views whose data starts past 2^32 bytes, and argmax/argmin indices past 2^31; every op,
over everything and along each dim.

Run on CUDA (skipped only when the GPU lacks the memory) and, as far as the machine's memory
allows, on the CPU. Values are small integers, so that float sums are exact in any order and
every reference is exact.
"""

import gc

import pytest
import torch
from conftest import DEVICES

import torch_reduce

# One xdist worker runs them all (scripts/h200.sh: --dist loadgroup): the free memory a case
# checks first must stay free while it runs, and two of these cases at once overfill the GPU.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("large")]

BIG = 2**31 + 100  # a dim past 2^31 elements


def free_bytes(device):
    if device == "cuda":
        # The blocks that torch's caching allocator keeps from earlier tests count as free: the
        # driver's figure alone skipped the big cases after test_int8_two_rows_past_2_31.
        gc.collect()
        torch.cuda.empty_cache()
        return torch.cuda.mem_get_info()[0]
    with open("/proc/meminfo") as f:
        info = dict(line.split(":", 1) for line in f)
    return int(info["MemAvailable"].split()[0]) * 1024


def need(device, gib):
    if device == "cuda" and not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    if free_bytes(device) < gib * 2**30:
        pytest.skip(f"needs {gib} GiB free on {device}")


def tree_bitwise(t, dim, fn):
    """fn (torch.bitwise_and/or/xor) over `dim` by halving: a reference for any length."""
    t = t.movedim(dim, -1)
    while t.shape[-1] > 1:
        h = t.shape[-1] // 2
        head = fn(t[..., :h], t[..., h : 2 * h])
        t = torch.cat([head, t[..., 2 * h :]], -1) if t.shape[-1] % 2 else head
    return t[..., 0]


def chunked(name, x, dim, dtype=None):
    """torch.sum or torch.prod over `dim` (None: everything), 2^28 elements at a time:
    torch widens the input to the accumulating dtype first (int64, or float64 with dtype=), which
    for the whole input would not fit in the CPU's memory. Integer products wrap in any order;
    float sums of small integers are exact in any order."""
    v = x.reshape(-1) if dim is None else x.movedim(dim, -1)
    fn = torch.sum if name == "sum" else torch.prod
    step = max(1, (1 << 28) // max(1, v.numel() // max(1, v.shape[-1])))
    if step == 1:
        # a short reduced dim and an output past 2^28 elements: slice by slice, in place (torch's
        # sum of each slice would widen it to int64 first, another copy of the output's size)
        acc = v[..., 0].to(fn(v.new_empty(0), dtype=dtype).dtype)
        for i in range(1, v.shape[-1]):
            if name == "sum":
                acc.add_(v[..., i])
            else:
                acc.mul_(v[..., i])
        return acc
    acc = None
    for start in range(0, v.shape[-1], step):
        part = fn(v[..., start : start + step], -1, dtype=dtype)
        acc = part if acc is None else (acc + part if name == "sum" else acc * part)
    return acc


def arg_reference(name, x, dim):
    """torch.argmax/argmin over `dim`; for an output past 2^28 elements, slice by slice (torch's
    own holds two int64 copies of the output at once)."""
    if dim is None or x.numel() // x.shape[dim] <= 1 << 28:
        return getattr(torch, name)(x, dim)
    v = x.movedim(dim, -1)
    best = v[..., 0].clone()
    idx = torch.zeros(best.shape, dtype=torch.int64, device=x.device)
    for i in range(1, v.shape[-1]):
        better = v[..., i] > best if name == "argmax" else v[..., i] < best  # ties: the first
        best = torch.where(better, v[..., i], best)
        idx.masked_fill_(better, i)
    return idx


def check_int_ops(x, dims):
    """Every op on an integer tensor, over `dims` (None: all), against torch. Ops with an int64
    result are left out where ours and torch's would not fit in memory (the CPU's 24 GiB)."""
    d1 = None if dims is None else dims[0]
    out_numel = 1 if dims is None else x.numel() // x.shape[d1]
    # ours and the reference: int64 outputs, and the argmax reference's value and mask tensors
    wide = free_bytes(x.device.type) > 20 * out_numel + 2**30
    for name in ("sum", "prod") if wide else ():
        ours = getattr(torch_reduce, name)(x, dims)
        assert torch.equal(ours, chunked(name, x, d1)), f"{name} dims={dims}"
        del ours
    for name in ("amax", "amin"):
        ours = getattr(torch_reduce, name)(x, dims)
        theirs = getattr(torch, name)(x, [] if dims is None else dims)
        assert torch.equal(ours, theirs), f"{name} dims={dims}"
        del ours, theirs
    for name in ("argmax", "argmin") if wide else ():
        ours = getattr(torch_reduce, name)(x, d1)
        theirs = arg_reference(name, x, d1)
        assert torch.equal(ours, theirs), f"{name} dim={d1}"
        del ours, theirs
    for name, fn in (
        ("bitwise_and", torch.bitwise_and),
        ("bitwise_or", torch.bitwise_or),
        ("bitwise_xor", torch.bitwise_xor),
    ):
        ours = getattr(torch_reduce, name)(x, dims)
        want = tree_bitwise(x.reshape(-1) if dims is None else x, 0 if dims is None else d1, fn)
        assert torch.equal(ours, want), f"{name} dims={dims}"
        del ours, want


@pytest.mark.parametrize("device", DEVICES)
def test_int8_two_rows_past_2_31(device):
    """(2, 2^31 + 100) int8: 4.3 GB, 2^32 + 200 elements. Over dim 1 each output reduces more
    than 2^31 elements (argmax/argmin indices past 2^31, planted there); over dim 0 the output
    has more than 2^31 elements; over both, everything; and the transposed view."""
    need(device, 4.3 + 2.2 * 2 + 1)
    x = torch.randint(-50, 50, (2, BIG), dtype=torch.int8, device=device)
    x[0, 2**31 + 7] = 100  # the maxima past 2^31: argmax's index there
    x[1, 2**31 + 11] = 100
    x[1, 2**31 + 50] = -100  # a minimum past 2^31
    x[0, BIG - 1] = -100
    for dims in (None, [1], [0]):
        check_int_ops(x, dims)
    check_int_ops(x.t(), [0])  # the transposed view: two outputs of 2^31 + 100 strided elements
    assert torch_reduce.argmax(x, 1).tolist() == [2**31 + 7, 2**31 + 11]
    assert torch_reduce.argmin(x, 1)[1].item() == 2**31 + 50


@pytest.mark.parametrize("device", DEVICES)
def test_float32_past_2_31_every_op(device):
    """float32 of 2^31 + 2^20 + 8 elements (8.6 GB): sum, mean, prod, amax, amin, argmax,
    argmin over everything and along each dim of (8, n/8) and (n/8, 8) views (on the CPU:
    everything and the rows of (8, n/8))."""
    n = 2**31 + 2**20 + 8
    need(device, 8.6 + 5)
    x = torch.randint(0, 4, (n,), dtype=torch.int8, device=device).to(torch.float32)
    x[2**31 + 3] = 9.0  # the maximum past 2^31
    x[n - 1] = -1.0  # the minimum, last
    views = [
        (x, None),
        (x.view(8, -1), [1]),
        (x.view(8, -1), [0]),
        (x.view(-1, 8), [0]),
        (x.view(-1, 8), [1]),
    ]
    # The CPU takes the full reduction and rows only: each pass over 8.6 GB takes seconds there
    # (and torch's column argmax tens of them), and CI has two cores.
    for v, dims in views if device == "cuda" else views[:2]:
        d1 = None if dims is None else dims[0]
        exact = chunked("sum", v, d1, torch.float64)
        assert torch.equal(torch_reduce.sum(v, dims), exact.float()), f"sum {dims}"
        k = v.numel() // exact.numel()
        assert torch.equal(torch_reduce.mean(v, dims), (exact / k).float()), f"mean {dims}"
        del exact
        for name in ("amax", "amin"):
            want = getattr(torch, name)(v, [] if dims is None else dims)
            assert torch.equal(getattr(torch_reduce, name)(v, dims), want), f"{name} {dims}"
        for name in ("argmax", "argmin"):
            want = getattr(torch, name)(v, d1)
            assert torch.equal(getattr(torch_reduce, name)(v, d1), want), f"{name} {dims}"
    assert torch_reduce.argmax(x).item() == 2**31 + 3
    assert torch_reduce.argmin(x).item() == n - 1
    # prod: ones with a few -1, 2 and 0.5 planted past 2^31: an exact power of two
    x.fill_(1.0)
    x[[5, 2**31 + 1, 2**31 + 9, n - 2]] = torch.tensor([-1.0, 2.0, 2.0, 0.5], device=device)
    assert torch_reduce.prod(x).item() == -2.0
    assert torch.equal(torch_reduce.prod(x.view(8, -1), [1]), torch.prod(x.view(8, -1), 1))
    if device == "cuda":
        assert torch.equal(torch_reduce.prod(x.view(-1, 8), [0]), torch.prod(x.view(-1, 8), 0))


@pytest.mark.parametrize("device", DEVICES)
def test_float16_output_past_2_31(device):
    """A float16 result of more than 2^31 elements: (2^31 + 64, 2) over dim 1 (rows of 2)."""
    need(device, 8.6 + 4.3 * 2 + 1)
    x = torch.randint(-8, 8, (2**31 + 64, 2), dtype=torch.int8, device=device).to(torch.float16)
    for name in ("sum", "amax"):
        ours = getattr(torch_reduce, name)(x, 1)
        assert ours.dtype == torch.float16 and ours.numel() > 2**31
        for start in range(0, x.shape[0], 1 << 28):  # small integers: exact in either order
            rows = slice(start, start + (1 << 28))
            assert torch.equal(ours[rows], getattr(torch, name)(x[rows], 1)), (name, start)
        del ours


@pytest.mark.parametrize("device", DEVICES)
def test_view_starting_past_2_32_bytes(device):
    """A view whose data starts 2^32 + 4 bytes into its storage (and so off a 16-byte boundary)."""
    need(device, 4.4 * 2 + 1)
    base = torch.randint(-50, 50, (2**30 + 2**22 + 3,), dtype=torch.int8, device=device)
    base = base.to(torch.float32)
    v = base[2**30 + 1 :]
    assert v.storage_offset() * 4 == 2**32 + 4
    v[777] = 1000.0
    assert torch_reduce.sum(v).item() == torch.sum(v, dtype=torch.float64).item()
    assert torch_reduce.amax(v).item() == 1000.0 and torch_reduce.argmax(v).item() == 777
    rows = v[: 4 * 2**20].view(4, -1)
    assert torch.equal(torch_reduce.sum(rows, 1), torch.sum(rows, 1, dtype=torch.float64).float())
    assert torch.equal(torch_reduce.amin(rows, 0), torch.amin(rows, 0))
    assert torch.equal(torch_reduce.argmin(rows, 0), torch.argmin(rows, 0))
