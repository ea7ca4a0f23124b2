#!/usr/bin/env bash
# Session 8, run 5: the rows epilogue's excluded / selected path as select
# chains and one push (was a push per column, ~5000 instructions) against
# 279e5e9 (ab_base.tar): run 3's probe showed verify's scan 18% slower than
# sampling's only because of that path.  Agreement, graph and bad-input tests;
# A/B of verify (32, 64 requests) and sample 320 rows, two alternating rounds.
source "$(dirname "$0")/common.sh"
rm -rf /tmp/base && mkdir -p /tmp/base && tar -xf ab_base.tar -C /tmp/base
( build_bench build-b /tmp/base ) > $OUT/build_b.txt 2>&1 &
export FS_BUILD_DIR=build-sm90a FS_BENCH=ON FS_SANITIZE=0
FS_CTEST_REGEX='test_gpu_agree|test_gpu_graph|test_gpu_bad_input' timeout 300 bash bench/run_gpu_tests.sh > $OUT/tests_stdout.txt 2>&1
echo "tests rc=$?"; grep -E "agreement over all|tests passed|FAILED" $OUT/gpu_tests.log | sort | uniq -c | head
wait; cat $OUT/build_b.txt
A=build-sm90a/bench/flashspec_bench
B=build-b/bench/flashspec_bench
ARGS="--shapes 151936x4096,128256x8192 --rows 320 --requests 32,64 --ops sample,verify --reps 30 --warmup 3"
summ() { grep -E '^(sample|argmax|verify) +fs_' $1 | awk '{print $1,$3,$5,$7,$9}' | paste -sd' '; }
for round in 1 2; do
  timeout 80 $A $ARGS > $OUT/new_$round.txt 2>&1; echo "== new $round: $(summ $OUT/new_$round.txt)"
  timeout 80 $B $ARGS > $OUT/old_$round.txt 2>&1; echo "== old $round: $(summ $OUT/old_$round.txt)"
done
