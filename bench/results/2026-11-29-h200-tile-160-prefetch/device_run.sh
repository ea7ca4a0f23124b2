#!/usr/bin/env bash
# call 6: the tile kernel at 136-160 rows with W prefetched into L2 ahead of
# its stage loads (FLASHSPEC_HOPPER_PREFETCH steps), against the default
# (the rows kernel's 192-row block) and the tile kernel without it
set -u
T0=$(date +%s)
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
O=/tmp/o; mkdir -p $O/ab
B=/tmp/b-full
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,memory.total --format=csv > $O/gpu.txt 2>&1
X=$B/bench/flashspec_bench
OUT=$O/ab timeout 300 bash bench/tools/ab_rounds.sh -r 2 pf \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 136,160 --requests 29,32 --ops sample,argmax,verify --rounds 2 --reps 10 --warmup 3" \
  rows=$X tile=$X@FLASHSPEC_HOPPER_ROWS_MIN=161 pf4=$X@FLASHSPEC_HOPPER_ROWS_MIN=161,FLASHSPEC_HOPPER_PREFETCH=4 \
  pf8=$X@FLASHSPEC_HOPPER_ROWS_MIN=161,FLASHSPEC_HOPPER_PREFETCH=8 pf16=$X@FLASHSPEC_HOPPER_ROWS_MIN=161,FLASHSPEC_HOPPER_PREFETCH=16 > $O/ab_pf.txt 2>&1
echo "ab done $(( $(date +%s) - T0 ))" >> $O/times.txt
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__bytes_read.sum,lts__t_bytes.sum,l1tex__m_xbar2l1tex_read_bytes.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
for pf in 0 8 16; do
  FLASHSPEC_HOPPER_ROWS_MIN=161 FLASHSPEC_HOPPER_PREFETCH=$pf timeout 60 ncu --clock-control none -k regex:'fsh_scan' -c 2 --csv --metrics $M --section WarpStateStats \
    $X --shapes 128256x8192 --rows 144 --ops sample,argmax --rounds 1 --reps 1 --warmup 0 --gemm heuristic > $O/ncu_144_pf$pf.csv 2>&1
done
echo "ncu done $(( $(date +%s) - T0 ))" >> $O/times.txt
tar czf $OUT/out.tgz -C $O .
