#!/bin/bash
# The device calls that made this folder (from the repository root, after
# bench/tools/carry_pack.sh /tmp/b-full; /tmp/fsb/filter_bench_base is
# filter_bench built at 7cc2e4d, filter_bench_new at 2647880, carried in
# carry-bin/extra.txz).
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
ROOT=$PWD; C=/tmp/fsb; O=/tmp/o; mkdir -p $O
nvidia-smi --query-gpu=name,power.limit --format=csv > $O/gpu.txt

## call 1, one H100: GPU tests, sanitizers, three alternations of filter_bench
(cd /tmp/b-full && timeout 230 ctest -R '^test_gpu_(filter|graph|tree|tree_generic|bad_input|agree|agree_generic|stat)$' --output-on-failure) > $O/ctest_gpu.txt 2>&1
for tool in memcheck initcheck; do
  FS_GPU_TEST_SMALL=1 timeout 60 /usr/local/cuda/bin/compute-sanitizer --tool $tool \
    --error-exitcode 1 /tmp/b-full/tests/test_gpu_filter > $O/san_${tool}_test_gpu_filter.txt 2>&1
done
ARGS="--rounds 2 --reps 10 --rows 1,4,16,64 --logits 1"
for r in 1 2 3; do for b in base new; do
  timeout 60 $C/filter_bench_$b $ARGS > $O/raw/filter_bench_${b}_$r.txt 2>&1
done; done
python3 $ROOT/bench/tools/filter_ab_table.py base="$O/raw/filter_bench_base_*.txt" \
  new="$O/raw/filter_bench_new_*.txt" > $O/filter_ab_table.txt

## call 2, one H100 (after the sweep of 2026-11-28-h100-sweep): the
## filtered tile kernel under ncu, one launch at a time, L2 flushed
for b in base new; do
  timeout 50 ncu --clock-control none --kernel-name regex:fsh_scan_kernel --csv \
    --metrics gpu__time_duration.sum,sm__inst_executed.sum \
    $C/filter_bench_$b --rows 1,64 --shapes 151936x4096 --logits 1 --rounds 1 --reps 3 \
    > $O/ncu_filt_$b.csv
done
for b in base new; do python3 $ROOT/bench/tools/ncu_kernel_medians.py $O/ncu_filt_$b.csv; done > $O/ncu_filt_medians.txt

## call 3, two GPUs (kind nvidia-h100-x2; it ran on two H200s)
export NCCL_NVLS_ENABLE=0
(cd /tmp/b-full && timeout 300 ctest -R '^test_gpu_(tp|tp_tree|realistic|single)$' --output-on-failure) > $O/tp_tests.txt 2>&1
