"""Property-based differential tests (hypothesis): every op against torch on drawn inputs.

Each example draws a shape of 0-6 dims (sizes 0, 1, odd, powers of two), a layout (contiguous,
permuted, step slices, expanded, channels_last, a storage offset, overlapping as_strided windows,
or a mix), values (normal, ties, or NaN/inf/+-0 and the full integer range), dims (None, [], one,
several; negative, repeated and out-of-range ones included), keepdim and, for sum, mean and prod,
a dtype= of every supported dtype. The result must have torch's dtype, shape and value, or raise
the exception type that torch raises (fuzz_cases.expected). On CUDA the same draw also runs on
the CPU backend, and the two must give the same bits.

Profiles: TREDUCE_FUZZ=ci (default, a bounded run) or TREDUCE_FUZZ=soak (20,000 examples per op
and device); TREDUCE_FUZZ_EXAMPLES sets the count. A failure prints the draw and a blob to replay
it (@reproduce_failure).
"""

import collections
import os
import time

import pytest
from conftest import HAS_CUDA
from fuzz_cases import (
    FUZZ_SETTINGS,
    OPS,
    Call,
    calls,
    check_against_torch,
    check_same_bits,
    examples_for,
    expected,
    run,
    same_layout,
    to_host,
)
from hypothesis import given, settings

EXAMPLES_RUN = collections.Counter()  # (test, op) -> examples run


def run_and_report(name: str, op: str, prop) -> None:
    """Runs the property, then prints the count of examples run, the seconds and whether it
    passed, and appends that line to $TREDUCE_FUZZ_LOG when set. The line is written even when
    the run fails or is interrupted (a soak cut by its time limit still counts what it ran)."""
    start, cpu, outcome = time.monotonic(), time.process_time(), "interrupted"
    try:
        prop()
        outcome = "passed"
    except Exception:
        outcome = "failed"
        raise
    finally:
        report(name, op, outcome, time.monotonic() - start, time.process_time() - cpu)


def report(name: str, op: str, outcome: str, seconds: float, cpu_seconds: float) -> None:
    """One line: the examples run, the outcome, wall seconds and this process's CPU seconds (a
    soak whose processes wait on a shared GPU shows far fewer CPU seconds than wall seconds)."""
    line = (
        f"fuzz {name} op={op} examples={EXAMPLES_RUN[name, op]} {outcome} {seconds:.0f}s "
        f"cpu={cpu_seconds:.0f}s"
    )
    print(line)
    if os.environ.get("TREDUCE_FUZZ_LOG"):
        with open(os.environ["TREDUCE_FUZZ_LOG"], "a") as f:
            f.write(line + "\n")


def check(call: Call):
    """Ours against torch for one call: (torch's exception type, None) when both raise it,
    else (None, our result, on the host)."""
    err, theirs, exact, absref = expected(call)
    if err is not None:
        with pytest.raises(err):
            run(call, call.x)
        return err, None
    ours = run(call, call.x)
    assert ours.device == call.x.device, repr(call)
    ours, theirs, exact, absref = to_host(ours, theirs, exact, absref)
    check_against_torch(call, ours, theirs, exact, absref)
    return None, ours


@pytest.mark.parametrize("op", OPS)
def test_fuzz_cpu(op):
    @settings(FUZZ_SETTINGS, max_examples=examples_for(op))
    @given(calls(op))
    def prop(call):
        EXAMPLES_RUN["cpu", op] += 1
        check(call)

    run_and_report("cpu", op, prop)


@pytest.mark.cuda
@pytest.mark.parametrize("op", OPS)
def test_fuzz_cuda_against_torch_and_cpu(op):
    """CUDA against torch (on CUDA), and against the CPU backend bit for bit."""
    assert HAS_CUDA

    @settings(FUZZ_SETTINGS, max_examples=examples_for(op))
    @given(calls(op))
    def prop(call):
        EXAMPLES_RUN["cuda", op] += 1
        gpu = Call(
            call.op, same_layout(call.x, "cuda"), call.dim, call.keepdim, call.dtype, call.note
        )
        # against torch on CUDA (test_fuzz_cpu: the CPU against torch); the result comes back
        # copied to the host
        err, from_gpu = check(gpu)
        if err is not None:  # torch raised, and so did ours on CUDA: the CPU backend must too
            with pytest.raises(err):
                run(call, call.x)
            return
        check_same_bits(call, run(call, call.x), from_gpu)

    run_and_report("cuda", op, prop)


def test_examples_by_op(monkeypatch):
    """The soak's top-up: TREDUCE_FUZZ_EXAMPLES_BY_OP sets the count of the ops it names."""
    monkeypatch.setenv("TREDUCE_FUZZ_EXAMPLES_BY_OP", "amin=7, prod=3")
    assert examples_for("amin") == 7
    assert examples_for("prod") == 3
    assert examples_for("sum") == FUZZ_SETTINGS.max_examples
    monkeypatch.setenv("TREDUCE_FUZZ_EXAMPLES_BY_OP", "amni=7")
    with pytest.raises(ValueError, match="amni"):
        examples_for("amin")
