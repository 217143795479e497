#!/usr/bin/env bash
# compute-sanitizer's four tools (memcheck, racecheck, synccheck, initcheck) over
# scripts/sanitize_cover.py, which reaches every kernel family, planner route and op on small
# inputs. Needs a GPU and an installed torch_reduce. The four run side by side; each log goes to
# $OUT/sanitize_<tool>.log, and each tool's "ERROR SUMMARY" line and call count are printed.
# Exit status: 0 when every tool reports 0 errors and finishes its cases.
#
# racecheck is the slow one: on an H200 a quarter of the cases took it 155 s, where the other
# three tools finish all of them in under 3 minutes. To fit a time limit, run the cases in
# parts, one part per invocation: SHARD=K/N passes --shard K/N to the coverage script (the K-th
# of N interleaved parts of its cases), and TOOLS picks the tools. Run racecheck's parts one
# after another: part 1 alone did not finish in 100 s on an H100.
#   bash scripts/sanitize.sh                            # OUT defaults to /tmp/treduce-sanitize
#   TOOLS=racecheck SHARD=1/4 bash scripts/sanitize.sh  # then 2/4, 3/4, 4/4
#   TRACE=1 ...: each call is printed before it runs (where a tool's process dies)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/treduce-sanitize}
PY=${PYTHON:-python3}
read -r -a TOOLS <<< "${TOOLS:-memcheck racecheck synccheck initcheck}"
SHARD=${SHARD:-1/1}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
pids=()
# A caller's time limit (timeout) signals this script: stop the tools too, so that none keeps the
# GPU's memory after the call.
trap 'kill "${pids[@]}" 2>/dev/null; exit 124' TERM INT
for tool in "${TOOLS[@]}"; do
  flags=(--tool "$tool" --error-exitcode 1 --print-limit 50)
  # racecheck and synccheck watch only our kernels (namespace treduce); memcheck and initcheck
  # watch every kernel, since initcheck knows memory as initialised only where an instrumented
  # kernel or a copy wrote it (torch's kernels write our inputs).
  case "$tool" in racecheck|synccheck) flags+=(--kernel-name kns=treduce) ;; esac
  compute-sanitizer "${flags[@]}" "$PY" scripts/sanitize_cover.py --shard "$SHARD" ${TRACE:+--trace} \
    > "$OUT/sanitize_$tool.log" 2>&1 &
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
