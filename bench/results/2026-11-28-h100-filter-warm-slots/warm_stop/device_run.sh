#!/bin/bash
# Device call: how far the warm-up slot goes (FS_WARM_STOP 0 whole resolve,
# 1 without the kept record, 2 without decision and kept record) on the
# lean kept record, against the base: arrivals and step times (globaltimer)
# of blocks 0 and 1, then filter_bench peaked, both shapes, alternated 3x.
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
ROOT=$PWD; C=/tmp/fsb; O=/tmp/o; mkdir -p $O
for v in s0 s1 s2; do
for r in 1 64; do
  timeout 60 $C/filter_bench_arrive_$v --rows $r --shapes 151936x4096 --logits 1 --rounds 2 --reps 5 \
    > $O/arrive_${v}_rows$r.txt 2>&1
done
done
tar czf $OUT/out.tgz -C $O .
ARGS="--rounds 2 --reps 10 --rows 1,4,16,64 --logits 1"
for r in 1 2 3; do
  for b in base s0 s1 s2; do
    timeout 60 $C/filter_bench_$b $ARGS > $O/filter_bench_${b}_$r.txt 2>&1
  done
done
python3 $ROOT/bench/tools/filter_ab_table.py base="$O/filter_bench_base_*.txt" \
  s0="$O/filter_bench_s0_*.txt" s1="$O/filter_bench_s1_*.txt" s2="$O/filter_bench_s2_*.txt" > $O/filter_ab_table.txt
grep -E 'sample all|verify all' $O/filter_ab_table.txt
tar czf $OUT/out.tgz -C $O .
