#!/usr/bin/env bash
# Injected bugs (docs/TESTING.md, "Deliberate bugs"): for each patch here,
# build a copy of the library with that one bug, run the CPU test suite
# against it and, when clang is there, each fuzz target from an empty corpus
# with a fixed seed; print which tests and fuzzers catch it.  A bug that
# nothing catches is a hole in the suite.
#
#   tests/mutants/run.sh [name ...]     (default: every *.patch)
#
# Environment: MUTANT_DIR (default build-mutants), MUTANT_FUZZ_SECONDS
# (default 30: each fuzzer's limit), MUTANT_FUZZ=0 skips the fuzzers,
# MUTANT_TESTS=0 skips the test suite.
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
DIR="${MUTANT_DIR:-build-mutants}"
SECS="${MUTANT_FUZZ_SECONDS:-30}"
mkdir -p "$DIR"
DIR=$(cd "$DIR" && pwd)
if [ $# -gt 0 ]; then
  names=("$@")
else
  names=()
  for p in tests/mutants/*.patch; do names+=("$(basename "$p" .patch)"); done
fi
fuzz=${MUTANT_FUZZ:-1}
command -v clang >/dev/null || fuzz=0

printf '%-26s | %-52s | %s\n' mutant "failing CPU tests" "fuzzers (time to catch)"
for m in "${names[@]}"; do
  work="$DIR/$m"
  rm -rf "$work"
  mkdir -p "$work/src"
  cp -r CMakeLists.txt cmake include src draft verify kernels tests "$work/src/"
  if ! (cd "$work/src" && GIT_CEILING_DIRECTORIES="$work" git apply "$ROOT/tests/mutants/$m.patch"); then
    printf '%-26s | %s\n' "$m" "PATCH DOES NOT APPLY"
    continue
  fi
  failing="-"
  if [ "${MUTANT_TESTS:-1}" != 0 ]; then
    if cmake -S "$work/src" -B "$work/cpu" -DFLASHSPEC_CUDA=OFF -DFLASHSPEC_BENCH=OFF \
      -DCMAKE_BUILD_TYPE=Release >"$work/cpu.log" 2>&1 &&
      cmake --build "$work/cpu" -j"$(nproc)" >>"$work/cpu.log" 2>&1; then
      (cd "$work/cpu" && ctest -L cpu -j"$(nproc)" >"$work/ctest.log" 2>&1)
      failing=$(grep -oE "[0-9]+ - test_[a-z_]+ \([A-Za-z]+\)" "$work/ctest.log" |
        sed -E 's/^[0-9]+ - //; s/ \(Failed\)//; s/ \(Subprocess aborted\)/(abort)/; s/ \(SEGFAULT\)/(segv)/' |
        tr '\n' ' ')
      [ -n "$failing" ] || failing="NONE"
    else
      failing="BUILD FAILED"
    fi
  fi
  caught="-"
  if [ "$fuzz" = 1 ]; then
    caught=""
    if CC=clang cmake -S "$work/src" -B "$work/fuzz" -DFLASHSPEC_CUDA=OFF -DFLASHSPEC_TESTS=OFF \
      -DFLASHSPEC_BENCH=OFF -DFLASHSPEC_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$work/fuzz.log" 2>&1 &&
      cmake --build "$work/fuzz" -j"$(nproc)" >>"$work/fuzz.log" 2>&1; then
      for t in fuzz_sample fuzz_argmax fuzz_verify; do
        mkdir -p "$work/corpus-$t"
        t0=$(date +%s%N)
        rc=0
        ("$work/fuzz/tests/fuzz/$t" -seed=1 -max_total_time="$SECS" -len_control=0 -max_len=4096 \
          -use_value_profile=1 -timeout=20 -artifact_prefix="$work/$t-" "$work/corpus-$t" \
          >"$work/$t.log" 2>&1; exit $?) 2>/dev/null || rc=$?
        ms=$((($(date +%s%N) - t0) / 1000000))
        [ "$rc" = 0 ] || caught="$caught ${t#fuzz_}($((ms / 1000)).$((ms % 1000 / 100))s)"
      done
      [ -n "$caught" ] || caught="NONE in ${SECS}s"
    else
      caught="BUILD FAILED"
    fi
  fi
  printf '%-26s | %-52s | %s\n' "$m" "$failing" "$caught"
  rm -rf "$work/src" "$work/cpu" "$work/fuzz"
done
