#!/usr/bin/env bash
# Session 6, run 6: at 129-160 rows, the rows kernel (now with W multicast in
# 2-CTA clusters; FLASHSPEC_HOPPER_ROWS_MIN=97) vs the tile kernel (default),
# every op, two alternating rounds.
source "$(dirname "$0")/common.sh"
build_bench build-sm90a
A=build-sm90a/bench/flashspec_bench
summ() { grep -E '^(sample|argmax|verify) +fs_' $1 | awk '{print $1,$3,$5,$9}' | paste -sd' '; }
ARGS="--shapes 151936x4096,128256x8192 --rows 144,160 --requests 29,32 --reps 30 --warmup 3"
for round in 1 2; do
  FLASHSPEC_HOPPER_ROWS_MIN=97 timeout 90 $A $ARGS > $OUT/rows_$round.txt 2>&1; echo "== rows kernel $round: $(summ $OUT/rows_$round.txt)"
  timeout 90 $A $ARGS > $OUT/tile_$round.txt 2>&1; echo "== tile kernel $round: $(summ $OUT/tile_$round.txt)"
done
