#!/bin/bash
# Device call (another H100): the committed build with and without the
# filtered merge's warm-up slot (FLASHSPEC_FILTER_WARM=0), peaked rows.
set -u
mkdir -p /tmp/fsb
python3 -c "import lzma,tarfile; tarfile.open(fileobj=lzma.open('carry-bin/extra.txz')).extractall('/tmp/fsb')"
O=/tmp/o; mkdir -p $O
ARGS="--rounds 2 --reps 10 --rows 1,16,64 --logits 1"
for r in 1 2; do
  timeout 60 /tmp/fsb/filter_bench_new $ARGS > $O/fb_warm1_$r.txt 2>&1
  FLASHSPEC_FILTER_WARM=0 timeout 60 /tmp/fsb/filter_bench_new $ARGS > $O/fb_warm0_$r.txt 2>&1
done
python3 bench/tools/filter_ab_table.py warm1="$O/fb_warm1_*.txt" warm0="$O/fb_warm0_*.txt" > $O/ab.txt
grep -E 'sample (all|k50)|verify all' $O/ab.txt
tar czf $OUT/o.tgz -C $O .
