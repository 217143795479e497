#!/usr/bin/env bash
# Lint, format and type checks, which CI runs before the tests: ruff (lint), ruff format --check,
# mypy on torch_reduce/, clang-format --dry-run on csrc/, the C++ API header and examples/cpp.
# Needs no build. --fix rewrites instead of checking (ruff --fix, ruff format, clang-format -i).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=$(bash scripts/install.sh --env-only | tail -n 1)
"$PY" -m pip install -q --disable-pip-version-check ruff==0.17.5 mypy==2.4.1 clang-format==23.1.3 >&2
BIN=$(dirname "$PY")
mapfile -t CXX < <(git ls-files 'csrc/*.h' 'csrc/*.cpp' 'csrc/*.cu' 'csrc/*.cuh' \
  'torch_reduce/include/*.h' 'examples/cpp/*.cpp')
if [ "${1:-}" = --fix ]; then
  "$PY" -m ruff check --fix .
  "$PY" -m ruff format .
  "$BIN/clang-format" -i "${CXX[@]}"
  exit 0
fi
"$PY" -m ruff check .
"$PY" -m ruff format --check .
"$PY" -m mypy
"$BIN/clang-format" --dry-run --Werror "${CXX[@]}"
echo "lint: ruff, ruff format, mypy and clang-format clean"
