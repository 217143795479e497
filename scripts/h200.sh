#!/usr/bin/env bash
# One call on the GPU machine: build, run the whole test suite, the demo and (BENCH=1) the
# accuracy table (bench/accuracy.py) and the bench; SOAK=1 the fuzz tests' soak profile
# (SOAK_EXAMPLES, default 20,000, per op and device over SOAK_PROCS seeded processes, for
# SOAK_SECONDS at most), SANITIZE=1 the kernel coverage list and compute-sanitizer's four tools
# (scripts/sanitize.sh), EXACT=1 the exact-sum prototype
# (bench/exact/proto.py: bits against the host's exact sum, speed against plain and canonical),
# TRANSPOSED=1 the transposed-block route's bench over TRANSPOSED_MIN_MB up to TRANSPOSED_MB MiB
# (bench/transposed_blocks.py; TRANSPOSED=quick: the perf log's eleven staging shapes),
# PROGRESSION=1 the seed's kernel progression (bench/progression/run.py), SWEEP=K/N the K-th
# of N shards of the workload sweep (bench/sweep.py; join them with its --merge), SWEEP_PROFILE=
# a merged sweep.json the kernels behind its worst shapes (--profile), AB_BASE=<folder of
# another build's torch_reduce package> the whole grid timed with both builds (bench/ab.py
# --grid), CPP=1 the C++ examples and their ctest (scripts/cpp_check.sh; that machine has no
# network, so where it lacks cmake, carry a cmake wheel and set PIP_NO_INDEX=1
# PIP_FIND_LINKS=<its folder>).
# Logs and results go to $OUT; a short summary is printed last.
#   PYTEST_ARGS="-k cuda"  BENCH=1  BENCH_ARGS="--quick"  bash scripts/h200.sh
#   TESTS=0 DEMO=0 SOAK=1 SANITIZE=1 bash scripts/h200.sh
# PREBUILT=1 uses the library built on the development machine (carried with the tree:
# torch_reduce/lib/libtorch_reduce.so and torch_reduce/_build_info.py; the same torch
# 2.11.0+cu130, and the library uses no Python) instead of building again (~100 s); only
# torch_reduce._fast, built for one Python, is compiled there (scripts/build_fast.sh, ~25 s).
set -uo pipefail
OUT=${OUT:-/tmp/treduce-out}
mkdir -p "$OUT"
# sm_90 whatever the machine's default (one GPU host sets TORCH_CUDA_ARCH_LIST=9.0a): the builds
# compared across calls and with the development machine's are then the same code.
export TORCH_CUDA_ARCH_LIST=${H200_ARCH_LIST:-9.0} MAX_JOBS=${MAX_JOBS:-16} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,utilization.gpu --format=csv \
  > "$OUT/gpu.txt" 2>&1
# That machine's default compiler (/opt/gcc wrapper, via CC/CXX) links libstdc++ statically into
# the extension; two libstdc++ copies in one process then crash in std::ostream (any TORCH_CHECK
# message that formats a number). Build and link with the system g++, which links it shared.
export CC=/usr/bin/gcc CXX=/usr/bin/g++ LDSHARED="/usr/bin/g++ -shared" LDCXXSHARED="/usr/bin/g++ -shared"
start=$(date +%s)
log=build/ninja/torch_reduce/.ninja_log  # ninja appends a line per step it runs
cp "$log" "$OUT/ninja_log_before.txt" 2>/dev/null || : > "$OUT/ninja_log_before.txt"
if [ "${PREBUILT:-0}" = 1 ]; then
  ls torch_reduce/lib/libtorch_reduce.so torch_reduce/_build_info.py > "$OUT/build.log" 2>&1 || { cat "$OUT/build.log"; exit 1; }
  bash scripts/build_fast.sh >> "$OUT/build.log" 2>&1 || { cat "$OUT/build.log"; exit 1; }
  export PYTHONPATH=$PWD
elif ! python3 -m pip install --no-build-isolation --no-deps -e . > "$OUT/build.log" 2>&1; then
  echo "pip install -e failed; building in place instead" | tee -a "$OUT/build.log"
  python3 setup.py build_ext --inplace >> "$OUT/build.log" 2>&1 || { tail -40 "$OUT/build.log"; exit 1; }
  export PYTHONPATH=$PWD
fi
echo "build: $(( $(date +%s) - start )) s; libstdc++ symbols defined in the library:" \
  "$(nm -C torch_reduce/lib/libtorch_reduce.so 2>/dev/null | grep -c ' T std::')"
# What this build compiled: the steps that ninja's log gained (none: nothing to recompile), the
# longest first.
if [ -f "$log" ] && [ "${PREBUILT:-0}" != 1 ]; then
  python3 scripts/ninja_times.py "$log" --before "$OUT/ninja_log_before.txt" --top 40 \
    > "$OUT/ninja_times.txt"
  head -12 "$OUT/ninja_times.txt"
fi
rm -f "$OUT/ninja_log_before.txt"
if [ "${TESTS:-1}" = 1 ]; then
  # The whole suite (tests and bench/tests), SUITE_WORKERS xdist workers where pytest-xdist is
  # there (12 by default; 0: one process). A test that runs past 150 s prints every thread's
  # stack (faulthandler), so a hang names itself; the slowest tests are listed at the end. The
  # AOTInductor test compiles C++ with $CXX, which the exports above set to the system g++.
  workers=()
  if python3 -c "import xdist" 2> /dev/null && [ "${SUITE_WORKERS:-12}" != 0 ]; then
    workers=(-n "${SUITE_WORKERS:-12}" --dist loadgroup)  # test_large's cases in one worker
  fi
  # test_large's CPU cases run only with LARGE_CPU=1: sized to the machine's memory, they run
  # there (128 GB) for more than 350 s in one worker, longer than the rest of the suite. (A -k in
  # PYTEST_ARGS replaces this one.)
  large=()
  [ "${LARGE_CPU:-0}" = 1 ] || large=(-k "not (test_large and cpu)")
  python3 -m pytest -q -rs -p no:cacheprovider "${workers[@]}" -o faulthandler_timeout=150 \
    --durations=15 "${large[@]}" tests bench/tests ${PYTEST_ARGS:-} > "$OUT/pytest.log" 2>&1
  grep -E "^(FAILED|ERROR)" "$OUT/pytest.log" | head -30
  grep -E "^[0-9.]+s (call|setup)" "$OUT/pytest.log" | head -5
  grep -E "passed|failed" "$OUT/pytest.log" | tail -1
fi
if [ "${CPP:-0}" = 1 ]; then
  bash scripts/cpp_check.sh python3 > "$OUT/cpp.log" 2>&1
  grep -E "^(ok|FAIL|no GPU)|tests passed|tests failed" "$OUT/cpp.log" | tail -60
fi
# Before the soak, which can fill the rest of a call (SOAK_STOP_AT).
if [ "${SANITIZE:-0}" = 1 ]; then
  # TOOLS, SHARD, RACECHECK_JOBS and RACECHECK_CASES pass through (scripts/sanitize.sh)
  python3 scripts/sanitize_cover.py --kernels > "$OUT/kernels.log" 2>&1; tail -12 "$OUT/kernels.log"
  OUT="$OUT" bash scripts/sanitize.sh
fi
if [ "${SOAK:-0}" = 1 ]; then
  # SOAK_PROCS processes side by side, each with its own hypothesis seed and its share of the
  # examples per op and device, so that every op's examples spread over all the cores
  # (pytest-xdist gives a test, one op on one device, to one worker). Process k starts at the
  # k-th op, so that a run cut by a time limit leaves no op behind. SOAK_DEVICES picks the tests
  # (cpu, cuda or both). Every test writes its count, outcome and seconds, even when it is cut
  # short; the counts are summed per device and op. Process k's seed is SOAK_SEED_BASE + k, so
  # that a second soak with another base adds fresh draws.
  # SOAK_EXAMPLES_BY_OP ("amin=11500 prod=9500"): those ops only, each with its own total (a
  # top-up of the ops an earlier soak of the same code left short).
  rm -f "$OUT/fuzz_counts.txt"
  procs=${SOAK_PROCS:-15}
  read -r -a ops <<< "$(python3 -c 'import sys; sys.path.insert(0, "tests")
from fuzz_cases import OPS; print(*OPS)')"
  by_op=()
  if [ -n "${SOAK_EXAMPLES_BY_OP:-}" ]; then
    ops=()
    for item in $SOAK_EXAMPLES_BY_OP; do
      ops+=("${item%=*}") by_op+=("${item%=*}=$(( (${item#*=} + procs - 1) / procs ))")
    done
  fi
  ids=()
  for dev in ${SOAK_DEVICES:-cpu cuda}; do
    for op in "${ops[@]}"; do
      case $dev in
        cpu) ids+=("tests/test_fuzz.py::test_fuzz_cpu[$op]") ;;
        cuda) ids+=("tests/test_fuzz.py::test_fuzz_cuda_against_torch_and_cpu[$op]") ;;
      esac
    done
  done
  # SOAK_SECONDS stops the processes with SIGINT after that long. A background job of a script
  # ignores SIGINT, so each pytest runs under a line of Python that restores the default handler.
  pytest_int=(python3 -c "import signal, sys, pytest
signal.signal(signal.SIGINT, signal.default_int_handler); sys.exit(pytest.main(sys.argv[1:]))")
  soak_pids=()
  for k in $(seq 1 "$procs"); do
    r=$(( (k - 1) % ${#ids[@]} )) seed=$(( ${SOAK_SEED_BASE:-0} + k ))
    TREDUCE_FUZZ=soak TREDUCE_FUZZ_EXAMPLES=$(( (${SOAK_EXAMPLES:-20000} + procs - 1) / procs )) \
      TREDUCE_FUZZ_EXAMPLES_BY_OP="${by_op[*]}" \
      TREDUCE_FUZZ_LOG="$OUT/fuzz_counts.txt" "${pytest_int[@]}" -q -p no:cacheprovider \
      --hypothesis-seed="$seed" "${ids[@]:r}" "${ids[@]:0:r}" > "$OUT/soak_$k.log" 2>&1 &
    soak_pids+=($!)
  done
  # SOAK_STOP_AT: the soak ends that many seconds after this script started (the rest of one
  # call's time limit, after the build and the suite), in place of SOAK_SECONDS.
  if [ -n "${SOAK_STOP_AT:-}" ]; then
    SOAK_SECONDS=$(( SOAK_STOP_AT - ($(date +%s) - start) ))
  fi
  if [ -n "${SOAK_SECONDS:-}" ]; then
    # (its output away from the script's: a sleep left behind would hold a caller's pipe open)
    (sleep "$SOAK_SECONDS"; kill -INT "${soak_pids[@]}") > /dev/null 2>&1 &
    stopper=$!
  fi
  for pid in "${soak_pids[@]}"; do wait "$pid"; done
  [ -n "${SOAK_SECONDS:-}" ] && { pkill -P "$stopper"; kill "$stopper"; } 2>/dev/null
  grep -hE "^(FAILED|ERROR)" "$OUT"/soak_*.log | head -20
  tail -qn1 "$OUT"/soak_*.log | sort | uniq -c
  awk '{split($3, o, "="); split($4, e, "="); split($7, c, "="); k = $2 " " o[2]
        n[k] += e[2]; s[k] += $6; cpu[k] += c[2]
        if ($5 != "passed") bad[k] = bad[k] " " $5}
       END {for (k in n) print "fuzz", k, "examples=" n[k], "process-s=" s[k], "cpu-s=" cpu[k] bad[k]}' \
    "$OUT/fuzz_counts.txt" 2>/dev/null | sort
fi
if [ "${EXACT:-0}" = 1 ]; then
  python3 bench/exact/proto.py --out "$OUT/exact" ${EXACT_ARGS:-} > "$OUT/exact.log" 2>&1
  grep -E "MISMATCH|Error|error" "$OUT/exact.log" | head -20; tail -32 "$OUT/exact.log"
fi
if [ "${TRANSPOSED:-0}" = 1 ]; then
  python3 bench/transposed_blocks.py --out "$OUT/transposed" --max-mb "${TRANSPOSED_MB:-8}" \
    --min-mb "${TRANSPOSED_MIN_MB:-0}" \
    > "$OUT/transposed.log" 2>&1
  tail -4 "$OUT/transposed.log"
elif [ "${TRANSPOSED:-0}" = quick ]; then
  python3 bench/transposed_blocks.py --out "$OUT/transposed" --quick > "$OUT/transposed.log" 2>&1
  tail -12 "$OUT/transposed.log"
fi
if [ "${PROGRESSION:-0}" = 1 ]; then
  python3 bench/progression/run.py --out "$OUT/progression" > "$OUT/progression.log" 2>&1
  tail -30 "$OUT/progression.log"
fi
if [ -n "${SWEEP:-}" ]; then
  python3 bench/sweep.py --shard "$SWEEP" --out "$OUT/sweep" > "$OUT/sweep.log" 2>&1
  grep -v "it/s]" "$OUT/sweep.log" | tail -30
fi
if [ -n "${SWEEP_PROFILE:-}" ]; then
  # the kernels per call behind each class's worst shapes of a merged sweep (SWEEP_WORST each);
  # SWEEP_PROFILE=last: of the shard that SWEEP just ran
  profile_of=$SWEEP_PROFILE
  [ "$profile_of" = last ] && profile_of="$OUT/sweep/sweep-${SWEEP%/*}of${SWEEP#*/}.json"
  python3 bench/sweep.py --profile "$profile_of" --worst "${SWEEP_WORST:-3}" \
    --out "$OUT/profile" > "$OUT/profile.log" 2>&1
  tail -5 "$OUT/profile.log"
fi
if [ -n "${AB_BASE:-}" ]; then
  # The whole grid, this tree's build against another's (AB_BASE: the folder that holds that
  # build's torch_reduce package), AB_RUNS times each, alternately, the other build first;
  # each run its own process (two builds cannot share one).
  for i in $(seq 1 "${AB_RUNS:-2}"); do
    PYTHONPATH="$AB_BASE" python3 bench/ab.py --grid --label base --out "$OUT/ab" \
      >> "$OUT/ab.log" 2>&1
    PYTHONPATH=$PWD python3 bench/ab.py --grid --label head --out "$OUT/ab" >> "$OUT/ab.log" 2>&1
  done
  python3 bench/ab.py --compare "$OUT/ab" | tee "$OUT/ab.md" | tail -50
fi
if [ "${DEMO:-1}" = 1 ]; then
  python3 examples/demo.py > "$OUT/demo.log" 2>&1; tail -12 "$OUT/demo.log"
fi
if [ "${BENCH:-0}" = 1 ]; then
  python3 bench/accuracy.py --out "$OUT" > "$OUT/accuracy.log" 2>&1; tail -16 "$OUT/accuracy.log"
  python3 bench/bench.py --out "$OUT" ${BENCH_ARGS:-} 2>&1 | grep -v "it/s]" | tail -80
fi
cat "$OUT/gpu.txt"
# PACK=1 (for the GPU machine's tool, which brings back at most 8 files): everything under $OUT
# also goes into $OUT/out.tgz, and beside it stay only the suite's log and the result tables
# and plots (*.md, *.json, *.png).
if [ "${PACK:-0}" = 1 ]; then
  tgz=$(mktemp --suffix=.tgz)
  (cd "$OUT" && tar czf "$tgz" . &&
    find . -type f ! -name pytest.log ! -name '*.md' ! -name '*.json' ! -name '*.png' -delete &&
    find . -mindepth 1 -type d -empty -delete && mv "$tgz" out.tgz)
  find "$OUT" -type f | sed "s|^$OUT/||" | sort | tr '\n' ' '; echo
fi
