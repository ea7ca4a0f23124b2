#!/usr/bin/env bash
# Session 5, run 6: why the tile kernel's 160-row block costs ~1.3x cuBLAS
# (128-row block: ~1.05x): per-instruction stall samples at 160 rows (verify
# 32 requests, argmax) and at 128 rows forced onto the tile kernel; then the
# rows kernel at 128 rows after the previous flush (dirty L2) with W
# evict_normal.
source "$(dirname "$0")/common.sh"
B=build-a/bench/flashspec_bench
build_bench build-a
M=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,lts__t_bytes.sum
for cfg in "verify 32 0" "argmax 160 0" "argmax 128 100000"; do
  set -- $cfg
  n=tile_$1_$2
  a="--rows $2"; [ $1 = verify ] && a="--requests $2"
  FLASHSPEC_HOPPER_ROWS_MIN=$3 ncu --clock-control none -k regex:fsh_scan -c 1 --section SourceCounters --section WarpStateStats \
    --metrics $M -o $OUT/$n $B --shapes 151936x4096 $a --ops $1 --reps 1 --warmup 0 --gemm heuristic > /dev/null 2>&1
  ncu -i $OUT/$n.ncu-rep --page source --csv --print-source sass > $OUT/${n}_sass.csv 2>/dev/null
  echo "== $n"; ncu -i $OUT/$n.ncu-rep --page details 2>/dev/null | grep -E "Duration|gpu__time|hmma|dram__bytes|lts__t_bytes|Warp Cycles Per Issued|Stall" | head -12
  gzip -f $OUT/${n}_sass.csv; rm -f $OUT/$n.ncu-rep
done
timeout 120 ncu --cache-control none --clock-control none --kernel-name regex:'fshr|nvjet' \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum --csv \
  $B --shapes 151936x4096 --rows 128 --ops argmax --reps 2 --warmup 0 --gemm heuristic > $OUT/ncu_dirty.csv 2>&1
grep -E "gpu__time|dram" $OUT/ncu_dirty.csv | awk -F'","' '{print $5, $(NF-2), $NF}' | cut -c1-150
