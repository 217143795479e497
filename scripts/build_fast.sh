#!/usr/bin/env bash
# Builds only torch_reduce/_fast (csrc/python/fast.cpp) for the running Python, next to a _C built
# elsewhere (scripts/h200.sh PREBUILT=1: _C.abi3.so loads in any Python, _fast does not). The same
# flags as setup.py's; CXX (default: the system g++, which links libstdc++ shared) compiles it.
set -euo pipefail
cd "$(dirname "$0")/.."
CXX=${CXX:-/usr/bin/g++}
TORCH=$(python3 -c "import torch, os; print(os.path.dirname(torch.__file__))")
PYINC=$(python3 -c "import sysconfig; print(sysconfig.get_paths()['include'])")
SUFFIX=$(python3 -c "import sysconfig; print(sysconfig.get_config_var('EXT_SUFFIX'))")
OBJ=$(mktemp --suffix=.o)
"$CXX" -O3 -fPIC -std=c++17 -fno-fast-math -DNDEBUG -I"$TORCH/include" \
  -I"$TORCH/include/torch/csrc/api/include" -I"$PYINC" -DTORCH_API_INCLUDE_EXTENSION_H \
  -DTORCH_EXTENSION_NAME=_fast -c csrc/python/fast.cpp -o "$OBJ"
"$CXX" -shared "$OBJ" -L"$TORCH/lib" -lc10 -ltorch -ltorch_cpu -ltorch_python \
  -Wl,-rpath,"$TORCH/lib" -o "torch_reduce/_fast$SUFFIX"
rm -f "$OBJ"
echo "built torch_reduce/_fast$SUFFIX"
