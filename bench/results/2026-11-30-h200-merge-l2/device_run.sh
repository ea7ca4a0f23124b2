#!/usr/bin/env bash
# The device calls that made this folder (one H200; `bash run.sh N`), from
# the repository root with carry ["carry-bin", ".deps"]: carry-bin/all.txz
# packed by `bench/tools/carry_pack.sh BUILD /tmp/base-tree`, the second
# tree holding 9ca60bd's benchmarks.
set -u
source bench/tools/device_env.sh
A=/tmp/base-tree/bench
case "${1:-1}" in
1)
# where the filtered merge kernel's loads are served: its DRAM bytes and L2
# hit rate after the scan, L2 as the scan left it (no flush, one pass a run)
M=gpu__time_duration.sum,dram__bytes_read.sum,lts__t_sector_op_read_hit_rate.pct,lts__t_sectors_op_read.sum
for rows in 1 64; do
  ncu_csv ncu/merge_${rows}.csv 150 --cache-control none --clock-control none --replay-mode application \
    -k regex:fs_filter_merge_kernel -c 3 --metrics $M \
    $A/filter_bench --shapes 151936x4096 --rows $rows --logits 1 --rounds 1 --reps 1
  el "ncu $rows"
done
;;
esac
tar czf $OUT/out.tgz -C $O .
