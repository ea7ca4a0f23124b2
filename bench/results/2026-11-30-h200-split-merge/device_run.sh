#!/usr/bin/env bash
# The device calls that made this folder (one H200; `bash run.sh N`), from
# the repository root with carry ["carry-bin", ".deps"]: carry-bin/all.txz
# packed by `bench/tools/carry_pack.sh /tmp/b-full /tmp/base-tree`, the
# first the build of the split merge, the second the previous commit's
# benchmarks (9ca60bd).
set -u
source bench/tools/device_env.sh
A=/tmp/base-tree/bench
case "${1:-1}" in
1)
# every GPU test on the split merge
(cd $B && timeout 280 ctest -L gpu -j4 --output-on-failure > $O/ctest_gpu_call1.txt 2>&1; echo "rc=$?" >> $O/ctest_gpu_call1.txt)
el tests
# kernel timelines, the previous build against this one, alternated
for r in 1 2; do
  [ $r = 2 ] && [ $(($(date +%s) - T0)) -gt 400 ] && break # the call's 600 s
  for v in base new; do
    BIN=$A; [ $v = new ] && BIN=$B/bench
    ktrace filt_${v}_$r 150 $BIN/filter_bench --shapes 151936x4096,128256x8192 --rows 1,16,64 --logits 1 --rounds 1 --reps 10
    ktrace ops_${v}_$r 150 $BIN/flashspec_bench --shapes 151936x4096 --rows 1,4,16,64,256 --requests 1,16 --rounds 1 --reps 10 --warmup 3
    el "trace $v $r"
  done
done
;;
esac
tar czf $OUT/out.tgz -C $O .
