#!/bin/bash
# Device call: warp stall samples of the filtered merge kernel per source
# line, 151936 x 4096, peaked logits, 64 rows (filter_bench's first four
# filtered merges: top-k 50, top-p 0.9, min-p 0.05, all three), ncu at
# unlocked clocks; the SASS export is reduced here by
# bench/tools/ncu_source_lines.py (it is hundreds of MB).  carry-bin/
# filter_bench: the base build's (1b8b7bb), built with -lineinfo.
set -u
O=/tmp/o; mkdir -p $O
B=$PWD/carry-bin/filter_bench
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
CUDA_BIN=$(dirname $NCU); [ -x $CUDA_BIN/cuobjdump ] || CUDA_BIN=/usr/local/cuda/bin
timeout 300 $NCU --clock-control none --section SourceCounters --section WarpStateStats \
  --import-source no -k regex:fs_filter_merge_kernel -c 4 -f -o $O/merge \
  $B --rows 64 --shapes 151936x4096 --logits 1 --rounds 1 --reps 1 > $O/ncu_run.txt 2>&1
$NCU -i $O/merge.ncu-rep --page details --csv > $O/merge_details.csv 2>/dev/null
$NCU -i $O/merge.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $O/merge_source.csv.gz
cub=$($CUDA_BIN/cuobjdump -lelf $B | grep -o '[^ ]*filter_fallback[^ ]*sm_90a[^ ]*cubin' | head -1)
(cd $O && $CUDA_BIN/cuobjdump -xelf "$cub" $B && $CUDA_BIN/nvdisasm -g -c "$cub" > $O/merge.sass)
python3 bench/tools/ncu_source_lines.py $O/merge_source.csv.gz $O/merge.sass fs_filter_merge_kernelILb0E '' 40 \
  > $O/merge_lines.txt 2>&1
gzip $O/merge_details.csv
tar czf $OUT/out.tgz -C $O merge_lines.txt merge_details.csv.gz
