#!/usr/bin/env bash
# Session 7, run 1: the rows kernel's half row block (the last <= 64 rows of
# a batch: CTAs of 64 rows x 512 tokens a step, two slots each) and draft
# argmax without exponentials.  GPU tests (agreement default and rows-forced,
# graph, bad input); SASS spill check; A/B against 17995c2 (ab_base.tar =
# git archive 17995c2), two alternating rounds.
source "$(dirname "$0")/common.sh"
rm -rf /tmp/base && mkdir -p /tmp/base && tar -xf ab_base.tar -C /tmp/base
( build_bench build-b /tmp/base ) > $OUT/build_b.txt 2>&1 &
export FS_BUILD_DIR=build-sm90a FS_BENCH=ON FS_SANITIZE=0
FS_CTEST_REGEX='rowsm|test_gpu_agree|test_gpu_graph|test_gpu_bad_input' timeout 330 bash bench/run_gpu_tests.sh > $OUT/tests_stdout.txt 2>&1
echo "tests rc=$?"; grep -vE "^$" $OUT/gpu_tests_summary.txt | tail -10
grep -E "agreement over all|near-tie|tests passed|Failed|FAILED" $OUT/gpu_tests.log | sort | uniq -c | head -20
grep -B2 -A12 -E "\[  FAILED|mismatch|disagree" $OUT/gpu_tests.log | head -60
wait
cat $OUT/build_b.txt
obj=$(find build-sm90a -name "scan_hopper_rows.cu.o" | head -1)
cuobjdump -sass "$obj" > /tmp/rows_sass.txt 2>/dev/null
echo "rows kernel SASS: HGMMA $(grep -c HGMMA /tmp/rows_sass.txt) LDL $(grep -c LDL /tmp/rows_sass.txt) STL $(grep -c STL /tmp/rows_sass.txt) lines $(wc -l < /tmp/rows_sass.txt)"
awk '/Function :/{f=$3} /LDL|STL/{print f": "$0}' /tmp/rows_sass.txt | head -20
A=build-sm90a/bench/flashspec_bench
B=build-b/bench/flashspec_bench
ARGS="--shapes 151936x4096,128256x8192 --rows 128,160,256,320 --requests 64 --reps 20 --warmup 3"
summ() { grep -E '^(sample|argmax|verify) +fs_' $1 | awk '{print $1,$3,$5,$9}' | paste -sd' '; }
for round in 1 2; do
  timeout 60 $A $ARGS > $OUT/new_$round.txt 2>&1; echo "== new $round: $(summ $OUT/new_$round.txt)"
  timeout 60 $B $ARGS > $OUT/old_$round.txt 2>&1; echo "== old $round: $(summ $OUT/old_$round.txt)"
done
grep -E "cublas_matmul" $OUT/new_1.txt | awk '{print $3,$5,$9}' | paste -sd' '
