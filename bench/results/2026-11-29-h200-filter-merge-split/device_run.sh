#!/usr/bin/env bash
# One device call on one H200; the build with merge_split_probe.patch
# carried by bench/tools/carry_pack.sh.
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
O=/tmp/o; mkdir -p $O/ab
B=/tmp/b-full/bench
for r in 1 2 3; do
  $B/filter_bench --shapes 151936x4096,128256x8192 --rows 1,16,64 --logits 1 --rounds 2 --reps 10 > $O/ab/filter_one_$r.txt 2>&1
  FLASHSPEC_FILTER_SPLIT=1 $B/filter_bench --shapes 151936x4096,128256x8192 --rows 1,16,64 --logits 1 --rounds 2 --reps 10 > $O/ab/filter_split_$r.txt 2>&1
done
FLASHSPEC_FILTER_SPLIT=1 FS_TRACE_OUT=$O/trace_split.txt CUDA_INJECTION64_PATH=$B/libfs_kernel_trace.so \
  $B/filter_bench --shapes 151936x4096 --rows 1,64 --logits 1 --rounds 1 --reps 10 > /dev/null 2>&1
python3 bench/tools/kernel_trace_table.py $O/trace_split.txt > $O/trace_split_table.txt 2>&1
(cd /tmp/b-full && FLASHSPEC_FILTER_SPLIT=1 ctest -R 'test_gpu_filter$' --timeout 200 > $O/ctest_split.txt 2>&1)
# table off the device:
#   bench/tools/filter_ab_table.py one='ab/filter_one_[0-9].txt' split='ab/filter_split_[0-9].txt'
