#!/usr/bin/env bash
# The two device calls that made this folder, on a build made off the device
# and carried with bench/tools/carry_pack.sh (the mutants' test binaries in
# it too: the build with each *.patch applied).
#   device_run.sh tests   GPU ctest (FS_NO_CTEST=1: not); test_gpu_single and the two mutants
#                         (which must fail it); compute-sanitizer memcheck,
#                         racecheck and initcheck of test_gpu_single and
#                         memcheck of test_gpu_agree, small mode
#   device_run.sh bench   the same benchmark binary with and without the
#                         single launch (FLASHSPEC_SINGLE_LAUNCH=0: prep,
#                         merge and finalize kernels) alternated in four
#                         rounds, every op at the tile kernel's row counts
set -u
mode=${1:-tests}
O=/tmp/o; mkdir -p $O
T0=$(date +%s); el() { echo "$1 $(( $(date +%s) - T0 )) s" >> $O/log_$mode.txt; }
bash bench/tools/carry_unpack.sh
mkdir -p /tmp/fs_deps; for f in .deps/*.deb; do dpkg -x "$f" /tmp/fs_deps; done
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $O/gpu.txt
N=/tmp/b-full
if [ "$mode" = tests ]; then
  $N/tests/test_gpu_single > $O/single.txt 2>&1; echo "test_gpu_single rc=$?" >> $O/log_$mode.txt; el single
  for m in offsets request; do
    $N/tests/test_gpu_single_mutant_$m > $O/mutant_$m.txt 2>&1
    echo "mutant $m: test_gpu_single rc=$? (must fail)" >> $O/log_$mode.txt; el mutant_$m
  done
  for tool in memcheck racecheck initcheck; do
    env FS_GPU_TEST_SMALL=1 compute-sanitizer --tool $tool --error-exitcode 1 $N/tests/test_gpu_single > $O/san_${tool}_single.txt 2>&1
    echo "$tool single rc=$? $(grep -h 'SUMMARY' $O/san_${tool}_single.txt | tail -1)" >> $O/log_$mode.txt; el $tool
  done
  env FS_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck --error-exitcode 1 $N/tests/test_gpu_agree > $O/san_memcheck_agree.txt 2>&1
  echo "memcheck agree rc=$? $(grep -h 'SUMMARY' $O/san_memcheck_agree.txt | tail -1)" >> $O/log_$mode.txt; el memcheck_agree
  if [ -z "${FS_NO_CTEST:-}" ]; then
    ( cd $N && ctest -L gpu -j3 --output-on-failure ) > $O/ctest.txt 2>&1; echo "ctest rc=$?" >> $O/log_$mode.txt; el ctest
  fi
fi
if [ "$mode" = bench ] || [ -n "${FS_AND_BENCH:-}" ]; then
  for r in 1 2 3 4; do for v in prep single; do
    s=1; [ $v = prep ] && s=0
    env FLASHSPEC_SINGLE_LAUNCH=$s $N/bench/flashspec_bench --rows 1,2,4,8,16,32,64,96 \
      --requests 1,2,4,8,16,19 --ops sample,argmax,verify --rounds 3 --reps 15 > $O/b_${v}_$r.txt 2>&1
    el "ab $v $r"
  done; done
fi
tar czf $OUT/out.tgz -C $O .
cat $O/log_*.txt
