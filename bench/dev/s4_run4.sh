#!/usr/bin/env bash
# Session 4, run 4: A/B of the rows kernel's epilogue -- both rows' LSE parts
# in one basic block (new) vs row after row (old: `git show 1aa1774:kernels/scan_hopper_rows.cu > bench/dev/_old_rows.cu` first; new: commit 1243bb5) --
# at 128 (rows kernel), 256 and 320 rows, alternating old / new twice.
source "$(dirname "$0")/common.sh"
rm -rf /tmp/old && mkdir -p /tmp/old && tar --exclude='./build*' -cf - . | tar -xf - -C /tmp/old
cp bench/dev/_old_rows.cu /tmp/old/kernels/scan_hopper_rows.cu
build_bench build-new &
build_bench /tmp/old/build /tmp/old &
wait
for round in 1 2; do
  for v in old new; do
    B=build-new/bench/flashspec_bench; [ $v = old ] && B=/tmp/old/build/bench/flashspec_bench
    timeout 100 $B --shapes 151936x4096,128256x8192 --rows 128,256,320 --ops sample,argmax --reps 20 --warmup 3 --gemm heuristic > $OUT/ab_epi_${v}_$round.txt 2>&1
    echo "== $v round $round"; grep -E "^(sample|argmax) +fs_" $OUT/ab_epi_${v}_$round.txt | awk '{print $1,$3,$5,$7}' | paste -sd' '
  done
done
