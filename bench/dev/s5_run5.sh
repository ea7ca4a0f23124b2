#!/usr/bin/env bash
# Session 5, run 5: W loads evict_first (current) vs evict_normal in both
# Hopper kernels (FLASHSPEC_HOPPER_W_NORMAL=1), rows where one row block runs,
# two alternating rounds.
# Needs commit ce70b51 (the knob went when evict_normal became the default
# in 2eac044).
source "$(dirname "$0")/common.sh"
build_bench build-a
B=build-a/bench/flashspec_bench
sum() { grep -E "^(sample|argmax|verify) +fs_" "$1" | awk '{printf "%s %s %s %s\n",$1,$3,$5,$9}' | paste -sd' '; }
for round in 1 2; do
  for v in 0 1; do
    FLASHSPEC_HOPPER_W_NORMAL=$v timeout 100 $B --shapes 151936x4096,128256x8192 --rows 1,16,64,96,128 \
      --requests 8,16,32 --reps 20 --warmup 3 --gemm heuristic > $OUT/wpol${v}_$round.txt 2>&1
    echo "== normal=$v round $round: $(sum $OUT/wpol${v}_$round.txt)"
  done
done
