#!/usr/bin/env bash
# The device call that made this folder (one H200; `bash run.sh 1`), from
# the repository root with carry ["carry-bin", ".deps"]: carry-bin/all.txz
# packed by `bench/tools/carry_pack.sh /tmp/b-full /tmp/base-tree3`, the
# first the build of this change, the second aa44772's benchmarks;
# carry-bin/extra.txz holding m1/test_gpu_filter and m2/test_gpu_filter,
# this build with mutant_prep_offset.patch and
# mutant_verify_prep_filters.patch (kernels/prep.cu).
set -u
source bench/tools/device_env.sh
A=/tmp/base-tree3/bench
case "${1:-1}" in
1)
# the prep kernels' reads issued at once: the mutants (each must fail),
# every GPU test, initcheck and memcheck of the tests that go through the
# prep kernel's paths, then kernel timelines against aa44772
for m in m1 m2; do
  (cd $B/tests && timeout 120 /tmp/fsb/$m/test_gpu_filter > $O/mutant_$m.txt 2>&1; echo "rc=$? (nonzero: caught)" >> $O/mutant_$m.txt)
done
el mutants
(cd $B && timeout 300 ctest -L gpu -j4 --output-on-failure > $O/ctest_gpu_call1.txt 2>&1; echo "rc=$?" >> $O/ctest_gpu_call1.txt)
el tests
(cd $B/tests && for t in initcheck memcheck; do
  for x in test_gpu_filter test_gpu_bad_input; do
    FS_GPU_TEST_SMALL=1 san $t san_${t}_$x.txt 200 ./$x
  done
done)
el sanitizers
ktrace_rounds 3 "--shapes 151936x4096,128256x8192 --rows 1,16,48,64 --logits 1 --rounds 1 --reps 10" \
  base=$A/filter_bench new=$B/bench/filter_bench
el trace
;;
esac
tar czf $OUT/out.tgz -C $O .
