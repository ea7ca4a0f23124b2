#!/bin/bash
# Device call on two GPUs: the tensor-parallel tests (sharded contexts do
# not use the wide resolve; the merge kernel they share changed).
set -u
bash bench/tools/carry_unpack.sh >/dev/null
mkdir -p /tmp/fs_deps; for f in .deps/*.deb; do dpkg -x "$f" /tmp/fs_deps; done
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/tp_tests.txt
(cd /tmp/b-full && timeout 240 ctest -R '^test_gpu_tp' --output-on-failure) >> $OUT/tp_tests.txt 2>&1
echo "ctest rc=$?" | tee -a $OUT/tp_tests.txt
grep -E 'Test +#|tests passed' $OUT/tp_tests.txt
