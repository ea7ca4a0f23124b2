#!/usr/bin/env bash
# The device call that made this folder (one H200; `bash run.sh 1`), from
# the repository root with carry ["carry-bin", ".deps"]: carry-bin/all.txz
# packed by bench/tools/carry_pack.sh from the build in /tmp/b-full of
# list_count.patch applied to 278bab9, carry-bin/extra.txz holding
# base/filter_bench built from 278bab9 itself.
set -u
source bench/tools/device_env.sh
case "${1:-1}" in
1)
# the candidate lists' count from the block's least score: the filter tests,
# then filtered calls against the previous build (/tmp/fsb/base) alternated
(cd $B && timeout 250 ctest -L gpu -j4 -R "filter|rows_lists|tree$|tree_tile|agree$" --output-on-failure > $O/ctest_gpu_call1.txt 2>&1; echo "rc=$?" >> $O/ctest_gpu_call1.txt)
el tests
OUT=$O/ab timeout 400 bash bench/tools/ab_rounds.sh -r 3 filt \
  "--shapes 151936x4096,128256x8192 --rows 1,16,48,64 --logits 1 --rounds 1 --reps 10" \
  base=/tmp/fsb/base/filter_bench new=$B/bench/filter_bench > $O/ab_filt_summary_call1.txt 2>&1
el ab
# one filtered call's scan under ncu, both builds (instructions, time)
M=gpu__time_duration.sum,sm__cycles_elapsed.max,smsp__inst_executed.sum
for v in base new; do
  BIN=/tmp/fsb/base/filter_bench; [ $v = new ] && BIN=$B/bench/filter_bench
  ncu_csv ncu/ncu_filter_64_$v.csv 120 --clock-control base -k regex:fsh_scan_kernel -c 40 --metrics $M \
    $BIN --shapes 151936x4096 --rows 64 --logits 1 --rounds 1 --reps 1
done
el ncu
;;
esac
tar czf $OUT/out.tgz -C $O .
