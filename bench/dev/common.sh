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

# build_tests_bench: the test + benchmark tree build-sm90a (run_gpu_tests.sh's
# build, only test_api run), so a script can then run chosen tests and A/Bs.
build_tests_bench() {
  FS_BUILD_DIR=build-sm90a FS_BENCH=ON FS_SANITIZE=0 FS_CTEST_REGEX='^test_api$' \
    timeout 300 bash bench/run_gpu_tests.sh > $OUT/build_stdout.txt 2>&1
  echo "build rc=$?"
}

# run_tests REGEX [SECONDS]: those ctest tests of build-sm90a, no sanitizers;
# prints the agreement lines and the pass count.
run_tests() {
  FS_BUILD_DIR=build-sm90a FS_BENCH=ON FS_SANITIZE=0 FS_CTEST_REGEX="$1" \
    timeout "${2:-300}" bash bench/run_gpu_tests.sh > $OUT/tests_stdout.txt 2>&1
  echo "tests rc=$?"; grep -E "agreement over all|tests passed|FAILED" $OUT/gpu_tests.log | head -8
}

# summ FILE: one line of (op method rows ms) from a benchmark table.
summ() { grep -E '^(sample|argmax|verify) +(fs_|cublas_matmul)' "$1" | awk '{print $2,$5,$7,$9}' | paste -sd' '; }

# ab_rounds TAG "ARGS" NAME=BENCH[@ENV]... : two alternating rounds of each
# benchmark binary (under ENV, e.g. FLASHSPEC_HOPPER_ROW_BLOCK=192); tables
# in $OUT/TAG_NAME_ROUND.txt, a summary line each.
ab_rounds() {
  local tag=$1 args=$2; shift 2
  local round v name bin env
  for round in 1 2; do
    for v in "$@"; do
      name=${v%%=*}; bin=${v#*=}; env=
      case "$bin" in *@*) env=${bin#*@}; bin=${bin%%@*} ;; esac
      env $env timeout 120 $bin $args > $OUT/${tag}_${name}_$round.txt 2>&1
      echo "== $name round $round rc=$?: $(summ $OUT/${tag}_${name}_$round.txt)"
    done
  done
}
