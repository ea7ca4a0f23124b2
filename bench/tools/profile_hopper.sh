#!/usr/bin/env bash
# Nsight Compute counters of the Hopper scan (fsh_scan_kernel, or fshr_scan_kernel
# from FS_HOPPER_ROWS_MIN_DEFAULT rows up) inside fs_sample,
# V=151936 D=4096 bf16, at 16 rows (HBM-bound, on target) and 256 rows (where
# it misses): DRAM, L2 and tensor-pipe throughput say which limit binds.
# Clocks are left as found (--clock-control none).  Needs the build of
# bench/tools/run_device.sh (BUILD_DIR, default build-sm90a).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/bench/results}"
BUILD_DIR="${BUILD_DIR:-build-sm90a}"
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
mkdir -p "$OUT"
for rows in 16 256; do
  echo "=== fs_sample V=151936 D=4096 rows=$rows ==="
  "$NCU" --clock-control none -k regex:"fshr?_scan_kernel" -s 3 -c 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --metrics lts__t_bytes.sum.per_second,dram__bytes_read.sum.per_second,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active \
    "$BUILD_DIR/bench/flashspec_bench" --shapes 151936x4096 --rows "$rows" --ops sample \
    --reps 1 --warmup 3 2>&1 | grep -vE "^==PROF==|^\s*$"
done | tee "$OUT/profile_hopper.txt"
