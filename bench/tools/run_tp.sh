#!/usr/bin/env bash
# One call on a multi-GPU machine (device kind nvidia-h200-x2 or -x4): build,
# run the tensor-parallel test, then the TP scaling benchmark.  NVLink
# multicast stays off, as the device machines require.
set -uo pipefail
cd "$(dirname "$0")/../.."
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OUT="${OUT:-$PWD/bench/results}"
mkdir -p "$OUT"
nvidia-smi --query-gpu=index,name,memory.total --format=csv | tee "$OUT/tp_gpus.txt"
nvidia-smi topo -m 2>/dev/null | tee -a "$OUT/tp_gpus.txt"
# the tests' cmocka and GSL from .deps/*.deb (as run_gpu_tests.sh) when the
# machine has no headers for them
cmake_extra=()
if [ ! -f /usr/include/cmocka.h ] || [ ! -d /usr/include/gsl ]; then
  if compgen -G ".deps/*.deb" >/dev/null; then
    prefix="$PWD/build-tp-deps"
    mkdir -p "$prefix"
    for f in .deps/*.deb; do dpkg -x "$f" "$prefix"; done
    export LD_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
    cmake_extra+=("-DCMAKE_PREFIX_PATH=$prefix/usr" "-DGSL_ROOT_DIR=$prefix/usr")
  fi
fi
# always (re)build: an incremental build is quick, a stale binary misleads
{ [ -f build-tp/CMakeCache.txt ] ||
  cmake -S . -B build-tp -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
    "${cmake_extra[@]}"; } \
  > "$OUT/tp_build.log" 2>&1 &&
cmake --build build-tp -j"$(nproc)" --target test_gpu_tp tp_bench >> "$OUT/tp_build.log" 2>&1 ||
{ tail -40 "$OUT/tp_build.log"; exit 1; }
status=0
build-tp/tests/test_gpu_tp 2>&1 | tee "$OUT/tp_test.log" || status=1
build-tp/bench/tp_bench --csv "$OUT/tp_scaling.csv" "$@" 2>&1 | tee "$OUT/tp_bench.log" || status=1
exit $status
