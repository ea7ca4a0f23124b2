#!/usr/bin/env bash
# One device call: build the standalone Hopper-scan driver, check it against
# the reference, time it against cuBLAS and the HBM floor.  Logs go to $OUT.
#   bench/hopper_dev/run.sh [quick]
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-/tmp/hopper_dev_out}"
mkdir -p "$OUT"
BIN=/tmp/hopper_dev
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.draw,temperature.gpu --format=csv > "$OUT/gpu.txt" 2>&1
cat "$OUT/gpu.txt"
FLAGS="-std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -lineinfo -Iinclude -Isrc -Ikernels"
( nvcc $FLAGS -Xptxas=-v,-warn-spills -c kernels/scan_hopper.cu -o /tmp/scan_hopper.o > "$OUT/build_kernel.txt" 2>&1; echo "kernel rc=$?" >> "$OUT/build_kernel.txt" ) &
nvcc $FLAGS -c bench/hopper_dev/hopper_dev.cu -o /tmp/hopper_dev.o > "$OUT/build_driver.txt" 2>&1 || { cat "$OUT/build_driver.txt"; exit 1; }
wait
grep -E "rc=|error|Used|spill|C75" "$OUT/build_kernel.txt" | sort | uniq -c
grep -q "kernel rc=0" "$OUT/build_kernel.txt" || { cat "$OUT/build_kernel.txt"; exit 1; }
nvcc -gencode=arch=compute_90a,code=sm_90a /tmp/hopper_dev.o /tmp/scan_hopper.o -lcublas -o $BIN || exit 1
cuobjdump -sass /tmp/scan_hopper.o > "$OUT/sass.txt" 2>&1
echo "SASS: HGMMA $(grep -c HGMMA "$OUT/sass.txt"), UTMALDG $(grep -c UTMALDG "$OUT/sass.txt"), LDL/STL $(grep -cE 'LDL|STL' "$OUT/sass.txt")"
if [ "${1:-}" = quick ]; then
  timeout -s KILL 300 $BIN quick 2>&1 | tee "$OUT/log.txt"
  echo "exit ${PIPESTATUS[0]}"
else
  # small shapes first (clusters included); if they hang or fail, time without clusters
  timeout -s KILL 120 $BIN quick > "$OUT/quick.txt" 2>&1
  q=$?
  tail -n 30 "$OUT/quick.txt"
  echo "quick exit $q"
  if [ $q -ne 0 ]; then export FSH_NOCLUSTER=1; fi
  timeout -s KILL 300 $BIN 2>&1 | tee "$OUT/log.txt"
  echo "exit ${PIPESTATUS[0]}"
fi
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> "$OUT/gpu.txt" 2>&1
