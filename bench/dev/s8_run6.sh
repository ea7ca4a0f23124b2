#!/usr/bin/env bash
# Session 8, run 6: (a) verify at 97-160 rows in the rows kernel
# (FLASHSPEC_HOPPER_ROWS_MIN=97, as sampling) vs the tile kernel (default):
# session 6 kept verify on the tile kernel there, but its rows-kernel times
# carried the per-column excluded-token path fixed in 09ab23b; two
# alternating rounds.  (b) the whole GPU test suite with every sanitizer step.
source "$(dirname "$0")/common.sh"
build_bench build-sm90a
A=build-sm90a/bench/flashspec_bench
ARGS="--shapes 151936x4096,128256x8192 --requests 20,24,28,32 --ops verify --reps 30 --warmup 3"
summ() { grep -E '^verify +(fs_verify|cublas_matmul)' $1 | awk '{print $2,$3,$5,$7,$9}' | paste -sd' '; }
for round in 1 2; do
  timeout 60 $A $ARGS > $OUT/tile_$round.txt 2>&1; echo "== tile $round: $(summ $OUT/tile_$round.txt)"
  FLASHSPEC_HOPPER_ROWS_MIN=97 timeout 60 $A $ARGS > $OUT/rows_$round.txt 2>&1; echo "== rows $round: $(summ $OUT/rows_$round.txt)"
done
export FS_BUILD_DIR=build-sm90a FS_BENCH=ON FS_SANITIZE=1
timeout 400 bash bench/run_gpu_tests.sh > $OUT/tests_stdout.txt 2>&1
echo "tests rc=$?"; grep -vE "^$" $OUT/gpu_tests_summary.txt | tail -30
grep -E "agreement over all|tests passed|FAILED|ERROR SUMMARY: [1-9]|RACECHECK SUMMARY: [1-9]" $OUT/gpu_tests.log | sort | uniq -c | head -20
