#!/bin/bash
# Device call: arrivals at the filtered merge kernel's grid barrier
# (FS_PROBE_ARRIVE, no resolve printf), base and lean kept record, warm-up
# slot on and off, 1 / 16 / 64 rows, 151936 x 4096 peaked.
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
C=/tmp/fsb; O=/tmp/o; mkdir -p $O
for b in base new; do
for r in 1 16 64; do
  timeout 60 $C/filter_bench_arrive_$b --rows $r --shapes 151936x4096 --logits 1 --rounds 2 --reps 5 \
    > $O/arrive_${b}_rows$r.txt 2>&1
  FLASHSPEC_FILTER_WARM=0 timeout 60 $C/filter_bench_arrive_$b --rows $r --shapes 151936x4096 --logits 1 --rounds 2 --reps 5 \
    > $O/arrive_${b}_nowarm_rows$r.txt 2>&1
done
done
tar czf $OUT/out.tgz -C $O .
