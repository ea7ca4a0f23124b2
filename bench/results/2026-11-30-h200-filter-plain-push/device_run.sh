#!/usr/bin/env bash
# The device call that made this folder (one H200; `bash run.sh 1`), from
# the repository root with carry ["carry-bin", ".deps"]: carry-bin/all.txz
# packed by `bench/tools/carry_pack.sh /tmp/b-full /tmp/base-tree4`, the
# first the build of this change, the second 40cf25e's benchmarks.
set -u
source bench/tools/device_env.sh
A=/tmp/base-tree4/bench
case "${1:-1}" in
1)
# the filtered rows' plain push in the tile kernel: the filter, tree,
# agreement, single and bad-input tests, initcheck and memcheck of the
# filter test, then kernel timelines against 40cf25e and alternated
# filter_bench rounds
(cd $B && timeout 250 ctest -L gpu -j4 -R "filter|tree|agree|single|bad_input|stat$" --output-on-failure > $O/ctest_gpu_call1.txt 2>&1; echo "rc=$?" >> $O/ctest_gpu_call1.txt)
el tests
(cd $B/tests && for t in initcheck memcheck; do
  FS_GPU_TEST_SMALL=1 san $t san_${t}_test_gpu_filter.txt 200 ./test_gpu_filter
done)
el sanitizers
ktrace_rounds 3 "--shapes 151936x4096,128256x8192 --rows 1,16,48,64 --logits 1 --rounds 1 --reps 10" \
  base=$A/filter_bench new=$B/bench/filter_bench
el trace
OUT=$O/ab timeout 200 bash bench/tools/ab_rounds.sh -r 3 filt \
  "--shapes 151936x4096,128256x8192 --rows 1,16,48,64 --logits 1 --rounds 1 --reps 10" \
  base=$A/filter_bench new=$B/bench/filter_bench > $O/ab_filt_summary.txt 2>&1
el ab
;;
esac
tar czf $OUT/out.tgz -C $O .
