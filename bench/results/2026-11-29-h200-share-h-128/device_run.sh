#!/usr/bin/env bash
# call 1: the list test (kept / mutant), A/B of sharing H at 96-128 rows
# (flashspec_bench, tree_bench, ncu), then the GPU suite
set -u
T0=$(date +%s)
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
O=/tmp/o; mkdir -p $O/ab
B=/tmp/b-full F=/tmp/fsb
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,memory.total --format=csv > $O/gpu.txt 2>&1
$F/test_gpu_rows_lists_kept > $O/rows_lists_kept.txt 2>&1; echo "rc=$?" >> $O/rows_lists_kept.txt
$F/test_gpu_rows_lists_mutant > $O/rows_lists_mutant.txt 2>&1; echo "rc=$?" >> $O/rows_lists_mutant.txt
OUT=$O/ab timeout 200 bash bench/tools/ab_rounds.sh -r 2 lone \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 96,128 --requests 20,24 --ops sample,argmax,verify --rounds 2 --reps 10 --warmup 3" \
  off=$B/bench/flashspec_bench@FLASHSPEC_HOPPER_SHARE_H128=0 new=$B/bench/flashspec_bench > $O/ab_lone.txt 2>&1
echo "ab done $(( $(date +%s) - T0 ))" >> $O/times.txt
for r in 1 2; do for v in off new; do
  e=1; [ $v = off ] && e=0
  FLASHSPEC_HOPPER_SHARE_H128=$e timeout 40 $B/bench/tree_bench --shapes 151936x4096,128256x8192 --requests 4 --nodes 24,31 --rounds 2 --reps 6 > $O/ab/tree_${v}_$r.txt 2>&1
done; done
echo "tree done $(( $(date +%s) - T0 ))" >> $O/times.txt
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__bytes_read.sum,lts__t_bytes.sum,l1tex__m_xbar2l1tex_read_bytes.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
for e in 0 1; do
  FLASHSPEC_HOPPER_SHARE_H128=$e timeout 60 ncu --clock-control none -k regex:'fshr_scan' -c 2 --csv --metrics $M \
    $B/bench/flashspec_bench --shapes 151936x4096 --rows 128 --ops sample,argmax --rounds 1 --reps 1 --warmup 0 --gemm heuristic > $O/ncu_128_share$e.csv 2>&1
done
timeout 45 ncu --clock-control none -k regex:'nvjet|gemm|cutlass|sm90' -c 1 --csv --metrics $M \
  $B/bench/flashspec_bench --shapes 151936x4096 --rows 128 --ops argmax --rounds 1 --reps 1 --warmup 0 --gemm heuristic > $O/ncu_128_cublas.csv 2>&1
echo "ncu done $(( $(date +%s) - T0 ))" >> $O/times.txt
LEFT=$(( 570 - ($(date +%s) - T0) ))
(cd $B && timeout $LEFT ctest -L gpu -j4 --timeout 300 > $O/ctest_gpu.txt 2>&1)
echo "ctest done $(( $(date +%s) - T0 ))" >> $O/times.txt
tar czf $OUT/out.tgz -C $O .
