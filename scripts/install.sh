#!/usr/bin/env bash
# Installs everything torch-reduce needs and builds it in place (editable install).
# Shared by scripts/demo.sh, scripts/test.sh and CI. Safe to run again: it skips what is there,
# and the build compiles only what changed.
#
# Where: the active virtual environment if there is one, else a project-local .venv (made with
# access to the system's packages, so that a torch already installed there is reused, not
# downloaded again). Never the machine's global Python.
#   torch==2.11.0 from the package index (the CUDA 13.0 build), numpy, ninja, pytest, hypothesis,
#   setuptools;
#   g++ and Python's headers from Debian when they are missing (as root);
#   the CUDA backend is built too when nvcc is found (CUDA_HOME, /usr/local/cuda or PATH).
#
# Prints the python to use on its last line. Set PYTHON to choose the interpreter.
# --env-only: the environment and the Python packages, without building (scripts/lint.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { echo "[install] $*" >&2; }
apt_install() {
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    log "apt-get install $*"
    apt-get update -qq >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >&2
  else
    log "missing system packages: $* (install them, e.g. with apt-get)"; exit 1
  fi
}

PY=${PYTHON:-python3}
command -v "$PY" >/dev/null || apt_install python3 python3-venv python3-dev
command -v g++ >/dev/null || apt_install g++

in_venv=$("$PY" -c 'import sys; print(int(sys.prefix != sys.base_prefix))')
if [ "$in_venv" != 1 ]; then
  if [ ! -x .venv/bin/python ]; then
    log "making the project's virtual environment: .venv"
    "$PY" -m venv --system-site-packages .venv 2>/dev/null \
      || { apt_install python3-venv; "$PY" -m venv --system-site-packages .venv; }
  fi
  PY=$PWD/.venv/bin/python
else
  # an active environment: its interpreter by absolute path, since callers (scripts/lint.sh)
  # find the environment's other programs beside it
  PY=$("$PY" -c 'import sys; print(sys.executable)')
fi
# The environment's scripts (ninja) first on PATH: the build looks for ninja there.
export PATH="$(dirname "$PY"):$PATH"
"$PY" -c 'import sysconfig,os,sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
  || apt_install python3-dev

"$PY" -m pip install -q --disable-pip-version-check "torch==2.11.0" numpy ninja pytest hypothesis "setuptools>=64" wheel >&2
if [ "${1:-}" = --env-only ]; then
  echo "$PY"
  exit 0
fi

if [ -z "${CUDA_HOME:-}" ] && ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export CUDA_HOME=/usr/local/cuda
fi
log "building the extension (CUDA backend: $( [ -n "${CUDA_HOME:-}" ] || command -v nvcc >/dev/null && echo yes || echo no))"
MAX_JOBS=${MAX_JOBS:-$(nproc)} "$PY" -m pip install -q --disable-pip-version-check \
  --no-build-isolation --no-deps -e . >&2
echo "$PY"
