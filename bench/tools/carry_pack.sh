#!/usr/bin/env bash
# Off the device: pack a build made here (and another build's benchmarks,
# for an A/B) for a device call, so that the GPU machine builds nothing --
# a device call then spends its time on tests and timings, not on CUDA
# builds (40-190 s each in the committed run_gpu_tests logs, twice for an
# A/B of two builds).  Every test and benchmark executable links the
# library statically (~9 MB each) and they differ little, so xz with a
# 64 MiB dictionary packs the GPU tests and one build's benchmarks into
# 4.5 MB, with a second build's 7.5-8 MB, well under the 64 MiB a call may
# carry.
#
#   bench/tools/carry_pack.sh BUILD [BASE_BUILD]
#
# BUILD: a build tree configured for the device's GPU (e.g.
# -DCMAKE_CUDA_ARCHITECTURES=90a-real, benchmarks on).  Packs its GPU test
# executables with the CTest files that name them, and bench/flashspec_bench,
# tree_bench and filter_bench of BUILD and of BASE_BUILD (and BUILD's
# bench/libfs_kernel_trace.so, if built), into carry-bin/all.txz
# with absolute paths (they unpack where they were built), and downloads
# cmocka's and GSL's packages (libraries and headers, as run_gpu_tests.sh
# lists them) into .deps/ when it holds none.  On the
# device, with carry ["carry-bin", ".deps"]:
#
#   bash bench/tools/carry_unpack.sh
#   FS_PREBUILT=1 FS_BUILD_DIR=BUILD bash bench/tools/run_gpu_tests.sh
#   bash bench/tools/ab_rounds.sh TAG "ARGS" base=BASE_BUILD/bench/flashspec_bench \
#     new=BUILD/bench/flashspec_bench
#
# A device call brings back at most 8 files from $OUT: write the runs'
# outputs elsewhere and end with one archive of them, e.g.
#   OUT_ALL=$OUT; OUT=/tmp/o ...; tar czf "$OUT_ALL/out.tgz" -C /tmp/o .
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
  exit 2
fi
list=$(mktemp)
trap 'rm -f "$list"' EXIT
build=$(cd "$1" && pwd)
if [ ! -f "$build/CTestTestfile.cmake" ] || ! compgen -G "$build/tests/test_gpu_*" >/dev/null; then
  echo "carry_pack: $build is not a build tree with the GPU tests" >&2
  exit 1
fi
find "$build" -name CTestTestfile.cmake >"$list"
for f in "$build"/tests/test_gpu_*; do
  [ -x "$f" ] && echo "$f" >>"$list"
done
for b in "$@"; do
  b=$(cd "$b" && pwd)
  for exe in flashspec_bench tree_bench filter_bench; do
    if [ -x "$b/bench/$exe" ]; then
      echo "$b/bench/$exe" >>"$list"
    else
      echo "carry_pack: no $b/bench/$exe (configure with -DFLASHSPEC_BENCH=ON)" >&2
    fi
  done
done
# the kernel timeline library (bench/tools/kernel_trace.c), where it was built
[ -f "$build/bench/libfs_kernel_trace.so" ] && echo "$build/bench/libfs_kernel_trace.so" >>"$list"
mkdir -p carry-bin
tar cPf - -T "$list" | xz -T1 -9 >carry-bin/all.txz
echo "carry-bin/all.txz: $(wc -l <"$list") files, $(du -h carry-bin/all.txz | cut -f1)"
if ! compgen -G ".deps/*.deb" >/dev/null; then
  mkdir -p .deps
  (cd .deps && apt-get download libcmocka0 libcmocka-dev libgsl27 libgslcblas0 libgsl-dev)
fi
