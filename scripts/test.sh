#!/usr/bin/env bash
# The test suite: install, build, then pytest (tests/, and bench/tests: the bench's reports).
# CUDA tests skip cleanly without a GPU.
# Extra arguments go to pytest (e.g. bash scripts/test.sh -k amax).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=$(bash scripts/install.sh | tail -n 1)
exec "$PY" -m pytest -q -rs tests bench/tests "$@"
