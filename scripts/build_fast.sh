#!/usr/bin/env bash
# Builds only torch_reduce/_fast (csrc/python/fast.cpp) for the running Python, next to a library
# built elsewhere (scripts/h200.sh PREBUILT=1: libtorch_reduce.so loads in any Python, _fast does
# not), with
# setup.py's own flags (TREDUCE_ONLY_FAST=1). CC/CXX as the caller exports them (h200.sh: the
# system g++, which links libstdc++ shared).
set -euo pipefail
cd "$(dirname "$0")/.."
TREDUCE_ONLY_FAST=1 python3 setup.py build_ext --inplace
ls torch_reduce/_fast*.so
