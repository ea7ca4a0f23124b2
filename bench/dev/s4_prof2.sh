#!/usr/bin/env bash
# Session 4, probe 2: per-instruction stall samples of the rows kernel at 256
# rows (sample, argmax) and 128 rows (sample), for a mainloop / epilogue split.
source "$(dirname "$0")/common.sh"
B=build-sm90a/bench/flashspec_bench
build_bench
for cfg in "256 sample" "256 argmax" "128 sample"; do
  set -- $cfg
  n=rows$1_$2
  ncu --clock-control none -k regex:fshr_scan -c 1 --section SourceCounters --section WarpStateStats \
    -o $OUT/$n $B --shapes 151936x4096 --rows $1 --ops $2 --reps 1 --warmup 0 --gemm heuristic > /dev/null 2>&1
  ncu -i $OUT/$n.ncu-rep --page source --csv --print-source sass > $OUT/${n}_sass.csv 2>/dev/null
  ncu -i $OUT/$n.ncu-rep --page details --section WarpStateStats 2>/dev/null | grep -E "Duration|Warp Cycles|Stall" | head -8
  gzip -f $OUT/${n}_sass.csv; rm -f $OUT/$n.ncu-rep
done
ls -la $OUT
