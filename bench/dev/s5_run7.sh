#!/usr/bin/env bash
# Session 5, run 7: every test (no sanitizers: the kernels changed only their
# W cache policy) and the canonical sweep on the final code, then an A/B at
# 160 rows: the tile kernel's 160-row block (default) vs the rows kernel's
# two 128-row blocks (FLASHSPEC_HOPPER_ROWS_MIN=129), two rounds.
source "$(dirname "$0")/common.sh"
FS_SANITIZE=0 timeout 520 bash bench/run_device.sh all > $OUT/run_device_stdout.txt 2>&1
echo "run_device rc=$?"
grep -vE "SKIP|^$" $OUT/gpu_tests_summary.txt | tail -40
grep -E "agreement over all" $OUT/gpu_tests.log | sort | uniq -c
grep -E " (PASS|MISS) " $OUT/bench.txt | awk '{print $1,$2,$3,$5,$8,$10}' | paste -sd' ' | fold -w 4000
B=build-sm90a/bench/flashspec_bench
for round in 1 2; do
  for m in 0 129; do
    FLASHSPEC_HOPPER_ROWS_MIN=$m timeout 60 $B --shapes 151936x4096,128256x8192 --rows 160 --requests 32 \
      --reps 20 --warmup 3 > $OUT/ab160_${m}_$round.txt 2>&1
    echo "== rows_min=$m round $round: $(grep -E '^(sample|argmax|verify) +fs_' $OUT/ab160_${m}_$round.txt | awk '{print $1,$3,$5,$9}' | paste -sd' ')"
  done
done
