#!/usr/bin/env bash
# GPU machine: build for Hopper, run the whole test suite (GPU tests
# included), then compute-sanitizer memcheck, racecheck and initcheck on the
# GPU test executables (small shapes), memcheck and racecheck of the agreement
# test at 200 rows (the rows kernel's larger shapes), and print a pass/fail table
# per step.
#
# Logs: $OUT/gpu_tests.log (every step, long logs cut to their last lines)
# and $OUT/gpu_tests_summary.txt (the table); OUT defaults to bench/results.
#
# Environment:
#   FS_CUDA_ARCHS   CMAKE_CUDA_ARCHITECTURES (default "90a-real"; "80-real;90a-real" adds A100)
#   FS_BUILD_DIR    build directory (default build-tests-sm90a)
#   FS_BENCH        ON also builds the benchmark in the same tree (default OFF)
#   FS_JOBS         build parallelism (default 16)
#   FS_SANITIZE     0 skips the sanitizer steps (default 1)
#   FS_CTEST_REGEX  run only the tests whose names match (ctest -R; default: all)
#   FS_SAN_TESTS    GPU tests run under the sanitizers (default: every test_gpu_*
#                   except test_gpu_tp, all with FS_GPU_TEST_SMALL=1: smaller shapes)
#   FS_SAN_TOOLS    sanitizer tools (default "memcheck racecheck initcheck")
#   FS_SAN_LARGE    0 skips the agreement test's 200-row sanitizer steps (default 1)
#   FS_PREBUILT     1: FS_BUILD_DIR was built elsewhere and carried here
#                   (bench/tools/carry_pack.sh): no configure or build, and
#                   ctest runs the GPU tests only (-L gpu; the CPU tests' executables
#                   are not carried)
#   FS_DEPS_DIR     folder of .deb files (default .deps) unpacked into a private
#                   prefix when cmocka or GSL headers are missing on the machine
#                   (the GPU machine cannot download; fetch them beforehand with
#                   apt-get download libcmocka0 libcmocka-dev libgsl27 libgslcblas0 libgsl-dev)
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT="${OUT:-$ROOT/bench/results}"
mkdir -p "$OUT"
ARCHS="${FS_CUDA_ARCHS:-90a-real}"
BUILD="${FS_BUILD_DIR:-build-tests-sm90a}"
JOBS="${FS_JOBS:-16}"
SANITIZE="${FS_SANITIZE:-1}"
DEPS="${FS_DEPS_DIR:-.deps}"
LOGDIR="$(mktemp -d /tmp/fs_gpu_tests.XXXXXX)"
LOG="$OUT/gpu_tests.log"
SUMMARY="$OUT/gpu_tests_summary.txt"
: >"$LOG"

if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi

names=()
results=()
times=()

# run_step NAME CMD...: runs CMD with its output in $LOGDIR/NAME.log, appends
# the log (cut to its last 3000 lines) to $LOG, records PASS / FAIL / SKIP.
run_step() {
  local name=$1
  shift
  local t0 rc res
  t0=$(date +%s)
  echo ">>> $name: $*" | tee -a "$LOG"
  "$@" >"$LOGDIR/$name.log" 2>&1
  rc=$?
  case $rc in
    0) res=PASS ;;
    77) res=SKIP ;;
    *) res="FAIL (rc $rc)" ;;
  esac
  {
    local n
    n=$(wc -l <"$LOGDIR/$name.log")
    if [ "$n" -gt 3000 ]; then
      echo "[... $((n - 3000)) earlier lines cut ...]"
      tail -n 3000 "$LOGDIR/$name.log"
    else
      cat "$LOGDIR/$name.log"
    fi
    echo "<<< $name: $res ($(($(date +%s) - t0)) s)"
    echo
  } >>"$LOG"
  echo "<<< $name: $res ($(($(date +%s) - t0)) s)"
  names+=("$name")
  results+=("$res")
  times+=("$(($(date +%s) - t0))")
  return $rc
}

skip_step() {
  names+=("$1")
  results+=("SKIP ($2)")
  times+=(0)
  echo "<<< $1: SKIP ($2)" | tee -a "$LOG"
}

# ---- test dependencies (cmocka, GSL) ---------------------------------------
cmake_extra=()
if [ ! -f /usr/include/cmocka.h ] || [ ! -f /usr/include/gsl/gsl_cdf.h ]; then
  if compgen -G "$DEPS/*.deb" >/dev/null; then
    prefix=/tmp/fs_deps
    mkdir -p "$prefix"
    for f in "$DEPS"/*.deb; do dpkg -x "$f" "$prefix"; done
    libdir="$prefix/usr/lib/$(gcc -dumpmachine 2>/dev/null || echo x86_64-linux-gnu)"
    export LD_LIBRARY_PATH="$libdir:$prefix/usr/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    cmake_extra+=("-DCMAKE_PREFIX_PATH=$prefix/usr" "-DGSL_ROOT_DIR=$prefix/usr")
    echo "test dependencies unpacked from $DEPS into $prefix" | tee -a "$LOG"
  else
    echo "WARNING: cmocka or GSL headers are missing and $DEPS/ holds no .deb files;" \
      "the configure step will fail (see the header of this script)" | tee -a "$LOG"
  fi
fi

# ---- build --------------------------------------------------------------------
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >>"$LOG" 2>&1 || true
built=1
ctest_labels=""
if [ "${FS_PREBUILT:-0}" = 1 ]; then
  ctest_labels="-L gpu"
  if [ -f "$BUILD/CTestTestfile.cmake" ]; then
    skip_step build "FS_PREBUILT=1: $BUILD carried"
  else
    skip_step build "FS_PREBUILT=1 but $BUILD holds no carried build"
    built=0
  fi
else
  run_step configure cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release \
    "-DCMAKE_CUDA_ARCHITECTURES=$ARCHS" -DFLASHSPEC_TESTS=ON "-DFLASHSPEC_BENCH=${FS_BENCH:-OFF}" \
    ${cmake_extra[@]+"${cmake_extra[@]}"} || built=0
  if [ $built = 1 ]; then
    run_step build cmake --build "$BUILD" -j"$JOBS" || built=0
  else
    skip_step build "configure failed"
  fi
fi

# ---- the test suite ----------------------------------------------------------
if [ $built = 1 ]; then
  run_step ctest bash -c "cd '$BUILD' && ctest -V $ctest_labels ${FS_CTEST_REGEX:+-R '$FS_CTEST_REGEX'}"
  # per-test lines, so the table shows which tests passed, failed or skipped
  grep -E "^ *[0-9]+/[0-9]+ Test" "$LOGDIR/ctest.log" | sed 's/^/    /' | tee -a "$LOG"
  # GPU/CPU agreement figures, for the record
  grep -E "agreement over all cases|realistic V=|GPU fused sample, " "$LOGDIR/ctest.log" |
    sed 's/^[0-9]*: //' | tee "$OUT/gpu_agreement.txt"
  if grep -q "test_gpu_.*Skipped\|test_gpu_.*Not Run" "$LOGDIR/ctest.log"; then
    echo "NOTE: some GPU tests were skipped (is a GPU visible?)" | tee -a "$LOG"
  fi
else
  skip_step ctest "no build"
fi

# ---- sanitizers --------------------------------------------------------------
SAN=""
if command -v compute-sanitizer >/dev/null; then
  SAN=compute-sanitizer
elif [ -x /usr/local/cuda/bin/compute-sanitizer ]; then
  SAN=/usr/local/cuda/bin/compute-sanitizer
fi
if [ -n "${FS_SAN_TESTS:-}" ]; then
  read -r -a san_tests <<<"$FS_SAN_TESTS"
else
  san_tests=(test_gpu_bad_input test_gpu_graph test_gpu_single test_gpu_agree test_gpu_stat
    test_gpu_realistic test_gpu_filter test_gpu_tree)
fi
read -r -a san_tools <<<"${FS_SAN_TOOLS:-memcheck racecheck initcheck}"
for tool in "${san_tools[@]}"; do
  for t in "${san_tests[@]}"; do
    step="$tool:$t"
    if [ "$SANITIZE" = 0 ]; then
      skip_step "$step" "FS_SANITIZE=0"
    elif [ $built = 0 ]; then
      skip_step "$step" "no build"
    elif [ -z "$SAN" ]; then
      skip_step "$step" "compute-sanitizer not found"
    elif [ ! -x "$BUILD/tests/$t" ]; then
      skip_step "$step" "no executable"
    else
      extra=()
      [ "$tool" = racecheck ] && extra=(--racecheck-report all)
      run_step "$step" env FS_GPU_TEST_SMALL=1 "$SAN" --tool "$tool" --error-exitcode 1 \
        ${extra[@]+"${extra[@]}"} "$BUILD/tests/$t"
    fi
  done
done

# the small mode caps rows at 65: the rows kernel's larger shapes get a
# memcheck and racecheck of their own: by default at up to 460 rows (129-192
# rows: one 192-row CTA; 193-256: a 2-CTA cluster, W multicast, noise drawn
# by the producer; 300: three blocks unclustered; 450-460: four blocks in two
# clusters; racecheck ~90 s on an H100), then at up to 200 rows with 192-row
# CTAs for every row count (2-CTA clusters of them at 193-200 rows), then at
# up to 160 rows on the tile kernel (its epilogue warpgroup from 97 rows),
# and synccheck there (the epilogue warpgroup's barriers)
for run in "memcheck 128" "racecheck 128" "memcheck 192" "racecheck 192" \
  "memcheck tile" "racecheck tile" "synccheck tile"; do
  read -r tool rb <<<"$run"
  small_rows=460 suffix="" renv=()
  if [ "$rb" = 192 ]; then
    small_rows=200 suffix=",rb192"
    renv=(FLASHSPEC_HOPPER_ROW_BLOCK=192)
  elif [ "$rb" = tile ]; then
    small_rows=160 suffix=",tile"
    renv=(FLASHSPEC_HOPPER_ROWS_MIN=161)
  fi
  step="$tool:test_gpu_agree@${small_rows}rows$suffix"
  if [ "$SANITIZE" = 0 ] || [ "${FS_SAN_LARGE:-1}" = 0 ]; then
    skip_step "$step" "FS_SANITIZE=0 or FS_SAN_LARGE=0"
  elif [ $built = 0 ] || [ -z "$SAN" ] || [ ! -x "$BUILD/tests/test_gpu_agree" ]; then
    skip_step "$step" "no build or no compute-sanitizer"
  else
    extra=()
    [ "$tool" = racecheck ] && extra=(--racecheck-report all)
    run_step "$step" env FS_GPU_TEST_SMALL=1 FS_GPU_TEST_SMALL_ROWS=$small_rows ${renv[@]+"${renv[@]}"} "$SAN" --tool "$tool" \
      --error-exitcode 1 ${extra[@]+"${extra[@]}"} "$BUILD/tests/test_gpu_agree"
  fi
done

# ---- summary -----------------------------------------------------------------
status=0
for r in "${results[@]}"; do
  case "$r" in FAIL*) status=1 ;; esac
done
{
  echo
  echo "flashspec GPU tests ($(date -u +%Y-%m-%dT%H:%MZ), archs $ARCHS)"
  printf '%-34s %7s  %s\n' step seconds result
  printf '%-34s %7s  %s\n' ---------------------------------- ------- ------
  for i in "${!names[@]}"; do
    printf '%-34s %7s  %s\n' "${names[$i]}" "${times[$i]}" "${results[$i]}"
  done
  echo
  if [ $status = 0 ]; then
    echo "all steps passed (or skipped)"
  else
    echo "SOME STEPS FAILED: see $LOG"
  fi
} | tee "$SUMMARY" | tee -a "$LOG"
rm -rf "$LOGDIR"
exit $status
