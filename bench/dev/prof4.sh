#!/usr/bin/env bash
# Session 3, run 4: per-instruction profile of the rows kernel (128 rows, argmax and sample).
source "$(dirname "$0")/common.sh"
B=build-sm90a/bench/flashspec_bench
build_bench
for op in argmax sample; do
  FLASHSPEC_HOPPER_ROWS_MIN=1 ncu --clock-control none -k regex:fshr_scan -c 1 --section SourceCounters --section WarpStateStats \
    --import-source yes -o $OUT/rows128_$op $B --shapes 151936x4096 --rows 128 --ops $op --reps 1 --warmup 0 --gemm heuristic > /dev/null 2>&1
  ncu -i $OUT/rows128_$op.ncu-rep --page source --csv --print-source sass > $OUT/rows128_${op}_sass.csv 2>/dev/null
  ncu -i $OUT/rows128_$op.ncu-rep --page details --section WarpStateStats --section SourceCounters 2>/dev/null | grep -vE "^\s*$|----" | head -60
  ls -la $OUT/rows128_${op}_sass.csv
  rm -f $OUT/rows128_$op.ncu-rep
done
