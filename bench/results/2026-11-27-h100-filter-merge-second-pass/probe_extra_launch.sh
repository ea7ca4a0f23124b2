#!/bin/bash
# Device call: the committed build with an optional second launch of the
# filtered merge kernel with no slots after it (probe_extra_launch.patch:
# FS_PROBE_EXTRA_LAUNCH=1, plain cooperative; with FS_PROBE_EXTRA_PDL=1,
# programmatic), peaked rows only, against the base 73f0b43 (head).
set -u
mkdir -p /tmp/fsb /tmp/fs_deps
python3 -c "import lzma,tarfile; tarfile.open(fileobj=lzma.open('carry-bin/extra.txz')).extractall('/tmp/fsb')"
O=/tmp/o; mkdir -p $O
ARGS="--rounds 2 --reps 10 --rows 1,16,64 --shapes 151936x4096 --logits 1"
for r in 1 2; do
  timeout 60 /tmp/fsb/filter_bench_head $ARGS > $O/fb_head_$r.txt 2>&1
  timeout 60 /tmp/fsb/filter_bench_probe $ARGS > $O/fb_fused_$r.txt 2>&1
  FS_PROBE_EXTRA_LAUNCH=1 timeout 60 /tmp/fsb/filter_bench_probe $ARGS > $O/fb_extra_$r.txt 2>&1
  FS_PROBE_EXTRA_LAUNCH=1 FS_PROBE_EXTRA_PDL=1 timeout 60 /tmp/fsb/filter_bench_probe $ARGS > $O/fb_extrapdl_$r.txt 2>&1
done
python3 bench/tools/filter_ab_table.py head="$O/fb_head_*.txt" fused="$O/fb_fused_*.txt" extra="$O/fb_extra_*.txt" extrapdl="$O/fb_extrapdl_*.txt" > $O/ab.txt
grep -E 'sample (all|k50)|verify all' $O/ab.txt
tar czf $OUT/o.tgz -C $O .
