#!/usr/bin/env bash
# Checks that a change to the canonical planner (csrc/cuda/kernels/plan_canon*.cuh) makes the
# same decisions as a git revision (default HEAD) on many random geometries, without a GPU:
#   bash tools/plan_dump.sh [REV] [CASES]
# Builds tools/plan_dump.cu against both trees (host planner code; device code unoptimised) and
# diffs their outputs for several occupancy and cluster answers.
set -euo pipefail
cd "$(dirname "$0")/.."
REV=${1:-HEAD}
CASES=${2:-20000}
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/old"
git archive "$REV" csrc | tar -x -C "$WORK/old"
header() {  # the planner's header in a tree: plan_canon.cuh, or launch.cuh before the split
  if [ -f "$1/csrc/cuda/kernels/plan_canon.cuh" ]; then echo "$1/csrc/cuda/kernels/plan_canon.cuh"
  else echo "$1/csrc/cuda/kernels/launch.cuh"; fi
}
build() {  # build <tree> <out>
  "$NVCC" -std=c++17 -O1 -G -arch=compute_90 -code=compute_90 -cudart=shared -w --expt-relaxed-constexpr \
    -DTREDUCE_PLAN_HEADER="\"$(header "$1")\"" -DTREDUCE_OPS_HEADER="\"$1/csrc/reduce_ops.h\"" \
    tools/plan_dump.cu tools/plan_dump_stubs.cpp -o "$2"
}
build "$WORK/old" "$WORK/plan_old" &
build "$PWD" "$WORK/plan_new" &
wait %1 && wait %2
status=0
for occ in 1 2 3 4; do
  for cluster in 1 8 16; do
    "$WORK/plan_old" 7 "$CASES" "$occ" "$cluster" > "$WORK/old.txt"
    "$WORK/plan_new" 7 "$CASES" "$occ" "$cluster" > "$WORK/new.txt"
    if ! cmp -s "$WORK/old.txt" "$WORK/new.txt"; then
      echo "plan_dump: decisions differ (blocks per SM $occ, cluster $cluster):"
      diff "$WORK/old.txt" "$WORK/new.txt" | head -20
      status=1
    fi
  done
done
[ "$status" = 0 ] && echo "plan_dump: the same decisions as $REV on $CASES geometries x 12 runtime answers"
exit "$status"
