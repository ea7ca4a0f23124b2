#!/usr/bin/env bash
# Session 6, run 2: the rows kernel (cooperative 128 x 256 tiles again, epilogue
# from rows_epilogue.cuh) with W multicast over 2-CTA clusters of the two row
# blocks of a slot (129-256 rows).  GPU tests with the rows kernel forced and
# by default; then multicast on vs off (FLASHSPEC_HOPPER_NO_MULTICAST=1), two
# alternating rounds, and the 128-row ops (no cluster) for the refactor.
source "$(dirname "$0")/common.sh"
export FS_BUILD_DIR=build-sm90a FS_BENCH=ON FS_SANITIZE=0
FS_CTEST_REGEX='rowsm|test_gpu_agree|test_gpu_graph|test_gpu_bad_input' timeout 420 bash bench/run_gpu_tests.sh > $OUT/tests_stdout.txt 2>&1
echo "tests rc=$?"; grep -vE "^$" $OUT/gpu_tests_summary.txt | grep -v SKIP | tail -6
grep -E "agreement over all|tests passed|Failed|FAILED" $OUT/gpu_tests.log | sort | uniq -c | head -20
grep -B2 -A12 -E "\[  FAILED|disagree" $OUT/gpu_tests.log | head -40
A=build-sm90a/bench/flashspec_bench
summ() { grep -E '^(sample|argmax|verify) +fs_' $1 | awk '{print $1,$3,$5,$9}' | paste -sd' '; }
ARGS="--shapes 151936x4096,128256x8192 --rows 128,200,256 --requests 48 --reps 30 --warmup 3"
for round in 1 2; do
  timeout 90 $A $ARGS > $OUT/mc_$round.txt 2>&1; echo "== multicast $round: $(summ $OUT/mc_$round.txt)"
  FLASHSPEC_HOPPER_NO_MULTICAST=1 timeout 90 $A $ARGS > $OUT/nomc_$round.txt 2>&1; echo "== no multicast $round: $(summ $OUT/nomc_$round.txt)"
done
FLASHSPEC_HOPPER_ROWS_MIN=97 timeout 90 $A --shapes 151936x4096,128256x8192 --rows 160 --requests 32 --reps 30 --warmup 3 > $OUT/mc_forced160.txt 2>&1
echo "== multicast rows-forced 160: $(summ $OUT/mc_forced160.txt)"
