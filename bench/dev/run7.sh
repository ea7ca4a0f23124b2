#!/usr/bin/env bash
# Session 3, run 7: every GPU test with the sanitizers, then a benchmark subset.
source "$(dirname "$0")/common.sh"
export FS_BUILD_DIR=build-sm90a FS_BENCH=ON
timeout 480 bash bench/run_gpu_tests.sh > $OUT/tests_stdout.txt 2>&1
cat $OUT/gpu_tests_summary.txt
grep -E "agreement over all|realistic V=|\*\*\*Failed|FAILED|ERROR SUMMARY: [1-9]" $OUT/gpu_tests.log | head -20
B=build-sm90a/bench/flashspec_bench
timeout 100 $B --shapes 151936x4096,128256x8192 --rows 1,64,128,256,320 --requests 1,8,16 --reps 10 --warmup 2 2>&1 | tee $OUT/bench.txt | grep -E "^(sample|argmax|verify) +fs_" | awk '{print $1,$3,$5,$7,$9,$10}'
