#!/usr/bin/env bash
# CI for the Python package (python/): from a clean clone, on a machine
# without a GPU.  Installs torch, scipy, pytest and scikit-build-core from
# PyPI into a virtual environment, builds and installs the CPU-only wheel
# (`pip install ./python` with FLASHSPEC_CUDA=OFF: compiling the CUDA kernels
# on 2 cores is slow, and the main CMake build compiles them already), runs
# pytest on python/tests (GPU tests skip themselves; "no tests ran" fails),
# then the example and the benchmark briefly on CPU.
#
# The environment lives in $FLASHSPEC_PY_VENV (default
# ~/.cache/flashspec-ci/venv) so that a later run on the same machine reuses
# the ~5.6 GB torch install; on a new machine it is created (about 2 minutes
# of downloads).  Set FLASHSPEC_PY_VENV to a fresh path to start clean.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)

PY=${PYTHON:-python3}
VENV=${FLASHSPEC_PY_VENV:-$HOME/.cache/flashspec-ci/venv}
if [ ! -x "$VENV/bin/python" ]; then
  echo "== creating $VENV"
  mkdir -p "$(dirname "$VENV")"
  "$PY" -m venv "$VENV"
fi
VPY="$VENV/bin/python"
export PIP_DISABLE_PIP_VERSION_CHECK=1

echo "== Python dependencies"
"$VPY" -m pip install -q --upgrade pip
# torch from PyPI is the CUDA build (its nvidia-* wheels come along); there is
# no smaller CPU-only torch on PyPI for x86-64 Linux.
"$VPY" -m pip install -q torch numpy scipy pytest "scikit-build-core>=0.10"
if ! command -v cmake >/dev/null; then
  "$VPY" -m pip install -q cmake ninja
  export PATH="$VENV/bin:$PATH"
fi
"$VPY" -c 'import torch, scipy; print("torch", torch.__version__, "scipy", scipy.__version__)'
echo "   ($(( $(date +%s) - start )) s so far)"

echo "== pip install ./python (CPU-only wheel)"
FLASHSPEC_CUDA=OFF "$VPY" -m pip install -q --no-build-isolation --force-reinstall --no-deps ./python
"$VPY" -c 'import flashspec; print("flashspec", flashspec.__version__, flashspec.library_path(),
           "CUDA backend:", flashspec.built_with_cuda())'
echo "   ($(( $(date +%s) - start )) s so far)"

echo "== pytest python/tests"
set +e
"$VENV/bin/pytest" -q python/tests
rc=$?
set -e
if [ "$rc" -eq 5 ]; then
  echo "pytest collected no tests: failing" >&2
  exit 1
fi
[ "$rc" -eq 0 ] || exit "$rc"

echo "== examples/ngram_spec_decode.py (CPU, short)"
"$VPY" examples/ngram_spec_decode.py --new-tokens 80

echo "== python/bench/bench_ops.py (CPU smoke run)"
"$VPY" python/bench/bench_ops.py --device cpu --reps 3 --warmup 1 --rows 1,8 --requests 1,2

echo "== python CI done in $(( $(date +%s) - start )) s"
