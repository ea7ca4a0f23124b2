#!/usr/bin/env bash
# The main job.  On a machine with an NVIDIA GPU: build for it and run the
# benchmark of the fused ops against cuBLAS and the unfused pipelines
# (bench/tools/run_bench.sh; arguments go to flashspec_bench, e.g. --quick).
# Without a GPU: build the CPU backend and run the demonstration of every op
# (bench/cpu_demo.c) instead.
#   bench/run.sh             GPU benchmark, or the CPU demo
#   bench/run.sh --cpu       the CPU demo even where a GPU is present
set -euo pipefail
cd "$(dirname "$0")/.."

have_gpu() {
  command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q '^GPU'
}

if [ "${1:-}" != "--cpu" ] && have_gpu; then
  if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
    export PATH=/usr/local/cuda/bin:$PATH
  fi
  exec bench/tools/run_bench.sh "$@"
fi

[ "${1:-}" = "--cpu" ] || echo "no GPU found: running the CPU demonstration of every op"
BUILD_DIR="${BUILD_DIR:-build-demo}"
if [ ! -f "$BUILD_DIR/CMakeCache.txt" ]; then
  # the demo needs only the C library: no CUDA, no test dependencies
  cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=Release -DFLASHSPEC_CUDA=OFF \
    -DFLASHSPEC_TESTS=OFF -DFLASHSPEC_BENCH=ON >/dev/null
fi
cmake --build "$BUILD_DIR" --target flashspec_demo -j"$(nproc)" >/dev/null
exec "$BUILD_DIR/bench/flashspec_demo"
