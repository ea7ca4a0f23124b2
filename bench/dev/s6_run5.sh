#!/usr/bin/env bash
# Session 6, run 5: remote arrives with default (.release.cta) semantics
# instead of .release.cluster; multicast on / off, two rounds; then ncu of the
# multicast and unicast rows kernel at 256 rows (sample, 128256 x 8192).
source "$(dirname "$0")/common.sh"
export FS_BUILD_DIR=build-sm90a
build_bench build-sm90a
A=build-sm90a/bench/flashspec_bench
summ() { grep -E '^(sample|argmax|verify) +fs_' $1 | awk '{print $1,$3,$5,$9}' | paste -sd' '; }
ARGS="--shapes 151936x4096,128256x8192 --rows 200,256,320 --requests 48,64 --reps 30 --warmup 3"
for round in 1 2; do
  timeout 90 $A $ARGS > $OUT/mc_$round.txt 2>&1; echo "== multicast $round: $(summ $OUT/mc_$round.txt)"
  FLASHSPEC_HOPPER_NO_MULTICAST=1 timeout 90 $A $ARGS > $OUT/nomc_$round.txt 2>&1; echo "== no multicast $round: $(summ $OUT/nomc_$round.txt)"
done
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for m in 0 1; do
  FLASHSPEC_HOPPER_NO_MULTICAST=$m timeout 120 $NCU --clock-control none --cache-control none -k regex:"fshr_scan_kernel" -s 2 -c 1 \
    --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis \
    $A --shapes 128256x8192 --rows 256 --ops sample --reps 3 --warmup 1 > $OUT/ncu_nomc$m.txt 2>&1
  echo "== ncu no_multicast=$m"; grep -E "Duration|Throughput|Stall|L2 Hit|Mem Busy|Max Bandwidth|Warp Cycles Per|Issued" $OUT/ncu_nomc$m.txt | head -30
done
