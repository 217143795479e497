"""Hooks for the tests and the bench: force the canonical kernels' launch configuration.

The spec is parsed by the private op ``treduce::_force_launch`` (csrc/cuda/call.cuh lists the
keys: "y=Y,per=P,splits=S,...", or "plain" for the plain float-accumulator kernels). It holds for
every later call in the process until it is released with ``None`` or ``""``. Only builds with
the CUDA backend have the op; the production path reads one atomic flag per call.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch

import torch_reduce  # noqa: F401  (loads the extension, which registers the op)


def force_launch(spec: str | None) -> None:
    """Forces `spec` for every later CUDA call (None or "" restores the default plan)."""
    torch.ops.treduce._force_launch(spec or "")


@contextlib.contextmanager
def forced_launch(spec: str | None) -> Iterator[None]:
    """`spec` inside the block, the default plan after it."""
    force_launch(spec)
    try:
        yield
    finally:
        force_launch(None)
