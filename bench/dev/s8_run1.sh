#!/usr/bin/env bash
# Session 8, run 1: the sampling noise drawn by the producer warpgroup's
# spare warps (noise_fill, under the tile's MMA) instead of in the epilogue.
# GPU tests (agreement default and rows-forced, graph, bad input); A/B
# against 7ac2973 (ab_base.tar = git archive 7ac2973), two alternating
# rounds, with the GPU's clocks, power and throttle reasons logged.
source "$(dirname "$0")/common.sh"
rm -rf /tmp/base && mkdir -p /tmp/base && tar -xf ab_base.tar -C /tmp/base
( build_bench build-b /tmp/base ) > $OUT/build_b.txt 2>&1 &
export FS_BUILD_DIR=build-sm90a FS_BENCH=ON FS_SANITIZE=0
# a hang (setmaxnreg past the register pool waits forever) must not eat the run
build_bench build-sm90a
timeout 40 build-sm90a/bench/flashspec_bench --shapes 151936x4096 --rows 128,256 --requests 64 --reps 3 --warmup 1 > $OUT/smoke.txt 2>&1
rc=$?; echo "smoke rc=$rc"; tail -3 $OUT/smoke.txt
[ $rc = 0 ] || exit 1
FS_CTEST_REGEX='rowsm|test_gpu_agree|test_gpu_graph|test_gpu_bad_input' timeout 330 bash bench/run_gpu_tests.sh > $OUT/tests_stdout.txt 2>&1
echo "tests rc=$?"; grep -vE "^$" $OUT/gpu_tests_summary.txt | grep -v SKIP | tail -8
grep -E "agreement over all|near-tie|tests passed|Failed|FAILED" $OUT/gpu_tests.log | sort | uniq -c | head -20
grep -B2 -A12 -E "\[  FAILED|mismatch|disagree" $OUT/gpu_tests.log | head -60
wait
cat $OUT/build_b.txt
A=build-sm90a/bench/flashspec_bench
B=build-b/bench/flashspec_bench
ARGS="--shapes 151936x4096,128256x8192 --rows 128,256,320 --requests 32,64 --reps 30 --warmup 3"
summ() { grep -E '^(sample|argmax|verify) +fs_' $1 | awk '{print $1,$3,$5,$7,$9}' | paste -sd' '; }
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 250 > $OUT/clocks.csv 2>&1 &
SMI=$!
for round in 1 2; do
  echo "new $round start $(date +%T.%N)" >> $OUT/marks.txt
  timeout 80 $A $ARGS > $OUT/new_$round.txt 2>&1; echo "== new $round: $(summ $OUT/new_$round.txt)"
  echo "old $round start $(date +%T.%N)" >> $OUT/marks.txt
  timeout 80 $B $ARGS > $OUT/old_$round.txt 2>&1; echo "== old $round: $(summ $OUT/old_$round.txt)"
done
kill $SMI
grep -E "cublas_matmul" $OUT/new_1.txt | awk '{print $1,$3,$5,$7}' | paste -sd' '
awk -F', ' '{print $2, $3, $5}' $OUT/clocks.csv | sort | uniq -c | sort -rn | head -12
