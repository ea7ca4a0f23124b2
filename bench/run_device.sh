#!/usr/bin/env bash
# One device call: build for Hopper, run every test (GPU ones included) and
# the sanitizers, then the benchmark sweep.  Logs and results go to $OUT
# (the device tool's output folder) or bench/results/.
#   bench/run_device.sh            tests + sanitizers + benchmark
#   bench/run_device.sh tests      tests + sanitizers only
#   bench/run_device.sh bench      benchmark only
set -uo pipefail
cd "$(dirname "$0")/.."
export OUT="${OUT:-$PWD/bench/results}"
mkdir -p "$OUT"
what="${1:-all}"
status=0
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
if [ "$what" = all ] || [ "$what" = tests ]; then
  bench/run_gpu_tests.sh || status=1
fi
if [ "$what" = all ] || [ "$what" = bench ]; then
  bench/run_bench.sh || status=1
fi
exit $status
