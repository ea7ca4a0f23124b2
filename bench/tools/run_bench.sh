#!/usr/bin/env bash
# The benchmark on the GPU machine: build for sm_90a if needed, print the GPU
# and its clocks, run the sweep (table on stdout; CSV, JSON and the table
# under $OUT, default bench/results), then plot if gnuplot is there (if not,
# run bench/tools/plot.sh on the CSV elsewhere).
#   bench/tools/run_bench.sh              full default sweep (about 12k timed calls, < 1 min of GPU)
#   bench/tools/run_bench.sh --quick      smoke run
#   bench/tools/run_bench.sh --shapes 151936x4096 --rows 1,64,256   (any flashspec_bench flags)
# BUILD_DIR (default build-bench-sm90a) and OUT can be set in the environment.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/bench/results}"
BUILD_DIR="${BUILD_DIR:-build-bench-sm90a}"
mkdir -p "$OUT"
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi

if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
    -DFLASHSPEC_TESTS=OFF -DFLASHSPEC_BENCH=ON
fi
cmake --build "$BUILD_DIR" --target flashspec_bench -j16   # a no-op when up to date
bin="$BUILD_DIR/bench/flashspec_bench"

{
  nvidia-smi --query-gpu=name,driver_version,pstate,temperature.gpu,power.limit,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,clocks.applications.graphics,clocks.applications.memory --format=csv
  nvidia-smi -q -d CLOCK,PERFORMANCE | grep -E "Product Name|Clocks|Graphics|SM  |Memory  |Clocks Event Reasons|Active|Throttle" | grep -v "Not Active" || true
} 2>&1 | tee "$OUT/bench_gpu.txt" || true

"$bin" --csv "$OUT/bench.csv" --json "$OUT/bench.json" "$@" | tee "$OUT/bench.txt"

if command -v gnuplot >/dev/null; then
  bench/tools/plot.sh "$OUT/bench.csv" "$OUT"
else
  echo "gnuplot not found: make the plots elsewhere with bench/tools/plot.sh $OUT/bench.csv"
fi
