#!/usr/bin/env bash
# Session 10, run 3: per-instruction stall samples of the rows kernel for
# sampling at 320 rows (3 unclustered row blocks; its epilogue costs ~9 us a
# tile over the mainloop in run 2's ncu) and at 256 rows (2-CTA clusters,
# ~5 us a tile), and draft argmax at 320 rows, 151936 x 4096: which code
# the extra time sits in.  SASS CSVs for ncu_sass_split.py.
source "$(dirname "$0")/common.sh"
exec > >(tee $OUT/run3.txt) 2>&1
build_bench build-sm90a
B=build-sm90a/bench/flashspec_bench
for cfg in "320 sample" "256 sample" "320 argmax"; do
  set -- $cfg
  n=rows$1_$2
  timeout 150 ncu --clock-control none -k regex:fshr_scan -c 1 --section SourceCounters \
    --section WarpStateStats -o /tmp/$n $B --shapes 151936x4096 --rows $1 --ops $2 --reps 1 \
    --warmup 0 --gemm heuristic > /dev/null 2>&1
  echo "== $n rc=$? at ${SECONDS}s"
  ncu -i /tmp/$n.ncu-rep --page source --csv --print-source sass > $OUT/${n}_sass.csv 2>/dev/null
  ncu -i /tmp/$n.ncu-rep --page details --section WarpStateStats 2>/dev/null | grep -E "Duration|Warp Cycles|Stall" | head -8
  gzip -f $OUT/${n}_sass.csv
done
python3 bench/dev/ncu_sass_split.py $OUT/*_sass.csv.gz
