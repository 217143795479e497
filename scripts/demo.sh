#!/usr/bin/env bash
# The main job: install, build, then check treduce against torch, run one training step with it as
# the loss aggregation, and print a small speed table (GPU when there is one, else CPU).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=$(bash scripts/install.sh | tail -n 1)
exec "$PY" examples/demo.py
