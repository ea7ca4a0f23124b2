#!/usr/bin/env bash
# call 5: the list kernels' fourth-best bound (cand_list_tile): the list test
# on the build and on two mutants, test_gpu_filter (+ memcheck, small),
# filter_bench against the build before it, ncu of one list-kernel scan
set -u
T0=$(date +%s)
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
O=/tmp/o; mkdir -p $O/ab
B=/tmp/b-full F=/tmp/fsb
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,memory.total --format=csv > $O/gpu.txt 2>&1
(cd $B/tests && ./test_gpu_rows_lists > $O/rows_lists.txt 2>&1; echo "rc=$?" >> $O/rows_lists.txt)
for m in 1 2; do $F/test_gpu_rows_lists_mut$m > $O/rows_lists_mutant$m.txt 2>&1; echo "rc=$?" >> $O/rows_lists_mutant$m.txt; done
(cd $B/tests && timeout 150 ./test_gpu_filter > $O/test_gpu_filter.txt 2>&1; echo "rc=$?" >> $O/test_gpu_filter.txt)
echo "tests done $(( $(date +%s) - T0 ))" >> $O/times.txt
A="--shapes 151936x4096,128256x8192 --rows 64,256,512 --logits 1 --rounds 1 --reps 5"
for r in 1 2 3; do
  for v in base new; do
    bin=$B/bench/filter_bench; [ $v = base ] && bin=$F/base/filter_bench
    timeout 120 $bin $A > $O/ab/fb_${v}_$r.txt 2>&1
  done
done
echo "ab done $(( $(date +%s) - T0 ))" >> $O/times.txt
M=gpu__time_duration.sum,smsp__inst_executed.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__cycles_active.avg,sm__cycles_elapsed.avg.per_second
A1="--shapes 151936x4096 --rows 256 --logits 1 --rounds 1 --reps 1"
for v in base new; do
  bin=$B/bench/filter_bench; [ $v = base ] && bin=$F/base/filter_bench
  timeout 90 ncu --clock-control none --kernel-name-base mangled -k regex:'fshr_scan.*Lb1EEEv' -c 3 --csv --metrics $M $bin $A1 > $O/ncu_filt_$v.csv 2>&1
done
echo "ncu done $(( $(date +%s) - T0 ))" >> $O/times.txt
LEFT=$(( 560 - ($(date +%s) - T0) ))
(cd $B/tests && FS_GPU_TEST_SMALL=1 timeout $LEFT compute-sanitizer --tool memcheck --error-exitcode 9 ./test_gpu_filter > $O/memcheck_filter.txt 2>&1; echo "rc=$?" >> $O/memcheck_filter.txt)
echo "memcheck done $(( $(date +%s) - T0 ))" >> $O/times.txt
tar czf $OUT/out.tgz -C $O .
