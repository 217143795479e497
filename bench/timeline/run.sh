#!/usr/bin/env bash
# Builds the timeline tool against a traced copy of csrc and, with a GPU, runs it
# (bench/NOTES.md step 64). Needs nvcc; no torch. Usage: bash bench/timeline/run.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-build/timeline}
python3 bench/timeline/make_traced.py csrc "$out/src"
nvcc -std=c++17 --expt-relaxed-constexpr -arch=sm_90 -O3 -I"$out/src" -o "$out/timeline" \
  bench/timeline/timeline.cu
if nvidia-smi > /dev/null 2>&1; then "$out/timeline"; else echo "built $out/timeline (no GPU here)"; fi
