#!/usr/bin/env bash
# Session 3: tensor-parallel test + scaling on 2 GPUs (cmocka/GSL from .deps).
source "$(dirname "$0")/common.sh"
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
prefix=/tmp/fs_deps; mkdir -p $prefix
for f in .deps/*.deb; do dpkg -x "$f" $prefix; done
libdir=$prefix/usr/lib/x86_64-linux-gnu
export LD_LIBRARY_PATH="$libdir:$prefix/usr/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
cmake -S . -B build-tp -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90a-real \
  -DCMAKE_PREFIX_PATH=$prefix/usr -DGSL_ROOT_DIR=$prefix/usr > $OUT/tp_build.log 2>&1 &&
cmake --build build-tp -j"$(nproc)" --target test_gpu_tp tp_bench >> $OUT/tp_build.log 2>&1 || { tail -30 $OUT/tp_build.log; exit 1; }
nvidia-smi --query-gpu=index,name --format=csv
timeout 200 build-tp/tests/test_gpu_tp 2>&1 | tee $OUT/tp_test.log | tail -15
timeout 150 build-tp/bench/tp_bench --csv $OUT/tp_scaling.csv 2>&1 | tee $OUT/tp_bench.log | tail -20
