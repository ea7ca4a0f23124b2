#!/usr/bin/env bash
# One device call: build for Hopper, run every test (GPU ones included) and
# the sanitizers, then the benchmark sweep.  Logs and results go to $OUT
# (the device tool's output folder) or bench/results/.
#   bench/tools/run_device.sh            tests + sanitizers + benchmark
#   bench/tools/run_device.sh tests      tests + sanitizers only
#   bench/tools/run_device.sh bench      benchmark + ncu profile of the Hopper scan
# Arguments after the first go to flashspec_bench.  FS_SANITIZE=0 skips the
# sanitizers.  cmocka and GSL come from .deps/*.deb when the machine lacks
# them (carry .deps).
set -uo pipefail
cd "$(dirname "$0")/../.."
export OUT="${OUT:-$PWD/bench/results}"
mkdir -p "$OUT"
what="${1:-all}"
shift || true
# one build tree serves the tests and the benchmark
export FS_BUILD_DIR=build-sm90a BUILD_DIR=build-sm90a FS_BENCH=ON
status=0
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
if [ "$what" = all ] || [ "$what" = tests ]; then
  bench/tools/run_gpu_tests.sh || status=1
fi
if [ "$what" = all ] || [ "$what" = bench ]; then
  bench/tools/run_bench.sh "$@" || status=1
  bench/tools/profile_hopper.sh || status=1
fi
exit $status
