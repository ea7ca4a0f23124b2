#!/usr/bin/env bash
# The commands of this folder, run on one H200 over several device calls.
# Builds off the device (bench/tools/carry_pack.sh /tmp/b-full), carry
# ["carry-bin", ".deps"]; /tmp/fsb holds 189e97e's filter_bench (filter_base)
# and the probe build with -DCMAKE_CUDA_FLAGS=-DFSHR_PROBE_NO_LISTS=1
# (filter_p1), packed as carry-bin/extra.txz.
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
O=/tmp/o; mkdir -p $O/ab
B=/tmp/b-full/bench F=/tmp/fsb
# tests (each build)
(cd /tmp/b-full/tests && ./test_gpu_filter > $O/test_gpu_filter.txt 2>&1)
(cd /tmp/b-full/tests && FS_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck --error-exitcode 9 ./test_gpu_filter > $O/memcheck_filter.txt 2>&1)
(cd /tmp/b-full/tests && FS_GPU_TEST_SMALL=1 compute-sanitizer --tool racecheck --error-exitcode 9 ./test_gpu_filter > $O/racecheck_filter.txt 2>&1)
(cd /tmp/b-full && ctest -L gpu -j4 --timeout 400 > $O/ctest_gpu.txt 2>&1)
# the mutant (tests/test_gpu_filter built from a copy with mutant_fast_drop.patch applied)
(cd /tmp/b-mut/tests && ./test_gpu_filter > $O/mutant_fast_drop.txt 2>&1)
# kernel timelines: the list kernels and the probe without lists
T="--shapes 151936x4096,128256x8192 --rows 64,200 --logits 1 --rounds 2 --reps 5"
for v in new p1; do
  bin=$B/filter_bench; [ $v = p1 ] && bin=$F/filter_p1
  FS_TRACE_OUT=$O/trace_$v.txt CUDA_INJECTION64_PATH=$B/libfs_kernel_trace.so $bin $T > $O/fb_$v.txt 2>&1
done
#   bench/tools/kernel_trace_table.py trace_new.txt > trace_table_lists.txt (and p1)
# one launch under ncu, 200 rows
A="--shapes 151936x4096 --rows 200 --logits 1 --rounds 1 --reps 1"
M=gpu__time_duration.sum,smsp__inst_executed.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__cycles_active.avg,sm__cycles_elapsed.avg.per_second,dram__bytes_read.sum,lts__t_bytes.sum
ncu --clock-control none --kernel-name-base mangled -k regex:'fshr_scan.*Lb1EEEv' -c 2 --csv --metrics $M --section WarpStateStats $B/filter_bench $A > $O/ncu_filt_new.csv
ncu --clock-control none --kernel-name-base mangled -k regex:'fshr_scan.*Lb1EEEv' -c 2 --csv --metrics $M --section WarpStateStats $F/filter_p1 $A > $O/ncu_filt_p1.csv
ncu --clock-control none --kernel-name-base mangled -k regex:'fshr_scan.*Lb0EEEv' -c 2 --csv --metrics $M --section WarpStateStats $B/filter_bench $A > $O/ncu_unf.csv
# A/B against 189e97e (ab_rows_*: one job a CTA at every count, with the
# list kernels from 97 rows as a third build; ab_jobs33_*: the same rule,
# later lease; ab_jobs_*: the kept rule; ab_moderate_flat_*)
OUT=$O/ab bash bench/tools/ab_rounds.sh -r 1 rows \
  "--shapes 151936x4096,128256x8192 --rows 100,128,160,256,512 --logits 1 --rounds 1 --reps 5" \
  base=$F/filter_base new=$B/filter_bench r97=$B/filter_bench@FLASHSPEC_FILTER_ROWS_MIN=97
OUT=$O/ab bash bench/tools/ab_rounds.sh -r 1 jobs \
  "--shapes 151936x4096,128256x8192 --rows 256,512 --logits 1 --rounds 1 --reps 5" \
  base=$F/filter_base new=$B/filter_bench
OUT=$O/ab bash bench/tools/ab_rounds.sh -r 2 mod \
  "--shapes 151936x4096,128256x8192 --rows 200 --logits 2,0 --rounds 1 --reps 5" \
  base=$F/filter_base new=$B/filter_bench
