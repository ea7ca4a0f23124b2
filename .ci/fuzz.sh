#!/usr/bin/env bash
# Fuzz the public API on the CPU backend (libFuzzer + ASan + UBSan; the
# targets and their contract checks are in tests/fuzz/, docs/TESTING.md says
# what they check).  Works from a clean clone on Debian as root: installs
# clang (with its libFuzzer runtime) and cmake when missing.
#
#   1. builds the fuzz targets in $FUZZ_BUILD_DIR (clang, -DFLASHSPEC_FUZZ=ON,
#      CPU only);
#   2. runs each target for $FUZZ_SECONDS from a copy of its committed seed
#      corpus (tests/fuzz/corpus/<target>), $FUZZ_JOBS at a time; any finding
#      (crash, sanitizer report, contract violation, leak, timeout) fails the
#      script and leaves the input under $FUZZ_OUT;
#   3. shows that the fuzzers can fail: for each mutant of $FUZZ_MUTANTS (a
#      library with one validation check removed, tests/mutants/*.patch)
#      builds the target that guards it and runs it from an EMPTY corpus with
#      a fixed seed; the mutant must be caught within $FUZZ_MUTANT_SECONDS.
#
# Environment:
#   FUZZ_SECONDS         per target (default 60); e.g. 3600 for a long run
#   FUZZ_JOBS            targets run at once (default 2)
#   FUZZ_TARGETS         (default "fuzz_sample fuzz_argmax fuzz_verify fuzz_filters fuzz_tree")
#   FUZZ_MUTANTS         "default" (five mutants: three validation checks of the original ops, one each for the filters and tree verify), "all", "none", or names
#   FUZZ_MUTANT_SECONDS  time a mutant may survive (default 60)
#   FUZZ_BUILD_DIR       (default build-fuzz)
#   FUZZ_OUT             findings and logs (default $FUZZ_BUILD_DIR/findings)
#   FUZZ_KEEP_CORPUS=1   grow tests/fuzz/corpus/<target> in place instead of a copy
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SECONDS_EACH="${FUZZ_SECONDS:-60}"
JOBS="${FUZZ_JOBS:-2}"
TARGETS="${FUZZ_TARGETS-fuzz_sample fuzz_argmax fuzz_verify fuzz_filters fuzz_tree}"
MUTANTS="${FUZZ_MUTANTS:-default}"
MUTANT_SECONDS="${FUZZ_MUTANT_SECONDS:-60}"
BUILD="${FUZZ_BUILD_DIR:-build-fuzz}"
OUTDIR="${FUZZ_OUT:-$BUILD/findings}"

# ---- tools --------------------------------------------------------------------
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
apt_updated=0
apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  if [ $apt_updated = 0 ]; then
    $SUDO apt-get update -qq
    apt_updated=1
  fi
  $SUDO apt-get install -y -qq "$@"
}
missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v make >/dev/null || missing+=(make)
command -v clang >/dev/null || missing+=(clang)
command -v git >/dev/null || missing+=(git)
[ ${#missing[@]} -eq 0 ] || apt_install "${missing[@]}"

# libFuzzer's runtime ships in libclang-rt-N-dev on newer Debian releases
probe=$(mktemp -d)
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }' >"$probe/p.c"
if ! clang -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" 2>/dev/null; then
  major=$(clang -dumpversion | cut -d. -f1)
  apt_install "libclang-rt-$major-dev" || true
  clang -fsanitize=fuzzer,address,undefined "$probe/p.c" -o "$probe/p" ||
    { echo "fuzz.sh: clang cannot link libFuzzer (-fsanitize=fuzzer)"; exit 1; }
fi
rm -rf "$probe"

# ---- build --------------------------------------------------------------------
configure_and_build() { # src_dir build_dir targets...
  local src=$1 bld=$2
  shift 2
  mkdir -p "$bld"
  CC=clang cmake -S "$src" -B "$bld" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFLASHSPEC_CUDA=OFF \
    -DFLASHSPEC_TESTS=OFF -DFLASHSPEC_BENCH=OFF -DFLASHSPEC_FUZZ=ON >"$bld/configure.log" 2>&1 ||
    { cat "$bld/configure.log"; return 1; }
  cmake --build "$bld" -j"$(nproc)" --target "$@" >"$bld/build.log" 2>&1 ||
    { tail -50 "$bld/build.log"; return 1; }
}
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
if [ -n "$TARGETS" ]; then
  echo "fuzz.sh: building $TARGETS in $BUILD"
  # shellcheck disable=SC2086
  configure_and_build . "$BUILD" $TARGETS
fi

# libFuzzer options: findings fail the run; -timeout catches hangs; the
# inputs are structured, a few KiB hold any problem the decoder builds, and
# every length is tried from the start (-len_control=0)
FUZZ_OPTS=(-timeout=20 -rss_limit_mb=2048 -max_len=4096 -len_control=0 -use_value_profile=1
  -print_final_stats=1)
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:symbolize=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

# ---- fuzz each target -------------------------------------------------------
run_target() { # target
  local t=$1 corpus
  if [ "${FUZZ_KEEP_CORPUS:-0}" = 1 ]; then
    corpus="$ROOT/tests/fuzz/corpus/$t"
    mkdir -p "$corpus"
  else
    corpus="$OUTDIR/corpus-$t"
    rm -rf "$corpus"
    mkdir -p "$corpus"
    cp "$ROOT/tests/fuzz/corpus/$t/"* "$corpus/" 2>/dev/null || true
  fi
  ("$BUILD/tests/fuzz/$t" "${FUZZ_OPTS[@]}" -max_total_time="$SECONDS_EACH" \
    -artifact_prefix="$OUTDIR/$t-" "$corpus" >"$OUTDIR/$t.log" 2>&1; exit $?) 2>/dev/null
}

status=0
declare -A pids=()
report() { # target rc
  local t=$1 rc=$2 line
  line=$(grep -E "^Done [0-9]+ runs" "$OUTDIR/$t.log" | tail -1 || true)
  if [ "$rc" = 0 ]; then
    echo "  $t: PASS ($line; $(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$OUTDIR/$t.log" | tail -1 || true))"
  else
    echo "  $t: FINDING (rc $rc): the input is under $OUTDIR/$t-*; log $OUTDIR/$t.log"
    grep -E "CONTRACT VIOLATION|ERROR: |runtime error|SUMMARY" "$OUTDIR/$t.log" | head -5 | sed 's/^/    /'
    status=1
  fi
}
[ -z "$TARGETS" ] || echo "fuzz.sh: each target for ${SECONDS_EACH}s, $JOBS at a time"
for t in $TARGETS; do
  while [ "${#pids[@]}" -ge "$JOBS" ]; do
    wait -n || true
    for k in "${!pids[@]}"; do
      if ! kill -0 "${pids[$k]}" 2>/dev/null; then
        rc=0
        wait "${pids[$k]}" || rc=$?
        report "$k" "$rc"
        unset "pids[$k]"
      fi
    done
  done
  run_target "$t" &
  pids[$t]=$!
done
for k in "${!pids[@]}"; do
  rc=0
  wait "${pids[$k]}" || rc=$?
  report "$k" "$rc"
done

# ---- the fuzzers can fail ----------------------------------------------------
# mutant -> the target that must catch it
declare -A GUARD=(
  [draft_id_range]=fuzz_verify
  [offsets_monotone]=fuzz_verify
  [max_drafts_per_request]=fuzz_verify
  [num_draft_tokens_bound]=fuzz_verify
  [temperature_nan_negative]=fuzz_sample
  [workspace_size]=fuzz_sample
  [vocab_size_range]=fuzz_argmax
  [filter_top_k_negative]=fuzz_filters
  [tree_parent_self]=fuzz_tree
)
case "$MUTANTS" in
  none) mutant_list="" ;;
  default) mutant_list="draft_id_range offsets_monotone workspace_size filter_top_k_negative tree_parent_self" ;;
  all) mutant_list="${!GUARD[*]}" ;;
  *) mutant_list="$MUTANTS" ;;
esac
if [ -n "$mutant_list" ]; then
  echo "fuzz.sh: mutants (one validation check removed), each must be caught within ${MUTANT_SECONDS}s"
fi
for m in $mutant_list; do
  t=${GUARD[$m]:-}
  patch_file="$ROOT/tests/mutants/$m.patch"
  if [ -z "$t" ] || [ ! -f "$patch_file" ]; then
    echo "  $m: no such mutant"
    status=1
    continue
  fi
  work="$OUTDIR/mutant-$m"
  rm -rf "$work"
  mkdir -p "$work/src"
  cp -r CMakeLists.txt cmake include src draft verify kernels tests "$work/src/"
  # (GIT_CEILING_DIRECTORIES: inside a clone, git apply would take the
  # paths as relative to the clone's root and skip them)
  patched=$(sed -n 's#^+++ b/##p' "$patch_file" | head -1)
  if ! (cd "$work/src" && GIT_CEILING_DIRECTORIES="$work" git apply "$patch_file") ||
    cmp -s "$ROOT/$patched" "$work/src/$patched"; then
    echo "  $m: the patch no longer applies: update tests/mutants/$m.patch"
    status=1
    continue
  fi
  if ! configure_and_build "$work/src" "$work/build" "$t"; then
    echo "  $m: build failed"
    status=1
    continue
  fi
  mkdir -p "$work/corpus"
  t0=$(date +%s%N)
  rc=0
  # (in a subshell whose stderr is dropped: bash reports the abort itself)
  ("$work/build/tests/fuzz/$t" "${FUZZ_OPTS[@]}" -seed=1 -max_total_time="$MUTANT_SECONDS" \
    -artifact_prefix="$work/" "$work/corpus" >"$work/fuzz.log" 2>&1; exit $?) 2>/dev/null || rc=$?
  ms=$((($(date +%s%N) - t0) / 1000000))
  took=$(printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100)))
  if [ "$rc" = 0 ]; then
    echo "  $m: NOT CAUGHT by $t in ${MUTANT_SECONDS}s (log $work/fuzz.log)"
    status=1
  else
    why=$(grep -m1 -E "CONTRACT VIOLATION|ERROR: AddressSanitizer|runtime error|ERROR: libFuzzer" "$work/fuzz.log" |
      sed 's/^.*CONTRACT VIOLATION: //' | cut -c1-150)
    echo "  $m: caught by $t after ${took}s: $why"
    rm -rf "$work/src" "$work/build"
  fi
done

if [ $status = 0 ]; then
  echo "fuzz.sh: no finding; every mutant caught"
else
  echo "fuzz.sh: FAILED (see above)"
fi
exit $status
