#!/usr/bin/env bash
# Session 3, run 2: GPU tests on the block-noise / one-launch code, SASS
# check of the rows kernel, focused benchmark.
source "$(dirname "$0")/common.sh"
export FS_BUILD_DIR=build-sm90a FS_BENCH=ON FS_SANITIZE=0
timeout 420 bash bench/run_gpu_tests.sh > $OUT/tests_stdout.txt 2>&1
tail -30 $OUT/gpu_tests_summary.txt
grep -E "Test +#|tests passed|agreement over all|near-tie" $OUT/gpu_tests.log | head -40
grep -B2 -A25 -E "FAILED|Failed|\[  FAILED" $OUT/gpu_tests.log | head -80
obj=$(find build-sm90a -name "scan_hopper_rows.cu.o" | head -1)
cuobjdump -sass "$obj" > $OUT/rows_sass.txt 2>/dev/null
echo "rows kernel SASS: HGMMA $(grep -c HGMMA $OUT/rows_sass.txt) LDL $(grep -c LDL $OUT/rows_sass.txt) STL $(grep -c STL $OUT/rows_sass.txt) WARPSYNC/ARV $(grep -c 'WARPGROUP' $OUT/rows_sass.txt)"
B=build-sm90a/bench/flashspec_bench
build_bench
timeout 240 $B --shapes 151936x4096 --rows 1,4,16,64,128,160,256,320 --requests 1,8,16,32 --reps 15 --warmup 3 2>&1 | tee $OUT/bench.txt | grep -E "fs_|cublas_matmul|floor" 
