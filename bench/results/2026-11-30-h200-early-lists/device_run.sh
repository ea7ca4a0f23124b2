#!/usr/bin/env bash
# The device call that made this folder (one H200; `bash run.sh 1`), from
# the repository root with carry ["carry-bin", ".deps"]: carry-bin/all.txz
# packed by `bench/tools/carry_pack.sh /tmp/b-full /tmp/base-tree2`, the
# first the build of this change, the second 07b52b1's benchmarks.
set -u
source bench/tools/device_env.sh
A=/tmp/base-tree2/bench
case "${1:-1}" in
1)
# the lists and records loaded beside the descriptor: initcheck and memcheck
# of the filter and tree tests (every filtered path, rows that do not
# filter or fail among them), then kernel timelines against 07b52b1
S=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
(cd $B/tests && for t in initcheck memcheck; do
  FS_GPU_TEST_SMALL=1 timeout 200 $S --tool $t --error-exitcode 9 ./test_gpu_filter > $O/san_${t}_filter.txt 2>&1; echo "rc=$?" >> $O/san_${t}_filter.txt
  FS_GPU_TEST_SMALL=1 timeout 200 $S --tool $t --error-exitcode 9 ./test_gpu_tree > $O/san_${t}_tree.txt 2>&1; echo "rc=$?" >> $O/san_${t}_tree.txt
done)
el sanitizers
ktrace_rounds 3 "--shapes 151936x4096,128256x8192 --rows 1,16,48,64 --logits 1 --rounds 1 --reps 10" \
  filt_base=$A/filter_bench filt_new=$B/bench/filter_bench
el trace
;;
esac
tar czf $OUT/out.tgz -C $O .
