#!/usr/bin/env bash
# The C++ front end, as a LibTorch user builds it: examples/cpp with CMake against the pip torch's
# LibTorch and find_package(TorchReduce), then ctest: the C++ API demo, an AOTInductor package
# exported from Python, and that package loaded and checked from C++. CPU always; CUDA too when
# there is a GPU. Needs the library built (scripts/install.sh); CI runs it after the tests.
#   bash scripts/cpp_check.sh [python]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-$(bash scripts/install.sh | tail -n 1)}
log() { echo "[cpp] $*" >&2; }

# cmake (3.18 or newer) and ninja: the environment's, installed there from PyPI when missing
BIN=$(dirname "$PY")
export PATH="$BIN:$PATH"
if ! cmake --version >/dev/null 2>&1; then
  log "pip install cmake"
  "$PY" -m pip install -q --disable-pip-version-check cmake >&2
fi
if [ -z "${CUDA_HOME:-}" ] && ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export CUDA_HOME=/usr/local/cuda  # torch's CMake package looks for the CUDA toolkit
fi
[ -n "${CUDA_HOME:-}" ] && export PATH="$CUDA_HOME/bin:$PATH"

PREFIX="$("$PY" -c 'import torch; print(torch.utils.cmake_prefix_path)');$("$PY" -c 'import torch_reduce; print(torch_reduce.cmake_prefix_path)')"
BUILD=${CPP_BUILD_DIR:-build/examples-cpp}
log "configure $BUILD"
mkdir -p "$(dirname "$BUILD")"
cmake -S examples/cpp -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$PREFIX" -DPython3_EXECUTABLE="$PY" >"$BUILD.configure.log" 2>&1 \
  || { cat "$BUILD.configure.log"; exit 1; }
log "build"
cmake --build "$BUILD" >&2
log "ctest"
ctest --test-dir "$BUILD" --output-on-failure -V  # -V: every check's line in the log
