#!/usr/bin/env bash
# CI's packaging check: the sdist holds everything a build needs, the wheel built from it installs
# into a fresh virtual environment that has only torch==2.11.0, and imports and runs there from
# another directory, with no compiler on the path. The wheel is built CPU-only (TREDUCE_CPU_ONLY=1)
# to keep CI inside its time: the CUDA sources are compiled by the test command's build already.
#   bash scripts/package_check.sh [python]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-$(bash scripts/install.sh --env-only | tail -n 1)}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
log() { echo "[package] $*" >&2; }

log "sdist"
"$PY" setup.py -q sdist --dist-dir "$WORK/dist" >/dev/null 2>&1
SDIST=$(find "$WORK/dist" -name '*.tar.gz' | head -n 1)
tar -tzf "$SDIST" > "$WORK/sdist.txt"
for f in csrc/dispatch.h csrc/cuda/kernels/canon_kernel.cuh csrc/cuda/call.cuh csrc/cuda/units/sum_float.cu \
  torch_reduce/include/torch_reduce/torch_reduce.h \
  torch_reduce/share/cmake/TorchReduce/TorchReduceConfig.cmake; do
  grep -q "/$f\$" "$WORK/sdist.txt" || { echo "the sdist lacks $f"; exit 1; }
done

log "wheel from the sdist (CPU-only)"
TREDUCE_CPU_ONLY=1 MAX_JOBS=${MAX_JOBS:-$(nproc)} "$PY" -m pip wheel -q --disable-pip-version-check \
  --no-build-isolation --no-deps -w "$WORK/wheels" "$SDIST" >&2
WHEEL=$(find "$WORK/wheels" -name '*.whl' | head -n 1)
log "$(basename "$WHEEL")"

log "a fresh virtual environment with only torch==2.11.0"
"$PY" -m venv "$WORK/venv"
"$WORK/venv/bin/python" -m pip install -q --disable-pip-version-check "torch==2.11.0" >&2
"$WORK/venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps "$WHEEL" >&2

log "smoke test from another directory, no compiler on the path"
cd "$WORK"
PATH="$WORK/venv/bin" "$WORK/venv/bin/python" - <<'PYEOF'
import importlib.metadata
import os

import torch
import torch_reduce

assert torch_reduce.__version__ == importlib.metadata.version("torch-reduce")
x = torch.randn(1000, 33, dtype=torch.float64)
assert torch.allclose(torch_reduce.sum(x, 1), x.sum(1))
assert torch.equal(torch_reduce.argmax(x, 0), x.argmax(0))
# the C++ front end beside it: the library, the header and the CMake package
for path in (
    torch_reduce.library_path,
    os.path.join(torch_reduce.include_path, "torch_reduce", "torch_reduce.h"),
    os.path.join(torch_reduce.cmake_prefix_path, "TorchReduce", "TorchReduceConfig.cmake"),
    os.path.join(torch_reduce.cmake_prefix_path, "TorchReduce", "TorchReduceConfigVersion.cmake"),
):
    assert os.path.isfile(path), path
print("torch_reduce", torch_reduce.__version__, "from", torch_reduce.__file__)
PYEOF
log "ok"
