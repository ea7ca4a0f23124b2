#!/usr/bin/env bash
# Runs on commit 31c9292 (the multicast; reverted in 1aa1774): FLASHSPEC_HOPPER_NO_MULTICAST exists only there.
# Session 4, run 1: W multicast across the row-block cluster of the rows
# kernel.  Agreement tests (both kernels, clusters of 2-4), then A/B of the
# multicast at 128-320 rows, and the rows kernel at 160 rows vs the tile kernel.
source "$(dirname "$0")/common.sh"
export FS_BUILD_DIR=build-sm90a FS_BENCH=ON FS_SANITIZE=0
export FS_CTEST_REGEX='test_gpu_agree|test_gpu_tp|test_gpu_graph|test_gpu_bad'
if [ "${S4_SKIP_TESTS:-0}" != 1 ]; then  # s4_run2.sh reruns only the benchmarks
  timeout 300 bash bench/run_gpu_tests.sh > $OUT/tests_stdout.txt 2>&1
  grep -E "^(configure|build|ctest) " $OUT/gpu_tests_summary.txt
  grep -E "Test +#|agreement over all|\*\*\*Failed|FAILED|rows/requests identical" $OUT/gpu_tests.log | grep -v "Passed" | head -30
fi
B=build-sm90a/bench/flashspec_bench
for mc in 1 0; do
  if [ $mc = 0 ]; then export FLASHSPEC_HOPPER_NO_MULTICAST=1; fi
  timeout 120 $B --shapes 151936x4096,128256x8192 --rows 256,320 --requests 32,64 --reps 15 --warmup 3 > $OUT/ab_mc$mc.txt 2>&1
  echo "== multicast $mc"; grep -E "^(sample|argmax|verify) +(fs_|cublas_matmul)" $OUT/ab_mc$mc.txt | awk '{print $1,$2,$3,$5,$7,$9}'
done
unset FLASHSPEC_HOPPER_NO_MULTICAST
export FLASHSPEC_HOPPER_ROWS_MIN=129
timeout 120 $B --shapes 151936x4096,128256x8192 --rows 160 --requests 32 --reps 15 --warmup 3 > $OUT/ab_rows160.txt 2>&1
echo "== rows kernel from 129 rows"; grep -E "^(sample|argmax|verify) +fs_" $OUT/ab_rows160.txt | awk '{print $1,$3,$5,$7,$9}'
