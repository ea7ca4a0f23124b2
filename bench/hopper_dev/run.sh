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
nvcc $FLAGS -c bench/hopper_dev/hopper_dev.cu -o /tmp/hopper_dev.o > /tmp/build_driver.txt 2>&1 || { cat /tmp/build_driver.txt; exit 1; }
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
  # small shapes first: a hang or crash shows up here within two minutes
  timeout -s KILL 120 $BIN quick > "$OUT/quick.txt" 2>&1
  q=$?
  tail -n 12 "$OUT/quick.txt"
  echo "quick exit $q"
  if [ $q -ge 2 ]; then exit $q; fi  # crash / hang (1 = a check failed: go on and time)
  timeout -s KILL 300 $BIN > "$OUT/log.txt" 2>&1
  echo "exit $?" >> "$OUT/log.txt"
  # profile a few shapes (Speed Of Light), then print the benchmark's summary last
  if [ "${PROF:-1}" = 1 ] && command -v ncu > /dev/null; then
    for shape in "151936 4096 128" "151936 4096 320" "151936 4096 320 greedy"; do
      timeout -s KILL 60 ncu --section SpeedOfLight --section ComputeWorkloadAnalysis -k regex:fsh_scan \
        --launch-skip 1 --launch-count 1 $BIN prof $shape > /tmp/ncu_one.txt 2>&1
      { echo "== ncu $shape"; cat /tmp/ncu_one.txt; } >> "$OUT/ncu.txt"
      echo "== ncu $shape"; grep -E "Duration|DRAM Throughput|L2 Cache Throughput|Compute \(SM\)" /tmp/ncu_one.txt | head -6
    done
  fi
  grep -q "== summary ==" "$OUT/log.txt" || tail -n 40 "$OUT/log.txt"
  sed -n '/== summary ==/,$p' "$OUT/log.txt"
fi
nvidia-smi --query-gpu=clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv >> "$OUT/gpu.txt" 2>&1
