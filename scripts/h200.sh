#!/usr/bin/env bash
# One call on the GPU machine: build, run the whole test suite, the demo and (BENCH=1) the
# accuracy table (bench/accuracy.py) and the bench; SOAK=1 the fuzz tests' soak profile (20,000
# examples per op and device over SOAK_PROCS seeded processes), SANITIZE=1 the kernel coverage
# list and compute-sanitizer's four tools (scripts/sanitize.sh), EXACT=1 the exact-sum prototype
# (bench/exact/proto.py: bits against the host's exact sum, speed against plain and canonical),
# PROGRESSION=1 the seed's kernel progression (bench/progression/run.py), SWEEP=K/N the K-th
# of N shards of the workload sweep (bench/sweep.py; join them with its --merge), CPP=1 the C++
# examples and their ctest (scripts/cpp_check.sh; that machine has no network, so where it lacks
# cmake, carry a cmake wheel and set PIP_NO_INDEX=1 PIP_FIND_LINKS=<its folder>).
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
export TORCH_CUDA_ARCH_LIST=${TORCH_CUDA_ARCH_LIST:-9.0} MAX_JOBS=${MAX_JOBS:-16} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,utilization.gpu --format=csv \
  > "$OUT/gpu.txt" 2>&1
# That machine's default compiler (/opt/gcc wrapper, via CC/CXX) links libstdc++ statically into
# the extension; two libstdc++ copies in one process then crash in std::ostream (any TORCH_CHECK
# message that formats a number). Build and link with the system g++, which links it shared.
export CC=/usr/bin/gcc CXX=/usr/bin/g++ LDSHARED="/usr/bin/g++ -shared" LDCXXSHARED="/usr/bin/g++ -shared"
start=$(date +%s)
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
if [ "${TESTS:-1}" = 1 ]; then
  python3 -m pytest -q -rs -p no:cacheprovider tests ${PYTEST_ARGS:-} > "$OUT/pytest.log" 2>&1
  grep -E "^(FAILED|ERROR)" "$OUT/pytest.log" | head -30
  tail -3 "$OUT/pytest.log"
fi
if [ "${CPP:-0}" = 1 ]; then
  bash scripts/cpp_check.sh python3 > "$OUT/cpp.log" 2>&1
  grep -E "^(ok|FAIL|no GPU)|tests passed|tests failed" "$OUT/cpp.log" | tail -60
fi
if [ "${SOAK:-0}" = 1 ]; then
  # SOAK_PROCS processes side by side, each with its own hypothesis seed and its share of the
  # 20,000 examples per op and device, so that every op's examples spread over all the cores
  # (pytest-xdist gives a test, one op on one device, to one worker). The counts are summed.
  rm -f "$OUT/fuzz_counts.txt"
  procs=${SOAK_PROCS:-15}
  soak_pids=()
  for k in $(seq 1 "$procs"); do
    TREDUCE_FUZZ=soak TREDUCE_FUZZ_EXAMPLES=$(( (20000 + procs - 1) / procs )) \
      TREDUCE_FUZZ_LOG="$OUT/fuzz_counts.txt" python3 -m pytest -q -p no:cacheprovider \
      --hypothesis-seed="$k" tests/test_fuzz.py ${SOAK_ARGS:-} > "$OUT/soak_$k.log" 2>&1 &
    soak_pids+=($!)
  done
  for pid in "${soak_pids[@]}"; do wait "$pid"; done
  grep -hE "^(FAILED|ERROR)" "$OUT"/soak_*.log | head -20
  tail -qn1 "$OUT"/soak_*.log | sort | uniq -c
  awk '{split($3, o, "="); split($4, e, "="); n[$2 " " o[2]] += e[2]}
       END {for (k in n) print "fuzz", k, "examples=" n[k]}' "$OUT/fuzz_counts.txt" 2>/dev/null \
    | sort
fi
if [ "${SANITIZE:-0}" = 1 ]; then
  python3 scripts/sanitize_cover.py --kernels > "$OUT/kernels.log" 2>&1; tail -12 "$OUT/kernels.log"
  OUT="$OUT" bash scripts/sanitize.sh
fi
if [ "${EXACT:-0}" = 1 ]; then
  python3 bench/exact/proto.py --out "$OUT/exact" ${EXACT_ARGS:-} > "$OUT/exact.log" 2>&1
  grep -E "MISMATCH|Error|error" "$OUT/exact.log" | head -20; tail -32 "$OUT/exact.log"
fi
if [ "${PROGRESSION:-0}" = 1 ]; then
  python3 bench/progression/run.py --out "$OUT/progression" > "$OUT/progression.log" 2>&1
  tail -30 "$OUT/progression.log"
fi
if [ -n "${SWEEP:-}" ]; then
  python3 bench/sweep.py --shard "$SWEEP" --out "$OUT/sweep" > "$OUT/sweep.log" 2>&1
  grep -v "it/s]" "$OUT/sweep.log" | tail -30
fi
if [ "${DEMO:-1}" = 1 ]; then
  python3 examples/demo.py > "$OUT/demo.log" 2>&1; tail -12 "$OUT/demo.log"
fi
if [ "${BENCH:-0}" = 1 ]; then
  python3 bench/accuracy.py --out "$OUT" > "$OUT/accuracy.log" 2>&1; tail -16 "$OUT/accuracy.log"
  python3 bench/bench.py --out "$OUT" ${BENCH_ARGS:-} 2>&1 | grep -v "it/s]" | tail -80
fi
cat "$OUT/gpu.txt"
