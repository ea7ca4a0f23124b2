#!/usr/bin/env bash
# call 8: the tile kernel's warpgroup 1 pushing its noise blocks half an
# interval after warpgroup 0 (FLASHSPEC_EPI_SKEW=1): A/B at 64-160 rows
# with the tile kernel up to 160 rows, agreement and chi-squared tests
set -u
T0=$(date +%s)
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
O=/tmp/o; mkdir -p $O/ab
B=/tmp/b-full
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,memory.total --format=csv > $O/gpu.txt 2>&1
X=$B/bench/flashspec_bench
OUT=$O/ab timeout 240 bash bench/tools/ab_rounds.sh -r 3 sk \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 64,96,144,160 --requests 13,32 --ops sample,argmax,verify --rounds 2 --reps 10 --warmup 3" \
  rows=$X tile=$X@FLASHSPEC_HOPPER_ROWS_MIN=161 skew=$X@FLASHSPEC_HOPPER_ROWS_MIN=161,FLASHSPEC_EPI_SKEW=1 > $O/ab_sk.txt 2>&1
echo "ab done $(( $(date +%s) - T0 ))" >> $O/times.txt
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
for S in 128256x8192 151936x4096; do for e in 0 1; do
  FLASHSPEC_HOPPER_ROWS_MIN=161 FLASHSPEC_EPI_SKEW=$e timeout 60 ncu --clock-control none -k regex:'fsh_scan' -c 2 --csv --metrics $M \
    $X --shapes $S --rows 160 --ops sample,argmax --rounds 1 --reps 1 --warmup 0 --gemm heuristic > $O/ncu_160_${S}_skew$e.csv 2>&1
done; done
echo "ncu done $(( $(date +%s) - T0 ))" >> $O/times.txt
(cd $B/tests && FLASHSPEC_EPI_SKEW=1 FLASHSPEC_HOPPER_ROWS_MIN=161 timeout 200 ./test_gpu_agree > $O/agree_skew.txt 2>&1; echo "rc=$?" >> $O/agree_skew.txt)
(cd $B/tests && FLASHSPEC_EPI_SKEW=1 FLASHSPEC_HOPPER_ROWS_MIN=161 timeout 100 ./test_gpu_stat > $O/stat_skew.txt 2>&1; echo "rc=$?" >> $O/stat_skew.txt)
echo "tests done $(( $(date +%s) - T0 ))" >> $O/times.txt
tar czf $OUT/out.tgz -C $O .
