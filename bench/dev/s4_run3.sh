#!/usr/bin/env bash
# Session 4, run 3: tile kernel row blocks of 48 / 80 / 96.  All GPU tests
# (memcheck on the agreement test), then the rows the new blocks serve.
source "$(dirname "$0")/common.sh"
export FS_BUILD_DIR=build-sm90a FS_BENCH=ON FS_SAN_TESTS=test_gpu_agree
timeout 420 bash bench/run_gpu_tests.sh > $OUT/tests_stdout.txt 2>&1
cat $OUT/gpu_tests_summary.txt | grep -vE "SKIP|^$"
grep -E "agreement over all|\*\*\*Failed|FAILED|ERROR SUMMARY" $OUT/gpu_tests.log | sort | uniq -c | head -20
B=build-sm90a/bench/flashspec_bench
timeout 150 $B --shapes 151936x4096,128256x8192 --rows 40,48,64,80,96 --requests 8,16 --reps 20 --warmup 3 > $OUT/bench_bn.txt 2>&1
grep -E "^(sample|argmax|verify) +(fs_|cublas_matmul)" $OUT/bench_bn.txt | awk '{print $1,$2,$3,$5,$7,$9}'
