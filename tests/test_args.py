"""Arguments as torch takes them: the same accepted forms and the same exception types, through
the wrappers (torch_reduce.sum, ...), torch.ops.treduce.* (whose generic parser is torch.ops.aten's)
and override().
"""

import numpy as np
import pytest
import torch

import torch_reduce

X = torch.randn(3, 4, 5)
LIST_OPS = ["sum", "mean", "prod", "amax", "amin"]  # int[1] dims (prod: several, beyond torch)
ARG_OPS = ["argmax", "argmin"]
BIT_OPS = ["bitwise_and", "bitwise_or", "bitwise_xor"]


def ours(op):
    return getattr(torch_reduce, op)


def error_type(fn):
    try:
        fn()
    except Exception as e:  # noqa: BLE001 (the type is compared)
        return type(e)
    return None


# Dims that torch.sum / torch.amax reject, with torch's exception type.
BAD_DIMS = [
    (True, TypeError),
    ({0, 1}, TypeError),
    (1.0, TypeError),
    ([1.0], TypeError),
    (range(2), TypeError),
    (np.array([0, 1]), TypeError),
    (torch.tensor(1.0), TypeError),
    (torch.tensor([0, 1]), TypeError),
    (np.bool_(True), TypeError),
    ([True], TypeError),
    (2**63, ValueError),
    (-(2**63) - 1, ValueError),
    (2**70, ValueError),
    ([2**63], TypeError),
    ([0, 0, 5], IndexError),
    ([5, 0, 0], IndexError),
    ([0, -3], RuntimeError),
    (3, IndexError),
]
# Dims that torch accepts, as torch reads them.
GOOD_DIMS = [
    (np.int64(1), [1]),
    (np.int32(-1), [-1]),
    (torch.tensor(1), [1]),
    (torch.tensor([2]), [2]),
    ([np.int64(0), torch.tensor(2)], [0, 2]),
    ((1,), [1]),
    ([], None),
    ((), None),
    (None, None),
]


@pytest.mark.parametrize("op", ["sum", "mean", "amax", "amin"])
@pytest.mark.parametrize("case", range(len(BAD_DIMS)))
def test_bad_dims_raise_as_torch(op, case):
    dim, err = BAD_DIMS[case]
    assert error_type(lambda: getattr(torch, op)(X, dim=dim)) is err, "the table is torch's"
    with pytest.raises(err):
        ours(op)(X, dim=dim)


@pytest.mark.parametrize("op", LIST_OPS + BIT_OPS)
@pytest.mark.parametrize("case", range(len(GOOD_DIMS)))
def test_dims_accepted_as_torch(op, case):
    dim, as_list = GOOD_DIMS[case]
    x = X.long() if op in BIT_OPS else X
    ref = (
        getattr(torch.ops.treduce, op)(x, as_list)
        if op not in ("amax", "amin")
        else getattr(torch.ops.treduce, op)(x, as_list or [])
    )
    assert torch.equal(ours(op)(x, dim=dim), ref)


@pytest.mark.parametrize("op", ARG_OPS)
def test_arg_dims_as_torch(op):
    for dim in (np.int64(1), torch.tensor(1), -1, None):
        assert torch.equal(ours(op)(X, dim), getattr(torch, op)(X, dim))
    for dim in (True, [1], (1,), [], 1.0, torch.tensor([1]), torch.tensor(True), "a", {1}):
        want = error_type(lambda: getattr(torch, op)(X, dim))
        assert want is TypeError
        with pytest.raises(TypeError):
            ours(op)(X, dim)
    with pytest.raises(ValueError):
        ours(op)(X, 2**63)
    with pytest.raises(IndexError):
        ours(op)(X, 3)


@pytest.mark.parametrize("op", LIST_OPS + ARG_OPS + BIT_OPS)
def test_non_tensor_input_keepdim_and_dtype(op):
    with pytest.raises(TypeError, match="must be Tensor, not list"):
        ours(op)([1, 2])
    with pytest.raises(TypeError, match="must be Tensor, not NoneType"):
        ours(op)(None)
    x = X.long() if op in BIT_OPS else X
    for keepdim in (None, 1, np.bool_(True), torch.tensor(True)):
        with pytest.raises(TypeError, match="keepdim"):
            ours(op)(x, 0, keepdim)
    if op in ("sum", "mean", "prod"):
        for dtype in (5, np.float32, "float32"):
            assert error_type(lambda: getattr(torch, op)(X, dtype=dtype)) is TypeError
            with pytest.raises(TypeError, match="dtype"):
                ours(op)(X, dtype=dtype)


def test_string_dims():
    """torch.sum/mean/prod read a str as a dim name (RuntimeError); amax and the others reject it
    (TypeError). treduce has no named dims and says so."""
    for op in ("sum", "mean"):
        assert error_type(lambda: getattr(torch, op)(X, "a")) is RuntimeError
        with pytest.raises(RuntimeError, match="named dims are not supported"):
            ours(op)(X, "a")
        with pytest.raises(RuntimeError, match="named dims are not supported"):
            ours(op)(X, ["a"])
    with pytest.raises(RuntimeError, match="named dims"):
        ours("prod")(X, "a")
    for op in ("amax", "amin"):
        assert error_type(lambda: getattr(torch, op)(X, "a")) is TypeError
        with pytest.raises(TypeError, match="not str"):
            ours(op)(X, "a")


def test_messages_name_the_problem():
    with pytest.raises(TypeError, match="not float"):
        torch_reduce.sum(X, 1.0)
    with pytest.raises(ValueError, match="Overflow"):
        torch_reduce.sum(X, 2**70)
    with pytest.raises(
        TypeError,
        match="dtype UInt16 is not supported; supported dtypes are "
        "int8, int16, int32, int64, uint8 and bool$",
    ):
        torch_reduce.bitwise_or(torch.zeros(3, dtype=torch.uint16))
    with pytest.raises(TypeError, match="Tensor, not NoneType"):
        torch_reduce.amax(None)


def test_repeat_and_out_of_range_is_index_error_everywhere():
    """Every dim is wrapped before repeats are looked for, as in torch: IndexError."""
    assert error_type(lambda: torch.sum(X, [0, 0, 5])) is IndexError
    for op in LIST_OPS:
        with pytest.raises(IndexError):
            getattr(torch.ops.treduce, op)(X, [0, 0, 5])
        with pytest.raises(IndexError):
            ours(op)(X, [0, 0, 5])
        with torch_reduce.override():
            with pytest.raises(IndexError):
                getattr(torch, op)(X, [0, 0, 5]) if op != "prod" else torch.sum(X, [0, 0, 5])
    # and in the fake kernels (the shape rules in Python) that torch.compile traces with
    with torch._subclasses.fake_tensor.FakeTensorMode():
        with pytest.raises(IndexError):
            torch.ops.treduce.sum(torch.empty(3, 4, 5), [0, 0, 5])


def test_torch_ops_path_matches_aten():
    """torch.ops.treduce.* parse their arguments with torch.ops' generic parser, as
    torch.ops.aten.* do: the same forms are accepted or rejected, with the same types."""
    cases = [
        ([1], True),
        (np.int64(1), False),
        (torch.tensor(1), False),
        (1.0, False),
        ("a", False),
        (2**63, False),
        ([0, 1], True),
    ]
    for dim, ok in cases:
        a = error_type(lambda: torch.ops.aten.sum.dim_IntList(X, dim))
        t = error_type(lambda: torch.ops.treduce.sum(X, dim))
        assert (a is None) == ok and t is a, (dim, a, t)


def test_override_never_turns_an_error_into_a_result():
    """Calls that torch rejects fall back to torch (which raises), or raise the same type."""
    bad = [
        lambda: torch.prod(X, None),
        lambda: X.prod(dim=None),
        lambda: torch.prod(X, [0, 1]),
        lambda: torch.sum(X, dim=True),
        lambda: torch.amax(X, True),
        lambda: torch.argmax(X, True),
        lambda: torch.sum(X, 0, keepdim=None),
        lambda: torch.sum(X, 0, dtype=5),
        lambda: torch.mean(X.long()),
        lambda: torch.sum(X, [0, 0, 5]),
        lambda: torch.sum(X, 2**63),
    ]
    for call in bad:
        want = error_type(call)
        assert want is not None
        with torch_reduce.override():
            got = error_type(call)
        assert got is want, (want, got)
    with torch_reduce.override() as mode:  # and the calls torch takes are routed
        torch.prod(X), torch.prod(X, 1), X.prod(1, True), torch.sum(X, None)
    assert mode.routed["prod"] == 3 and mode.routed["sum"] == 1


def test_sparse_and_unsupported_inputs():
    """Sparse tensors reach no treduce kernel (NotImplementedError from the dispatcher, as the
    README says); complex and unsigned 16-64-bit inputs raise TypeError."""
    with pytest.raises(NotImplementedError):
        torch_reduce.sum(torch.eye(3).to_sparse())
    for dtype in (torch.complex64, torch.uint16, torch.uint32, torch.uint64):
        with pytest.raises(TypeError):
            torch_reduce.sum(torch.zeros(3, dtype=dtype))
