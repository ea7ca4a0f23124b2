#!/usr/bin/env bash
# Session 5, run 8: with W evict_normal in both kernels, 128 rows on the rows
# kernel (default for 97-128) vs the tile kernel's 128-row block
# (FLASHSPEC_HOPPER_ROWS_MIN=100000), and 96 rows the other way round
# (FLASHSPEC_HOPPER_ROWS_MIN=1), two alternating rounds.
source "$(dirname "$0")/common.sh"
build_bench build-a
B=build-a/bench/flashspec_bench
for round in 1 2; do
  for m in 0 100000 1; do
    FLASHSPEC_HOPPER_ROWS_MIN=$m timeout 60 $B --shapes 151936x4096,128256x8192 --rows 96,128 --requests 20 \
      --reps 30 --warmup 3 > $OUT/ab128_${m}_$round.txt 2>&1
    echo "== rows_min=$m round $round: $(grep -E '^(sample|argmax|verify) +fs_' $OUT/ab128_${m}_$round.txt | awk '{print $1,$3,$5,$7,$9}' | paste -sd' ')"
  done
done
