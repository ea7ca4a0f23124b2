#!/usr/bin/env bash
# Runs on commit 31c9292 (the multicast; reverted in 1aa1774): FLASHSPEC_HOPPER_NO_MULTICAST exists only there.
# Session 4, run 2: the cluster arrival without .release.cluster (no MEMBAR);
# ncu at 256 rows, then the multicast A/B at 256/320 rows and 160 forced.
source "$(dirname "$0")/common.sh"
cmake --build build-sm90a -j16 --target flashspec_bench >/dev/null 2>&1 || echo BUILD FAILED
bash bench/dev/s4_prof1.sh 2>&1 | grep -E "===|gpu__time|lts__t_bytes|tensor|membar|long_score|wait "
B=build-sm90a/bench/flashspec_bench
for mc in 1 0; do
  if [ $mc = 0 ]; then export FLASHSPEC_HOPPER_NO_MULTICAST=1; fi
  timeout 120 $B --shapes 151936x4096,128256x8192 --rows 256,320 --requests 32,64 --reps 15 --warmup 3 > $OUT/ab_mc$mc.txt 2>&1
  echo "== multicast $mc"; grep -E "^(sample|argmax|verify) +(fs_|cublas_matmul)" $OUT/ab_mc$mc.txt | awk '{print $1,$2,$3,$5,$7,$9}'
done
unset FLASHSPEC_HOPPER_NO_MULTICAST
export FLASHSPEC_HOPPER_ROWS_MIN=129
timeout 120 $B --shapes 151936x4096,128256x8192 --rows 160 --requests 32 --reps 15 --warmup 3 > $OUT/ab_rows160.txt 2>&1
echo "== rows kernel from 129 rows"; grep -E "^(sample|argmax|verify) +fs_" $OUT/ab_rows160.txt | awk '{print $1,$3,$5,$7,$9}'
