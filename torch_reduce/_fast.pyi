# torch_reduce._fast (csrc/python/fast.cpp): the wrappers' direct entry to the dispatcher.
import torch

OPS: dict[str, int]

def call(
    code: int, input: object, dim: object, keepdim: object, dtype: torch.dtype | None
) -> torch.Tensor: ...
