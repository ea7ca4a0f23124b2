#!/usr/bin/env bash
# Session 6, run 3: how many 2- and 3-CTA clusters fit at once, and the rows
# kernel with W multicast in clusters of 2 (129-256 rows) or 3 (257-384 rows)
# row blocks, slots capped at the clusters that fit.  Rows-forced and default
# agreement; multicast on vs off, two alternating rounds.
source "$(dirname "$0")/common.sh"
nvcc -arch=sm_90a -o /tmp/occ bench/dev/cluster_occupancy.cu && /tmp/occ | tee $OUT/cluster_occupancy.txt
export FS_BUILD_DIR=build-sm90a FS_BENCH=ON FS_SANITIZE=0
FS_CTEST_REGEX='test_gpu_agree$|_rowsm' timeout 420 bash bench/run_gpu_tests.sh > $OUT/tests_stdout.txt 2>&1
echo "tests rc=$?"; grep -E "agreement over all|tests passed|Failed|FAILED" $OUT/gpu_tests.log | sort | uniq -c | head -20
A=build-sm90a/bench/flashspec_bench
summ() { grep -E '^(sample|argmax|verify) +fs_' $1 | awk '{print $1,$3,$5,$9}' | paste -sd' '; }
ARGS="--shapes 151936x4096,128256x8192 --rows 200,256,320 --requests 48,64 --reps 30 --warmup 3"
for round in 1 2; do
  timeout 90 $A $ARGS > $OUT/mc_$round.txt 2>&1; echo "== multicast $round: $(summ $OUT/mc_$round.txt)"
  FLASHSPEC_HOPPER_NO_MULTICAST=1 timeout 90 $A $ARGS > $OUT/nomc_$round.txt 2>&1; echo "== no multicast $round: $(summ $OUT/nomc_$round.txt)"
done
