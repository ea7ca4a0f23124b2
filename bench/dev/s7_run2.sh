#!/usr/bin/env bash
# Session 7, run 2: draft argmax without exponentials (rows kernel) and the
# op tail merging 4 rows per warp at once.  GPU tests (agreement default and
# rows-forced, graph, bad input); A/B against 17995c2 (ab_base.tar = git
# archive 17995c2), two alternating rounds; and a probe build without the
# tail (FS_PROBE_NO_TAIL: no outputs) to show what the tail still costs.
source "$(dirname "$0")/common.sh"
rm -rf /tmp/base && mkdir -p /tmp/base && tar -xf ab_base.tar -C /tmp/base
( build_bench build-b /tmp/base ) > $OUT/build_b.txt 2>&1 &
( cmake -S . -B build-p -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
    -DFLASHSPEC_TESTS=OFF -DFLASHSPEC_BENCH=ON -DCMAKE_CUDA_FLAGS=-DFS_PROBE_NO_TAIL=1 >/dev/null &&
  cmake --build build-p -j16 --target flashspec_bench >/dev/null 2>&1 || echo "BUILD FAILED (probe)" ) > $OUT/build_p.txt 2>&1 &
export FS_BUILD_DIR=build-sm90a FS_BENCH=ON FS_SANITIZE=0
FS_CTEST_REGEX='rowsm|test_gpu_agree|test_gpu_graph|test_gpu_bad_input' timeout 330 bash bench/run_gpu_tests.sh > $OUT/tests_stdout.txt 2>&1
echo "tests rc=$?"; grep -vE "^$" $OUT/gpu_tests_summary.txt | grep -v SKIP | tail -8
grep -E "agreement over all|near-tie|tests passed|Failed|FAILED" $OUT/gpu_tests.log | sort | uniq -c | head -20
grep -B2 -A12 -E "\[  FAILED|mismatch|disagree" $OUT/gpu_tests.log | head -60
wait
cat $OUT/build_b.txt $OUT/build_p.txt
A=build-sm90a/bench/flashspec_bench
B=build-b/bench/flashspec_bench
P=build-p/bench/flashspec_bench
ARGS="--shapes 151936x4096,128256x8192 --rows 16,64,128,256,320 --requests 32,64 --reps 30 --warmup 3"
summ() { grep -E '^(sample|argmax|verify) +fs_' $1 | awk '{print $1,$3,$5,$7,$9}' | paste -sd' '; }
for round in 1 2; do
  timeout 80 $A $ARGS > $OUT/new_$round.txt 2>&1; echo "== new $round: $(summ $OUT/new_$round.txt)"
  timeout 80 $B $ARGS > $OUT/old_$round.txt 2>&1; echo "== old $round: $(summ $OUT/old_$round.txt)"
done
timeout 80 $P $ARGS > $OUT/probe.txt 2>&1; echo "== probe (no tail): $(summ $OUT/probe.txt)"
grep -E "cublas_matmul" $OUT/new_1.txt | awk '{print $1,$3,$5,$7}' | paste -sd' '
