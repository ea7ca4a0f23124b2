#!/bin/bash
# Device call (2 GPUs): the tensor-parallel tests on the final build (the
# sharded resolve decides through the same decide and kept record).
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
O=/tmp/o; mkdir -p $O
(cd /tmp/b-full && timeout 150 ctest -R '^test_gpu_tp(_tree)?$' --output-on-failure) > $O/tp_tests.txt 2>&1
echo "ctest rc=$?" | tee -a $O/tp_tests.txt; grep -E 'Test +#|tests passed' $O/tp_tests.txt
cp $O/tp_tests.txt $OUT/
