#!/usr/bin/env bash
# Session 5, run 9: the final commit (verify on the tile kernel up to 160
# rows): GPU agreement (all three scan-path variants), graph and bad-input
# tests, then verify at 100 rows and the 128-row ops.
source "$(dirname "$0")/common.sh"
FS_SANITIZE=0 FS_CTEST_REGEX='test_gpu_agree|test_gpu_graph|test_gpu_bad_input' timeout 400 bash bench/run_gpu_tests.sh > $OUT/tests_stdout.txt 2>&1
echo "tests rc=$?"; grep -vE "^$" $OUT/gpu_tests_summary.txt | tail -8
grep -E "agreement over all|tests passed|Failed|FAILED" $OUT/gpu_tests.log | sort | uniq -c | head
B=build-sm90a/bench/flashspec_bench
timeout 60 $B --shapes 151936x4096,128256x8192 --rows 128 --requests 16,20,32 --reps 30 --warmup 3 > $OUT/bench_final_check.txt 2>&1
grep -E '^(sample|argmax|verify) +fs_' $OUT/bench_final_check.txt | awk '{print $1,$3,$5,$7,$9}' | paste -sd' '
