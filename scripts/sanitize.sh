#!/usr/bin/env bash
# compute-sanitizer's four tools (memcheck, racecheck, synccheck, initcheck) over
# scripts/sanitize_cover.py, which reaches every kernel family, planner route and op on small
# inputs. Needs a GPU and an installed torch_reduce. The tools run side by side; each log goes to
# $OUT/sanitize_<tool>.log, and each tool's "ERROR SUMMARY" line and call count are printed.
# Exit status: 0 when every tool reports 0 errors and finishes its cases.
#
# racecheck runs each case of the coverage script in a process of its own, RACECHECK_JOBS
# (default 4) at a time, its logs in $OUT/racecheck/: a racecheck process's host memory grows
# with its calls, and a quarter of the cases in one process reached 78 GB on a 128 GB host, where
# the kernel's OOM killer ended it without a Python traceback ("Target application returned an
# error"). One case takes it 10-200 s on an H100; the other three tools finish all cases in under
# two minutes.
#   bash scripts/sanitize.sh                              # OUT defaults to /tmp/treduce-sanitize
#   TOOLS=racecheck RACECHECK_JOBS=8 bash scripts/sanitize.sh
#   SHARD=K/N: only the K-th of N interleaved parts of the cases (racecheck: of each case list)
#   TRACE=1 ...: each call is printed before it runs (where a tool's process dies)
#   RACECHECK_CASES="1 17 25" TOOLS=racecheck ...: only those cases of the coverage script (a
#   rerun over the cases that reach the kernels a change moved)
# racecheck watches all of our kernels (kns=treduce). Watching fewer (kns=CanonProdOp, or
# canon_small) made the tool itself fail, on an H100 and on the H200 and with the libraries of
# two commits: "Internal Sanitizer Error: The Sanitizer failed to handle a hardware exception",
# then cudaErrorIllegalAddress, in 9 of the 38 cases (those with few outputs; case 1 in its CUDA
# graph), where kns=treduce and memcheck ran clean.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/treduce-sanitize}
PY=${PYTHON:-python3}
read -r -a TOOLS <<< "${TOOLS:-memcheck racecheck synccheck initcheck}"
SHARD=${SHARD:-1/1}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
pids=()
# A caller's time limit (timeout) signals this script: stop the tools too (racecheck's are
# grandchildren, under xargs), so that none keeps the GPU's memory after the call.
kill_tree() {
  local child
  for child in $(pgrep -P "$1"); do kill_tree "$child"; done
  kill "$1" 2>/dev/null
}
trap 'for p in "${pids[@]}"; do kill_tree "$p"; done; exit 124' TERM INT

# One tool over the cases of the coverage script's part $2 (K/N), into log $3.
sanitize() {
  local flags=(--tool "$1" --error-exitcode 1 --print-limit 50)
  # racecheck and synccheck watch only our kernels (namespace treduce); memcheck and initcheck
  # watch every kernel, since initcheck knows memory as initialised only where an instrumented
  # kernel or a copy wrote it (torch's kernels write our inputs).
  case "$1" in
    racecheck | synccheck) flags+=(--kernel-name kns=treduce) ;;
  esac
  compute-sanitizer "${flags[@]}" "$PY" scripts/sanitize_cover.py --shard "$2" ${TRACE:+--trace} \
    > "$3" 2>&1
}

# racecheck: case c of the coverage script's N cases is part c/N; with SHARD=K/M, only the cases
# of part K/M. The per-case logs are joined into $OUT/sanitize_racecheck.log.
racecheck_cases() {
  local n k m
  n=$("$PY" scripts/sanitize_cover.py --count) || return 1
  k=${SHARD%/*} m=${SHARD#*/}
  rm -rf "$OUT/racecheck"  # an earlier run's logs would join this run's counts
  mkdir -p "$OUT/racecheck"
  export -f sanitize
  export PY OUT TRACE
  for c in ${RACECHECK_CASES:-$(seq 1 "$n")}; do
    (( (c - 1) % m == k - 1 )) && echo "$c/$n"
  done | xargs -P "${RACECHECK_JOBS:-4}" -I{} bash -c \
    'c={}; sanitize racecheck "$c" "$OUT/racecheck/case_${c%/*}.log" ||
     echo "racecheck case $c: exit status $?" >> "$OUT/racecheck/failed.txt"'
  local rc=0 calls
  [ -s "$OUT/racecheck/failed.txt" ] && rc=1
  calls=$(cat "$OUT"/racecheck/case_*.log | grep -o "sanitize_cover: [0-9]* calls" |
          awk '{s += $2} END {print s + 0}')
  { cat "$OUT/racecheck/failed.txt" 2>/dev/null
    grep -h "RACECHECK SUMMARY" "$OUT"/racecheck/case_*.log | sort | uniq -c
    echo "sanitize_cover: $calls calls done over $(ls "$OUT"/racecheck/case_*.log | wc -l) cases"
  } > "$OUT/sanitize_racecheck.log"
  return $rc
}

for tool in "${TOOLS[@]}"; do
  if [ "$tool" = racecheck ]; then
    racecheck_cases &
  else
    sanitize "$tool" "$SHARD" "$OUT/sanitize_$tool.log" &
  fi
  pids+=($!)
done
rc=0
for pid in "${pids[@]}"; do
  wait "$pid" || rc=1
done
for tool in "${TOOLS[@]}"; do
  log="$OUT/sanitize_$tool.log"
  summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$log" | tail -1)
  done_line=$(grep "sanitize_cover:" "$log" | tail -1)
  [ -n "$done_line" ] || rc=1
  echo "$tool (part $SHARD): ${summary:-no summary (see $log)} | ${done_line:-not finished}"
done
exit $rc
