#!/usr/bin/env bash
# compute-sanitizer's four tools (memcheck, racecheck, synccheck, initcheck) over
# scripts/sanitize_cover.py, which reaches every kernel family, planner route and op on small
# inputs. Needs a GPU and an installed torch_reduce. The four run side by side; each log goes to
# $OUT/sanitize_<tool>.log and its "ERROR SUMMARY" line is printed. Exit status: 0 when every
# tool reports 0 errors.
#   bash scripts/sanitize.sh            # OUT defaults to /tmp/treduce-sanitize
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/treduce-sanitize}
PY=${PYTHON:-python3}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
pids=()
for tool in memcheck racecheck synccheck initcheck; do
  flags=(--tool "$tool" --error-exitcode 1 --print-limit 50)
  # racecheck and synccheck watch only our kernels (namespace treduce); memcheck and initcheck
  # watch every kernel, since initcheck knows memory as initialised only where an instrumented
  # kernel or a copy wrote it (torch's kernels write our inputs).
  case "$tool" in racecheck|synccheck) flags+=(--kernel-name kns=treduce) ;; esac
  compute-sanitizer "${flags[@]}" "$PY" scripts/sanitize_cover.py > "$OUT/sanitize_$tool.log" 2>&1 &
  pids+=($!)
done
rc=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || rc=1
done
for tool in memcheck racecheck synccheck initcheck; do
  summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$OUT/sanitize_$tool.log" | tail -1)
  done_line=$(grep "sanitize_cover:" "$OUT/sanitize_$tool.log" | tail -1)
  echo "$tool: ${summary:-no summary (see $OUT/sanitize_$tool.log)} | ${done_line:-not finished}"
done
exit $rc
