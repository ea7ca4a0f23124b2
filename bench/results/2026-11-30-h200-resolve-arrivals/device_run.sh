#!/usr/bin/env bash
# The device call that made this folder (one H200; `bash run.sh 1`), from
# the repository root with carry ["carry-bin", ".deps"]: carry-bin/all.txz
# packed by bench/tools/carry_pack.sh from the build in /tmp/b-full of
# 7ec746d, carry-bin/extra.txz holding arrive/filter_bench, the same build
# with kernels/filter_fallback.cu compiled with -DFS_PROBE_RESOLVE=1
# -DFS_PROBE_RESOLVE_BLOCK=100000.  Table:
#   bench/tools/arrival_probe_table.py runs/arrive_151936x4096_rows*.txt \
#     runs/arrive_128256x8192_rows*.txt > arrival_table_call1.txt
# Stage 2: carry-bin/extra.txz holding arrive_desc/filter_bench, the same
# with stamp_descriptor.patch applied too (t1 once the row's descriptor is
# in); arrival_desc_table_call2.txt from the same tool over its runs.
set -u
source bench/tools/device_env.sh
case "${1:-1}" in
1)
# the filtered merge kernel's blocks on an H200: arrivals at its grid barrier
# and the resolve's steps (FS_PROBE_ARRIVE / FS_PROBE_STEPS; /tmp/fsb/arrive:
# filter_bench with filter_fallback.cu built -DFS_PROBE_RESOLVE=1
# -DFS_PROBE_RESOLVE_BLOCK=100000), 1-64 rows, peaked logits
mkdir -p $O/runs
for sh in 151936x4096 128256x8192; do for r in 1 16 48 64; do
  timeout 60 /tmp/fsb/arrive/filter_bench --rows $r --shapes $sh --logits 1 --rounds 2 --reps 5 \
    > $O/runs/arrive_${sh}_rows$r.txt 2>&1
done; done
el arrive
;;
2)
# the row's first step split: /tmp/fsb/arrive_desc stamps t1 once the
# descriptor is in (its lists' loads issued), not after the loads and merge
mkdir -p $O/runs
for r in 1 16 64; do
  timeout 60 /tmp/fsb/arrive_desc/filter_bench --rows $r --shapes 151936x4096 --logits 1 --rounds 2 --reps 5 \
    > $O/runs/arrive_desc_151936x4096_rows$r.txt 2>&1
done
el arrive_desc
;;
esac
tar czf $OUT/out.tgz -C $O .
