"""Builds torch_reduce/lib/libtorch_reduce.so, the native library that Python and C++ programs both
load (the ops' schemas, CPU and CUDA kernels, autograd and Meta registrations, and the C++ API of
torch_reduce/include/torch_reduce/torch_reduce.h), and torch_reduce._fast, the Python wrappers'
entry to the dispatcher. The CPU backend always, the CUDA backend whenever nvcc and a CUDA build of
torch are present (never decided by torch.cuda.is_available(): builders often have no GPU).

Environment:
  TORCH_CUDA_ARCH_LIST   GPU targets (default "9.0+PTX": sm_90 code plus PTX for newer GPUs)
  TREDUCE_CPU_ONLY=1     skip the CUDA backend even when it could be built
  MAX_JOBS               parallel compile jobs for ninja
  TREDUCE_ONLY_FAST=1    build only torch_reduce._fast, next to a library built elsewhere
                         (scripts/build_fast.sh: the library loads in any Python, _fast does not)
  TREDUCE_LINEINFO=1     source lines in the kernels (Nsight Compute's source view)
  TREDUCE_SPLIT_COMPILE=N  N threads per CUDA translation unit (changes the machine code)
  TREDUCE_DEBUG=1        host debug info in the C++ objects, and the static symbol table
"""

import os
import re
import threading
from pathlib import Path

import torch
from setuptools import find_packages, setup
from torch.utils.cpp_extension import CUDA_HOME, BuildExtension, CppExtension, CUDAExtension

ROOT = Path(__file__).resolve().parent  # absolute: ninja compiles in the build folder
with_cuda = (
    torch.version.cuda is not None
    and CUDA_HOME is not None
    and os.environ.get("TREDUCE_CPU_ONLY", "0") != "1"
)
os.environ.setdefault("TORCH_CUDA_ARCH_LIST", "9.0+PTX")

sources = [
    "csrc/ops.cpp",
    "csrc/api.cpp",
    "csrc/plan.cpp",
    "csrc/autograd.cpp",
    "csrc/cpu/reduce_cpu.cpp",
    "csrc/cpu/family_sum.cpp",
    "csrc/cpu/family_prod.cpp",
    "csrc/cpu/family_extreme.cpp",
]
# A build from nothing has no ninja log to rank its steps by, so ninja starts them in the order
# the sources reach it: this list's, the longest first, so that the short ones fill the last
# slots and none of the long ones starts late (longest-first scheduling). Ranked by each unit's
# compile in a build from nothing on the 16-core H100 host (docs/perf-log.md 2026-12-07: 916 s of
# steps; in name order they took 77 s, ranked so a replay of the same steps gives 60). Sources
# not named go last. Any order links the same code.
LONGEST_FIRST = [
    "csrc/cuda/units/prod_bfloat16_tiles.cu",
    "csrc/cuda/units/prod_half_tiles.cu",
    "csrc/cuda/units/mean_bfloat16.cu",
    "csrc/cuda/units/mean_half.cu",
    "csrc/cuda/units/sum_bfloat16.cu",
    "csrc/cuda/units/extreme_float.cu",
    "csrc/cuda/units/sum_half.cu",
    "csrc/cuda/units/mean_float.cu",
    "csrc/cuda/units/extreme_int.cu",
    "csrc/cuda/units/sum_float.cu",
    "csrc/cuda/units/prod_int.cu",
    "csrc/cuda/units/sum_int.cu",
    "csrc/cuda/units/mean_float8.cu",
    "csrc/cuda/units/prod_float.cu",
    "csrc/cuda/units/sum_float8.cu",
    "csrc/cuda/units/bitwise.cu",
    "csrc/cuda/units/arg_int.cu",
    "csrc/cpu/family_extreme.cpp",
    "csrc/cuda/units/prod_double.cu",
    "csrc/cuda/units/prod_half_small.cu",
    "csrc/cuda/units/prod_bfloat16_small.cu",
    "csrc/cuda/units/arg_float.cu",
    "csrc/cuda/reduce_cuda.cu",
    "csrc/cuda/units/prod_bfloat16_lat.cu",
    "csrc/cuda/units/prod_half_lat.cu",
    "csrc/cpu/family_prod.cpp",
    "csrc/cpu/family_sum.cpp",
    "csrc/autograd.cpp",
    "csrc/plan.cpp",
    "csrc/cuda/units/prod_bfloat16.cu",
    "csrc/cuda/units/prod_half.cu",
    "csrc/api.cpp",
    "csrc/cpu/reduce_cpu.cpp",
    "csrc/ops.cpp",
]


def _build_rank(source: str) -> int:
    """A source's place in LONGEST_FIRST (the rest after it, in name order: sorted is stable)."""
    rel = os.path.relpath(os.path.abspath(source), ROOT)
    return LONGEST_FIRST.index(rel) if rel in LONGEST_FIRST else len(LONGEST_FIRST)


# The library: an "extension" only to reuse torch's compiler and ninja set-up; build_ext below
# names its file lib/libtorch_reduce.so. It has no Python module init and links no Python library
# (py_limited_api keeps torch's helper from adding libtorch_python).
LIB_EXT = "torch_reduce.lib.torch_reduce"
LIB_FILE = "libtorch_reduce.so"
include_dirs = [str(ROOT / "torch_reduce" / "include")]
# No fast-math anywhere: flushing denormals or reassociating would change results.
# -fopenmp: torch's CPU build uses the OpenMP backend of at::parallel_for, a header template whose
# `#pragma omp parallel` is silently ignored (the CPU kernels run on one thread) without it.
cxx_flags = ["-O3", "-std=c++17", "-fno-fast-math", "-fopenmp"]
# No host debug info unless asked (TREDUCE_DEBUG=1): Python's CFLAGS add -g, which made the C++
# objects' debug sections 22 of the library's 49 MB and slowed their compile; -g0 after it wins.
if os.environ.get("TREDUCE_DEBUG") != "1":
    cxx_flags.append("-g0")
# The soname that C++ programs record, and a run path to the torch and CUDA runtime libraries that
# C++ programs need when they load us before torch (a run path is not inherited from the program):
# those of the same site-packages, where pip puts both packages, then those of the torch built
# against, for a build in place (pip install -e) or a program outside site-packages.
_site = Path(torch.__file__).resolve().parent.parent
_rpath = ["$ORIGIN/../../torch/lib", "$ORIGIN/../../nvidia/cu13/lib", str(_site / "torch" / "lib")]
if (_site / "nvidia" / "cu13" / "lib").is_dir():
    _rpath.append(str(_site / "nvidia" / "cu13" / "lib"))
link_flags = ["-fopenmp", f"-Wl,-soname,{LIB_FILE}", "-Wl,-rpath," + ":".join(_rpath)]
# The static symbol table (every internal template instantiation's name, 1.7 of the library's 26 MB)
# is left out unless TREDUCE_DEBUG=1; the dynamic symbols that loading and linking use stay.
if os.environ.get("TREDUCE_DEBUG") != "1":
    link_flags.append("-Wl,--strip-all")
nvcc_flags = ["-O3", "-std=c++17", "--expt-relaxed-constexpr"]
# The kernels' fatbins compressed for size: nvcc's default left a kernel unit's small fatbin
# uncompressed (units/sum_float.cu at sm_90: 4.6 MB by default, 0.95 MB so); the machine code is
# the same (tools/sass_digest.py).
nvcc_flags.append("-compress-mode=size")
# Source lines for Nsight Compute's source view, on request only: -lineinfo embeds each kernel's
# PTX text and line tables, two thirds of the cubins' bytes (170 of 259 MB uncompressed at
# sm_90), and does not change the machine code (tools/sass_digest.py).
if os.environ.get("TREDUCE_LINEINFO") == "1":
    nvcc_flags.append("-lineinfo")
# cicc's and ptxas's passes in N threads per translation unit (TREDUCE_SPLIT_COMPILE=N, off by
# default): it changes the machine code, and the change depends on N (docs/perf-log.md), so
# a build that uses it is gated like any SASS change and names a fixed N.
if os.environ.get("TREDUCE_SPLIT_COMPILE"):
    nvcc_flags += ["--split-compile", str(int(os.environ["TREDUCE_SPLIT_COMPILE"]))]
if with_cuda:
    # The CUDA backend: its torch side, and the kernel units (csrc/cuda/call.cuh), which ninja
    # compiles side by side; sorted, so that the order does not depend on the file system.
    sources += ["csrc/cuda/reduce_cuda.cu"]
    sources += sorted(str(p.relative_to(ROOT)) for p in (ROOT / "csrc/cuda/units").glob("*.cu"))
    ext = CUDAExtension(
        LIB_EXT,
        sources,
        include_dirs=include_dirs,
        extra_compile_args={"cxx": cxx_flags, "nvcc": nvcc_flags},
        extra_link_args=link_flags,
        py_limited_api=True,
    )
else:
    ext = CppExtension(
        LIB_EXT,
        sources,
        include_dirs=include_dirs,
        extra_compile_args={"cxx": cxx_flags},
        extra_link_args=link_flags,
        py_limited_api=True,
    )

# torch_reduce._fast: the wrappers' direct entry to the dispatcher (csrc/python/fast.cpp). It needs
# torch's Python headers and libtorch_python, so it is built for the running Python, apart from
# the library.
fast_ext = CppExtension(
    "torch_reduce._fast", ["csrc/python/fast.cpp"], extra_compile_args={"cxx": cxx_flags}
)

only_fast = os.environ.get("TREDUCE_ONLY_FAST", "0") == "1"

# Recorded so that a failing import can name the torch the library was built against (the
# library's build: left as it is when only _fast is built).
if not only_fast:
    (ROOT / "torch_reduce" / "_build_info.py").write_text(
        "# Generated by setup.py; not tracked.\n"
        f"TORCH_VERSION = {torch.__version__!r}\n"
        f"CUDA_VERSION = {torch.version.cuda!r}\n"
        f"WITH_CUDA = {with_cuda!r}\n"
        f"CUDA_ARCH_LIST = {os.environ['TORCH_CUDA_ARCH_LIST'] if with_cuda else None!r}\n"
    )


class BuildExt(BuildExtension.with_options(use_ninja=True)):
    """Each extension in a build folder of its own, under build/ in the project. ninja keeps one
    dependency log per folder and drops the entries of outputs that the current manifest does not
    name, so with the library and _fast in one folder every build recompiled all of the library.
    The folder is the same for every build: an editable install (pip install -e) otherwise compiles
    in a fresh temporary folder each time, so rerunning the set-up recompiled everything (7 to 18
    minutes on 2 cores) where ninja now finds nothing to do."""

    def get_ext_filename(self, fullname):
        # setuptools asks with the full name (for the path under build/ and the in-place copy)
        # and with the last part only (for the file name itself).
        if fullname == LIB_EXT:
            return os.path.join(*LIB_EXT.split(".")[:-1], LIB_FILE)
        if fullname == LIB_EXT.rsplit(".", 1)[-1]:
            return LIB_FILE
        return super().get_ext_filename(fullname)

    def copy_extensions_to_source(self):
        # the in-place build (pip install -e) copies the library into a folder git does not track
        (ROOT / "torch_reduce" / "lib").mkdir(exist_ok=True)
        super().copy_extensions_to_source()

    # The library and _fast build side by side (setuptools' parallel build_ext: a thread per
    # extension): _fast's one compile, about 25 s, no longer waits for the library's link. Each
    # thread sees its own build folder through `build_temp`.
    _local = threading.local()

    @property
    def build_temp(self):
        return getattr(self._local, "build_temp", None) or self.__dict__.get("_build_temp")

    @build_temp.setter
    def build_temp(self, value):
        self.__dict__["_build_temp"] = value

    def build_extensions(self):
        if self.parallel is None:
            self.parallel = len(self.extensions)
        super().build_extensions()

    _order_lock = threading.Lock()

    def build_extension(self, ext):
        # distutils' build_extension sorts the sources by name before it compiles them, which
        # would undo LONGEST_FIRST (a build from nothing on the H100 host started the units in
        # name order): the compiler's compile, torch's ninja writer by now, gets them back in
        # that order.
        with self._order_lock:
            compile_sources = self.compiler.compile
            if not getattr(compile_sources, "longest_first", False):

                def compile_longest_first(sources, *args, **kwargs):
                    return compile_sources(sorted(sources, key=_build_rank), *args, **kwargs)

                compile_longest_first.longest_first = True
                self.compiler.compile = compile_longest_first
        self._local.build_temp = str(ROOT / "build" / "ninja" / ext.name.rsplit(".", 1)[-1])
        try:
            super().build_extension(ext)
        finally:
            self._local.build_temp = None


# The version's one place (pyproject.toml lists it as dynamic).
VERSION = re.search(
    r'__version__ = "([^"]+)"', (ROOT / "torch_reduce" / "_version.py").read_text()
).group(1)

setup(
    version=VERSION,
    license="BSD-3-Clause",
    packages=find_packages(include=["torch_reduce", "torch_reduce.*"]),
    # The C++ front end: the header and the CMake package (find_package(TorchReduce)) beside the
    # library, found through torch_reduce.cmake_prefix_path.
    package_data={
        "torch_reduce": [
            "py.typed",
            "*.pyi",
            "include/torch_reduce/*.h",
            "share/cmake/TorchReduce/*.cmake",
        ]
    },
    ext_modules=[fast_ext] if only_fast else [ext, fast_ext],
    cmdclass={"build_ext": BuildExt},
    # The library uses no Python; _fast is built for the running Python, so a wheel is tagged for
    # that Python. Dependencies and the rest: pyproject.toml.
)
