#!/usr/bin/env bash
# Session 5, run 1: (a) W prefetch into L2 ahead of the stage loads
# (FLASHSPEC_HOPPER_PREFETCH = k-block steps ahead, 0 = off) in both Hopper
# kernels; (b) the rows kernel with its epilogue compiled out
# (FSHR_PROBE_NO_EPI: the mainloop alone, wrong tokens); (c) the rows
# kernel's SASS for offline reading.
# Needs commit b0e9bad (the prefetch knob was reverted in a30eea4).
source "$(dirname "$0")/common.sh"
build_bench build-a &
( cmake -S . -B build-probe -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
    -DFLASHSPEC_TESTS=OFF -DFLASHSPEC_BENCH=ON -DCMAKE_CUDA_FLAGS=-DFSHR_PROBE_NO_EPI=1 >/dev/null &&
  cmake --build build-probe -j16 --target flashspec_bench >/dev/null 2>&1 || echo "PROBE BUILD FAILED" ) &
wait
B=build-a/bench/flashspec_bench
sum() { grep -E "^(sample|argmax|verify) +(fs_|cublas_matmul)" "$1" | awk '{printf "%s %s %s %s %s %s\n",$1,$2,$3,$5,$7,$9}'; }
for pf in 0 4 8 16 0; do
  FLASHSPEC_HOPPER_PREFETCH=$pf timeout 100 $B --shapes 151936x4096,128256x8192 --rows 64,128,256,320 \
    --requests 16,32 --reps 20 --warmup 3 --gemm heuristic > $OUT/pf$pf.txt 2>&1
  echo "== pf $pf"; sum $OUT/pf$pf.txt | grep -v cublas_matmul | awk '{print $1,$3,$4,$5,$6}' | paste -sd' '
done
echo "== matmul"; sum $OUT/pf0.txt | grep cublas_matmul | awk '{print $1,$3,$4,$5}' | paste -sd' '
timeout 60 build-probe/bench/flashspec_bench --shapes 151936x4096,128256x8192 --rows 128,256,320 \
  --ops sample,argmax --reps 20 --warmup 3 --gemm heuristic > $OUT/probe_no_epi.txt 2>&1
echo "== probe (no epilogue)"; sum $OUT/probe_no_epi.txt | grep fs_ | awk '{print $1,$3,$4,$5,$6}' | paste -sd' '
o=$(find build-a -name 'scan_hopper_rows.cu.o' | head -1)
cuobjdump -sass "$o" | gzip > $OUT/rows_sass.txt.gz
ls -la $OUT
