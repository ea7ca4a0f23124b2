#!/usr/bin/env bash
# call 7: the tile kernel at 136-160 rows with its noise-block pushes
# compiled in but skipped (FLASHSPEC_PROBE_NO_EPI=1, wrong tokens): how much
# of its time the epilogue costs where rows are N = 160, against cuBLAS
set -u
T0=$(date +%s)
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
O=/tmp/o; mkdir -p $O/ab
B=/tmp/b-full
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,memory.total --format=csv > $O/gpu.txt 2>&1
X=$B/bench/flashspec_bench
OUT=$O/ab timeout 200 bash bench/tools/ab_rounds.sh -r 2 ne \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 144,160 --ops sample,argmax --rounds 2 --reps 10 --warmup 3" \
  rows=$X tile=$X@FLASHSPEC_HOPPER_ROWS_MIN=161 noepi=$X@FLASHSPEC_HOPPER_ROWS_MIN=161,FLASHSPEC_PROBE_NO_EPI=1 > $O/ab_ne.txt 2>&1
echo "ab done $(( $(date +%s) - T0 ))" >> $O/times.txt
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__bytes_read.sum,l1tex__m_xbar2l1tex_read_bytes.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio
for S in 128256x8192 151936x4096; do for v in tile noepi; do
  e=0; [ $v = noepi ] && e=1
  FLASHSPEC_HOPPER_ROWS_MIN=161 FLASHSPEC_PROBE_NO_EPI=$e timeout 60 ncu --clock-control none -k regex:'fsh_scan' -c 2 --csv --metrics $M \
    $X --shapes $S --rows 160 --ops sample,argmax --rounds 1 --reps 1 --warmup 0 --gemm heuristic > $O/ncu_160_${S}_$v.csv 2>&1
done; done
echo "ncu done $(( $(date +%s) - T0 ))" >> $O/times.txt
tar czf $OUT/out.tgz -C $O .
