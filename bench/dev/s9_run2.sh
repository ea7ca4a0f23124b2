#!/usr/bin/env bash
# Session 9, run 2: (a) the 192-row shape with 5 stages (default) vs 4
# (FSHR_STAGES3=4 build) at 136-192 rows, and the 128-row shape alongside;
# (b) the tile kernel with its shared memory aligned by an offset (this
# tree) vs by rounding the address (ab_base.tar = 1ed378a) at 1-96 rows.
# Two alternating rounds each; agreement first.
source "$(dirname "$0")/common.sh"
mkdir -p /tmp/base && tar -xf ab_base.tar -C /tmp/base
( build_bench /tmp/base-build /tmp/base ) > $OUT/build_base.txt 2>&1 &
( [ -f build-s4/CMakeCache.txt ] || cmake -S . -B build-s4 -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90a-real -DFLASHSPEC_TESTS=OFF -DFLASHSPEC_BENCH=ON \
    -DCMAKE_CUDA_FLAGS=-DFSHR_STAGES3=4 >/dev/null
  cmake --build build-s4 -j16 --target flashspec_bench >/dev/null 2>&1 || echo "BUILD FAILED s4" ) > $OUT/build_s4.txt 2>&1 &
FS_BUILD_DIR=build-sm90a FS_BENCH=ON FS_SANITIZE=0 FS_CTEST_REGEX='^test_api$' \
  timeout 300 bash bench/run_gpu_tests.sh > $OUT/build_stdout.txt 2>&1
echo "build rc=$?"
wait
cat $OUT/build_base.txt $OUT/build_s4.txt
A=build-sm90a/bench/flashspec_bench B=/tmp/base-build/bench/flashspec_bench C=build-s4/bench/flashspec_bench
ls -la $A $B $C || exit 1
FLASHSPEC_HOPPER_ROW_BLOCK=192 timeout 30 $A --shapes 151936x4096 --rows 160 --requests 32 --reps 3 --warmup 1 > $OUT/smoke.txt 2>&1
rc=$?; echo "smoke rc=$rc"; [ $rc = 0 ] || exit 1
FS_BUILD_DIR=build-sm90a FS_BENCH=ON FS_SANITIZE=0 FS_CTEST_REGEX='^test_gpu_agree$|^test_gpu_agree_rows192$' \
  timeout 200 bash bench/run_gpu_tests.sh > $OUT/tests_stdout.txt 2>&1
echo "tests rc=$?"; grep -E "agreement over all|tests passed|FAILED" $OUT/gpu_tests.log | head -5
summ() { grep -E '^(sample|argmax|verify) +(fs_|cublas_matmul)' $1 | awk '{print $2,$5,$7,$9}' | paste -sd' '; }
S="--shapes 151936x4096,128256x8192 --rows 136,144,152,160,176,192 --requests 28,32,36 --reps 25 --warmup 3"
for round in 1 2; do
  for v in s5:$A s4:$C; do
    timeout 100 ${v#*:} $S > $OUT/st_${v%%:*}_$round.txt 2>&1
    echo "== ${v%%:*} round $round rc=$?: $(summ $OUT/st_${v%%:*}_$round.txt)"
  done
done
T="--shapes 151936x4096,128256x8192 --rows 1,8,32,64,96 --requests 1,4,16 --reps 25 --warmup 3"
for round in 1 2; do
  for v in new:$A base:$B; do
    timeout 100 ${v#*:} $T > $OUT/tile_${v%%:*}_$round.txt 2>&1
    echo "== tile ${v%%:*} round $round rc=$?: $(summ $OUT/tile_${v%%:*}_$round.txt)"
  done
done
