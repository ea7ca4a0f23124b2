#!/usr/bin/env bash
# The device call that made this folder, on builds carried with
# bench/tools/carry_pack.sh: GPU ctest of the new build, a mutant (the
# one-launch scan ignoring the offsets) through test_gpu_single, memcheck and
# racecheck of the one-launch path, then the same benchmark binary with and
# without the single launch (FLASHSPEC_SINGLE_LAUNCH=0: prep kernel first)
# alternated in four rounds at 1-4 rows on the three shapes.
set -u
O=/tmp/o; mkdir -p $O
T0=$(date +%s); el() { echo "$1 $(( $(date +%s) - T0 )) s" >> $O/log.txt; }
bash bench/tools/carry_unpack.sh
mkdir -p /tmp/fs_deps; for f in .deps/*.deb; do dpkg -x "$f" /tmp/fs_deps; done
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $O/gpu.txt
N=/tmp/b-full
$N/tests/test_gpu_single > $O/single.txt 2>&1; echo "test_gpu_single rc=$?" >> $O/log.txt; el single
$N/tests/test_gpu_single_mutant_offset > $O/mutant_single.txt 2>&1
echo "mutant (offsets ignored) test_gpu_single rc=$? (must fail)" >> $O/log.txt; el mutant
for tool in memcheck racecheck; do
  compute-sanitizer --tool $tool --error-exitcode 1 $N/tests/test_gpu_single > $O/san_${tool}_single.txt 2>&1
  echo "$tool single rc=$? $(grep -h 'SUMMARY' $O/san_${tool}_single.txt | tail -1)" >> $O/log.txt; el $tool
done
env FS_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck --error-exitcode 1 $N/tests/test_gpu_agree > $O/san_memcheck_agree.txt 2>&1
echo "memcheck agree rc=$? $(grep -h 'SUMMARY' $O/san_memcheck_agree.txt | tail -1)" >> $O/log.txt; el memcheck_agree
( cd $N && ctest -L gpu -j3 --output-on-failure ) > $O/ctest.txt 2>&1; echo "ctest rc=$?" >> $O/log.txt; el ctest
for r in 1 2 3 4; do for v in prep single; do
  s=1; [ $v = prep ] && s=0
  env FLASHSPEC_SINGLE_LAUNCH=$s $N/bench/flashspec_bench --rows 1,2,4 --ops sample,argmax \
    --rounds 3 --reps 20 > $O/b_${v}_$r.txt 2>&1
  el "ab $v $r"
done; done
tar czf $OUT/out.tgz -C $O .
cat $O/log.txt
