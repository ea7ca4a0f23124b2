#!/bin/bash
# Device call on two GPUs: the tensor-parallel tests (sharded contexts keep
# the merge kernel and the second pass's own launches; the merge's body and
# the host code between merge and finalize changed).
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/tp_tests.txt
(cd /tmp/b-full && timeout 240 ctest -R '^test_gpu_tp' --output-on-failure) >> $OUT/tp_tests.txt 2>&1
echo "ctest rc=$?" | tee -a $OUT/tp_tests.txt
grep -E 'Test +#|tests passed' $OUT/tp_tests.txt
