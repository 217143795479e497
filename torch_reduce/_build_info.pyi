# torch_reduce/_build_info.py is written by setup.py at build time (not tracked): the torch and
# CUDA the extension was built against.
TORCH_VERSION: str
CUDA_VERSION: str | None
WITH_CUDA: bool
CUDA_ARCH_LIST: str | None
