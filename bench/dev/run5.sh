#!/usr/bin/env bash
# Session 3, run 5: GPU tests after the rows-kernel epilogue rewrite; kernel
# choice sweep (tile vs rows kernel) and the benchmark.
source "$(dirname "$0")/common.sh"
export FS_BUILD_DIR=build-sm90a FS_BENCH=ON FS_SANITIZE=0
timeout 400 bash bench/run_gpu_tests.sh > $OUT/tests_stdout.txt 2>&1
tail -22 $OUT/gpu_tests_summary.txt | grep -vE "SKIP \(FS_SANITIZE" 
grep -E "agreement over all|realistic V=|Failed|FAILED" $OUT/gpu_tests.log | head -20
B=build-sm90a/bench/flashspec_bench
for k in rows tile; do
  if [ $k = rows ]; then export FLASHSPEC_HOPPER_ROWS_MIN=1; else export FLASHSPEC_HOPPER_ROWS_MIN=1000000; fi
  timeout 150 $B --shapes 151936x4096,128256x8192 --rows 64,96,128,160 --requests 8,16,32 --reps 15 --warmup 3 > $OUT/ab_$k.txt 2>&1
  echo "== forced $k kernel"; grep -E "^(sample|argmax|verify) +fs_" $OUT/ab_$k.txt | awk '{print $1,$3,$4,$5,$7,$9}'
done
unset FLASHSPEC_HOPPER_ROWS_MIN
timeout 200 $B --shapes 151936x4096 --rows 1,4,8,16,32,64,256,320 --requests 1,2,4,8,64 --reps 15 --warmup 3 2>&1 | tee $OUT/bench.txt | grep -E "^(sample|argmax|verify) +fs_|cublas_matmul" | awk '{print $1,$2,$5,$6,$7,$9,$11}'
