#!/usr/bin/env bash
# Session 6, run 4: the rows kernel with a producer warpgroup (setmaxnreg) and
# W multicast in clusters of 2-3 row blocks.  Agreement (rows forced, default),
# graph, bad input; then multicast on / off and the previous kernel
# (ab_base.tar = 495bea6), two alternating rounds.
source "$(dirname "$0")/common.sh"
rm -rf /tmp/base && mkdir -p /tmp/base && tar -xf ab_base.tar -C /tmp/base
( build_bench build-b /tmp/base ) > $OUT/build_b.txt 2>&1 &
export FS_BUILD_DIR=build-sm90a FS_BENCH=ON FS_SANITIZE=0
FS_CTEST_REGEX='test_gpu_agree$|_rowsm|test_gpu_graph|test_gpu_bad_input' timeout 420 bash bench/run_gpu_tests.sh > $OUT/tests_stdout.txt 2>&1
echo "tests rc=$?"; grep -E "agreement over all|tests passed|Failed|FAILED" $OUT/gpu_tests.log | sort | uniq -c | head -20
wait
A=build-sm90a/bench/flashspec_bench
B=build-b/bench/flashspec_bench
summ() { grep -E '^(sample|argmax|verify) +fs_' $1 | awk '{print $1,$3,$5,$9}' | paste -sd' '; }
ARGS="--shapes 151936x4096,128256x8192 --rows 128,200,256,320 --requests 48,64 --reps 30 --warmup 3"
for round in 1 2; do
  timeout 90 $A $ARGS > $OUT/mc_$round.txt 2>&1; echo "== multicast $round: $(summ $OUT/mc_$round.txt)"
  FLASHSPEC_HOPPER_NO_MULTICAST=1 timeout 90 $A $ARGS > $OUT/nomc_$round.txt 2>&1; echo "== no multicast $round: $(summ $OUT/nomc_$round.txt)"
  timeout 90 $B $ARGS > $OUT/old_$round.txt 2>&1; echo "== old $round: $(summ $OUT/old_$round.txt)"
done
