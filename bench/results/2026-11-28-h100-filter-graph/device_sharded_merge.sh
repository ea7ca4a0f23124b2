#!/bin/bash
# Device call on two GPUs after the filtered merge took the sharded contexts'
# merge too: the tensor-parallel tests, then the one-GPU tests of the
# filters (GPU 0) and memcheck of test_gpu_filter.
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export NCCL_NVLS_ENABLE=0
F=$OUT/sharded_merge_tests.txt
nvidia-smi --query-gpu=name --format=csv,noheader > $F
(cd /tmp/b-full && timeout 200 ctest -R '^test_gpu_(tp|tp_tree|filter|tree|graph|bad_input)$' --output-on-failure) >> $F 2>&1
echo "ctest rc=$?" | tee -a $F; grep -E 'Test +#|tests passed' $F
( FS_GPU_TEST_SMALL=1 CUDA_VISIBLE_DEVICES=0 timeout 100 /usr/local/cuda/bin/compute-sanitizer --tool memcheck --error-exitcode 1 /tmp/b-full/tests/test_gpu_filter ) > $OUT/memcheck.txt 2>&1
echo "memcheck rc=$?" | tee -a $F; grep 'ERROR SUMMARY' $OUT/memcheck.txt | tee -a $F
