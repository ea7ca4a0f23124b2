#!/usr/bin/env bash
# Session 8, run 4: per-instruction counts (ncu SourceCounters) of the rows
# kernel in fs_sample (320 rows) and fs_verify (64 requests, 320 rows) on
# 151936 x 4096, same binary: the instructions verify runs more often show
# where its extra ~180 us goes (run 3: none without excluded / selected tokens).
source "$(dirname "$0")/common.sh"
B=build-sm90a/bench/flashspec_bench
build_bench
for op in sample verify; do
  timeout 200 ncu --clock-control none -k regex:fshr_scan -c 1 --section SourceCounters \
    -o $OUT/r320_$op $B --shapes 151936x4096 --rows 320 --requests 64 --ops $op --reps 1 --warmup 0 > /dev/null 2>&1
  ncu -i $OUT/r320_$op.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $OUT/r320_${op}_sass.csv.gz
  rm -f $OUT/r320_$op.ncu-rep
  ls -la $OUT/r320_${op}_sass.csv.gz
done
