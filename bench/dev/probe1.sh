#!/usr/bin/env bash
# Exploratory profile (session 3, run 1): per-kernel durations of small-row
# calls, warp stalls of the tile kernel's sampling epilogue at 64 rows, the
# rows kernel at 128 rows.
source "$(dirname "$0")/common.sh"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
build_bench
B=build-sm90a/bench/flashspec_bench
NCU="ncu --clock-control none"
echo "=== durations: sample 4 rows, verify R=1 and R=8 ==="
$NCU -k regex:"fs_prep|fsh|fs_merge|fs_final" --metrics gpu__time_duration.sum $B --shapes 151936x4096 --rows 4 --requests 1,8 --ops sample,verify --reps 1 --warmup 0 --gemm heuristic 2>&1 | grep -E "^\s+[a-z_].*\(|gpu__time_duration" > $OUT/durations.txt
cat $OUT/durations.txt
echo "=== tile kernel 64 rows: sample vs argmax ==="
$NCU -k regex:"fsh_scan" -c 4 --section SpeedOfLight --section WarpStateStats --section SchedulerStats --section SourceCounters \
  $B --shapes 151936x4096 --rows 64 --ops sample,argmax --reps 1 --warmup 0 --gemm heuristic > $OUT/tile64.txt 2>&1
grep -E "fsh_scan|Duration|Issue Slots Busy|Warp Cycles Per Issued|Stall|Eligible|Active Warps|No Eligible|DRAM Throughput|L2 Cache Throughput" $OUT/tile64.txt | head -80
echo "=== rows kernel 128 rows argmax+sample ==="
FLASHSPEC_HOPPER_ROWS_MIN=1 $NCU -k regex:"fshr_scan" -c 4 --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
  $B --shapes 151936x4096 --rows 128 --ops sample,argmax --reps 1 --warmup 0 --gemm heuristic > $OUT/rows128.txt 2>&1
grep -E "fshr_scan|Duration|Issue Slots Busy|Warp Cycles Per Issued|Eligible|DRAM Throughput|L2 Cache Throughput" $OUT/rows128.txt | head -40
echo "=== bench baseline ==="
$B --shapes 151936x4096 --rows 4,64,128 --requests 1,8 --reps 20 --warmup 3 --gemm heuristic 2>&1 | tee $OUT/bench_base.txt | grep -E "fs_|cublas_matmul"
