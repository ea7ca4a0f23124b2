#!/usr/bin/env bash
# Session 6, run 1 (commit ed0c8c3; a first try without the order barrier
# crashed at 151936 x 4096): the ping-pong rows kernel.  GPU tests with the rows kernel
# forced (agreement, statistics) and the default choice (agreement, graph,
# bad input); SASS check; then A/B against the previous rows kernel
# (ab_base.tar = git archive of 495bea6), two alternating rounds.
source "$(dirname "$0")/common.sh"
rm -rf /tmp/base && mkdir -p /tmp/base && tar -xf ab_base.tar -C /tmp/base
( build_bench build-b /tmp/base ) > $OUT/build_b.txt 2>&1 &
export FS_BUILD_DIR=build-sm90a FS_BENCH=ON FS_SANITIZE=0
FS_CTEST_REGEX='rowsm|test_gpu_agree|test_gpu_graph|test_gpu_bad_input' timeout 420 bash bench/run_gpu_tests.sh > $OUT/tests_stdout.txt 2>&1
echo "tests rc=$?"; grep -vE "^$" $OUT/gpu_tests_summary.txt | tail -10
grep -E "agreement over all|near-tie|tests passed|Failed|FAILED" $OUT/gpu_tests.log | sort | uniq -c | head -20
grep -B2 -A12 -E "\[  FAILED|mismatch|disagree" $OUT/gpu_tests.log | head -60
wait
cat $OUT/build_b.txt
obj=$(find build-sm90a -name "scan_hopper_rows.cu.o" | head -1)
cuobjdump -sass "$obj" > /tmp/rows_sass.txt 2>/dev/null
echo "rows kernel SASS: HGMMA $(grep -c HGMMA /tmp/rows_sass.txt) LDL $(grep -c LDL /tmp/rows_sass.txt) STL $(grep -c STL /tmp/rows_sass.txt) WARPGROUP $(grep -c 'WARPGROUP' /tmp/rows_sass.txt) SETMAXREG $(grep -c 'SETMAXREG' /tmp/rows_sass.txt)"
A=build-sm90a/bench/flashspec_bench
B=build-b/bench/flashspec_bench
ARGS="--shapes 151936x4096,128256x8192 --rows 128,256,320 --requests 32,64 --reps 30 --warmup 3"
summ() { grep -E '^(sample|argmax|verify) +fs_' $1 | awk '{print $1,$3,$5,$9}' | paste -sd' '; }
for round in 1 2; do
  timeout 90 $A $ARGS > $OUT/new_$round.txt 2>&1; echo "== new $round: $(summ $OUT/new_$round.txt)"
  timeout 90 $B $ARGS > $OUT/old_$round.txt 2>&1; echo "== old $round: $(summ $OUT/old_$round.txt)"
done
# 160 rows and verify at 97-160 on the new rows kernel (forced) vs the tile kernel (default)
FLASHSPEC_HOPPER_ROWS_MIN=97 timeout 90 $A --shapes 151936x4096,128256x8192 --rows 100,160 --requests 20,32 --reps 30 --warmup 3 > $OUT/new_forced160.txt 2>&1
echo "== new rows-forced 100/160: $(summ $OUT/new_forced160.txt)"
timeout 90 $A --shapes 151936x4096,128256x8192 --rows 100,160 --requests 20,32 --reps 30 --warmup 3 > $OUT/new_default160.txt 2>&1
echo "== new default 100/160: $(summ $OUT/new_default160.txt)"
grep -E "MISS|same token" $OUT/new_1.txt | grep -E "MISS| fs_" | head -30
