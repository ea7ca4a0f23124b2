# Sourced by the session-3 device scripts in this folder: repository root,
# CUDA on PATH, output folder ($OUT on the device machine).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export PATH=/usr/local/cuda/bin:$PATH
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"

# build_bench [DIR [SRC]]: configure DIR for sm_90a once (the benchmark, no
# tests) and bring flashspec_bench up to date; a tree configured with the
# tests (bench/run_gpu_tests.sh) is only built.
build_bench() {
  local dir=${1:-build-sm90a} src=${2:-.}
  [ -f "$dir/CMakeCache.txt" ] || cmake -S "$src" -B "$dir" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90a-real -DFLASHSPEC_TESTS=OFF -DFLASHSPEC_BENCH=ON >/dev/null
  cmake --build "$dir" -j16 --target flashspec_bench >/dev/null 2>&1 || echo "BUILD FAILED ($dir)"
}
