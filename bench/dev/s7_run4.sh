#!/usr/bin/env bash
# Session 7, run 4: who ends the op -- the scan's last CTA (tail) or the merge
# kernel on every SM (programmatic launch) -- by row count.  GPU tests with
# the default (tail up to 64 rows), then the agreement test with the tail
# always and never; A/B of FLASHSPEC_TAIL_ROWS_MAX=100000 (always) vs 0
# (never), two alternating rounds.
source "$(dirname "$0")/common.sh"
export FS_BUILD_DIR=build-sm90a FS_BENCH=ON FS_SANITIZE=0
FS_CTEST_REGEX='rowsm|test_gpu_agree|test_gpu_graph|test_gpu_bad_input' timeout 300 bash bench/run_gpu_tests.sh > $OUT/tests_stdout.txt 2>&1
echo "tests rc=$?"; grep -vE "^$" $OUT/gpu_tests_summary.txt | grep -v SKIP | tail -8
grep -E "agreement over all|near-tie|tests passed|Failed|FAILED" $OUT/gpu_tests.log | sort | uniq -c | head -20
grep -B2 -A12 -E "\[  FAILED|mismatch|disagree" $OUT/gpu_tests.log | head -60
T=$(find build-sm90a -name test_gpu_agree -type f | head -1)
for v in 0 100000; do
  FLASHSPEC_TAIL_ROWS_MAX=$v timeout 100 $T > $OUT/agree_tail_$v.txt 2>&1; echo "agree tail_rows_max=$v rc=$?: $(grep -E 'agreement over all|PASSED|FAILED' $OUT/agree_tail_$v.txt | paste -sd' ')"
done
A=build-sm90a/bench/flashspec_bench
ARGS="--shapes 151936x4096,128256x8192 --rows 1,16,64,128,256,320 --requests 1,16,32,64 --reps 30 --warmup 3"
summ() { grep -E '^(sample|argmax|verify) +fs_' $1 | awk '{print $1,$3,$5,$7,$9}' | paste -sd' '; }
for round in 1 2; do
  FLASHSPEC_TAIL_ROWS_MAX=0 timeout 80 $A $ARGS > $OUT/merge_$round.txt 2>&1; echo "== merge kernel $round: $(summ $OUT/merge_$round.txt)"
  FLASHSPEC_TAIL_ROWS_MAX=100000 timeout 80 $A $ARGS > $OUT/tail_$round.txt 2>&1; echo "== tail $round: $(summ $OUT/tail_$round.txt)"
done
grep -E "cublas_matmul" $OUT/tail_1.txt | awk '{print $1,$3,$5,$7}' | paste -sd' '
