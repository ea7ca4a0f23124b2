#!/usr/bin/env bash
# The Python package on a GPU machine (no network; torch, scipy, pytest,
# scikit-build-core, cmake preinstalled): build and install the CUDA wheel,
# run every test (the GPU ones included), the example on CUDA, and the Python
# benchmark next to the C benchmark (sample at 1/64/320 rows, verify at
# 1/16/64 requests x 4 drafts = 5/80/320 target rows).  Logs and CSVs go to
# $OUT (or bench/results/python-<date>/).
#   ARCH=90a-real  CUDA architectures of both builds (the wheel's default is 80-real;90a-real)
#   SKIP_C_BENCH=1 skip the C build and benchmark
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-bench/results/python-$(date +%Y-%m-%d)}
mkdir -p "$OUT"
ARCH=${ARCH:-90a-real}
PY=${PYTHON:-python3}
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv
"$PY" -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'

t0=$(date +%s)
if [ -z "${SKIP_C_BENCH:-}" ]; then
  (cmake -S . -B build-pybench -DCMAKE_BUILD_TYPE=Release -DFLASHSPEC_TESTS=OFF \
     -DCMAKE_CUDA_ARCHITECTURES="$ARCH" >/dev/null &&
   cmake --build build-pybench -j8 --target flashspec_bench) > "$OUT/c_build.log" 2>&1 &
  cbuild=$!
fi
CMAKE_BUILD_PARALLEL_LEVEL=8 "$PY" -m pip install --no-build-isolation --no-deps --force-reinstall \
  ./python -C cmake.define.CMAKE_CUDA_ARCHITECTURES="$ARCH" > "$OUT/pip_install.log" 2>&1 ||
  { tail -40 "$OUT/pip_install.log"; exit 1; }
echo "wheel built and installed in $(( $(date +%s) - t0 )) s"
"$PY" -c 'import flashspec; print("CUDA backend", flashspec.built_with_cuda(), "GPU", flashspec.cuda_available())'

timeout 600 "$PY" -m pytest -q python/tests 2>&1 | tee "$OUT/pytest.log" | tail -25
echo "pytest rc=${PIPESTATUS[0]}"

timeout 120 "$PY" examples/ngram_spec_decode.py --device cuda 2>&1 | tee "$OUT/example_cuda.txt"
timeout 120 "$PY" examples/ngram_spec_decode.py --device cuda --temperature 0.7 --new-tokens 300 \
  2>&1 | tee -a "$OUT/example_cuda.txt"

C_CSV=""
if [ -n "${cbuild:-}" ]; then
  if wait "$cbuild"; then
    bin=$(find build-pybench -name flashspec_bench -type f -perm -u+x | head -1)
    timeout 300 "$bin" --shapes 151936x4096 --rows 1,64,320 --requests 1,16,64 \
      --ops sample,verify --csv "$OUT/c_bench.csv" > "$OUT/c_bench.txt" 2>&1 &&
      C_CSV="--c-csv $OUT/c_bench.csv"
    grep -E "fs_sample|fs_verify" "$OUT/c_bench.txt"
  else
    tail -20 "$OUT/c_build.log"
  fi
fi
timeout 300 "$PY" python/bench/bench_ops.py $C_CSV --csv "$OUT/py_bench.csv" 2>&1 |
  tee "$OUT/py_bench.txt"
echo "done in $(( $(date +%s) - t0 )) s"
