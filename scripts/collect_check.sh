#!/usr/bin/env bash
# The suite's test ids must not depend on Python's hash seed: pytest-xdist (scripts/h200.sh runs
# the suite with workers) stops at once when its workers collect different ids or orders. Collects
# under two hash seeds and compares.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=$(bash scripts/install.sh | tail -n 1)
collect() {
  PYTHONHASHSEED=$1 "$PY" -m pytest --collect-only -q -p no:cacheprovider tests bench/tests \
    | grep -v " collected in "
}
if ! diff <(collect 1) <(collect 2) > /tmp/treduce_collect.diff; then
  echo "test ids or their order depend on the hash seed:"
  head -20 /tmp/treduce_collect.diff
  exit 1
fi
echo "test ids: the same under two hash seeds"
