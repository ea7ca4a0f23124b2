#!/usr/bin/env bash
# One call on a multi-GPU machine (device kind nvidia-h200-x2 or -x4): build
# (or take prebuilt binaries from FS_TP_BIN), run the tensor-parallel tests,
# then the TP benchmark of every op on both model shapes.  NVLink multicast
# stays off, as the device machines require.
#   OUT=dir [FS_TP_BIN=dir] [FS_DEPS_DIR=.deps] bench/tools/run_tp.sh [tp_bench args]
set -uo pipefail
cd "$(dirname "$0")/../.."
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export OUT="${OUT:-$PWD/bench/results}"
mkdir -p "$OUT"
# cmocka and GSL from .deb files when the machine has no package access
DEPS="${FS_DEPS_DIR:-.deps}"
if [ -d "$DEPS" ] && ls "$DEPS"/*.deb >/dev/null 2>&1; then
  mkdir -p /tmp/fs_deps
  for d in "$DEPS"/*.deb; do dpkg -x "$d" /tmp/fs_deps; done
  export LD_LIBRARY_PATH="/tmp/fs_deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
  export CMAKE_PREFIX_PATH="/tmp/fs_deps/usr:${CMAKE_PREFIX_PATH:-}"
fi
nvidia-smi --query-gpu=index,name,memory.total,power.limit --format=csv | tee "$OUT/tp_gpus.txt"
nvidia-smi topo -m 2>/dev/null | tee -a "$OUT/tp_gpus.txt"
TARGETS="test_gpu_tp test_gpu_tp_tree tp_bench"
BIN="${FS_TP_BIN:-}"
if [ -z "$BIN" ]; then
  cmake -S . -B build-tp -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
    > "$OUT/tp_build.log" 2>&1 &&
  cmake --build build-tp -j"$(nproc)" --target $TARGETS >> "$OUT/tp_build.log" 2>&1 ||
  { tail -40 "$OUT/tp_build.log"; exit 1; }
  mkdir -p build-tp/bin
  cp build-tp/tests/test_gpu_tp build-tp/tests/test_gpu_tp_tree build-tp/bench/tp_bench build-tp/bin/
  BIN=build-tp/bin
fi
status=0
"$BIN/test_gpu_tp" 2>&1 | tee "$OUT/tp_test.log" || status=1
"$BIN/test_gpu_tp_tree" 2>&1 | tee "$OUT/tp_tree_test.log" || status=1
for shape in 151936x4096 128256x8192; do
  "$BIN/tp_bench" --vocab "${shape%x*}" --dim "${shape#*x}" --csv "$OUT/tp_scaling_$shape.csv" "$@" \
    2>&1 | tee "$OUT/tp_bench_$shape.log" || status=1
done
exit $status
