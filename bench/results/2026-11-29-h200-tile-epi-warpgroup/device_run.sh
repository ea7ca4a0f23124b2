#!/usr/bin/env bash
# call 9: the tile kernel with an epilogue warpgroup pair on the staged
# tile (FLASHSPEC_TILE_EPI_WG=1, BN 128 / 160): agreement, chi-squared and
# tree tests with the tile kernel up to 160 rows, then A/B and ncu at
# 144-160 rows against the default and the tile kernel without it
set -u
T0=$(date +%s)
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
O=/tmp/o; mkdir -p $O/ab
B=/tmp/b-full
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,memory.total --format=csv > $O/gpu.txt 2>&1
export FLASHSPEC_TILE_EPI_WG=1 FLASHSPEC_HOPPER_ROWS_MIN=161
(cd $B/tests && timeout 40 ./test_gpu_stat > $O/stat_ew.txt 2>&1; echo "rc=$?" >> $O/stat_ew.txt)
(cd $B/tests && timeout 150 ./test_gpu_agree > $O/agree_ew.txt 2>&1; echo "rc=$?" >> $O/agree_ew.txt)
unset FLASHSPEC_TILE_EPI_WG FLASHSPEC_HOPPER_ROWS_MIN
echo "tests done $(( $(date +%s) - T0 ))" >> $O/times.txt
X=$B/bench/flashspec_bench
OUT=$O/ab timeout 150 bash bench/tools/ab_rounds.sh -r 2 ew \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 112,144,160 --requests 26,32 --ops sample,argmax,verify --rounds 2 --reps 10 --warmup 3" \
  rows=$X tile=$X@FLASHSPEC_HOPPER_ROWS_MIN=161 ew=$X@FLASHSPEC_HOPPER_ROWS_MIN=161,FLASHSPEC_TILE_EPI_WG=1 > $O/ab_ew.txt 2>&1
echo "ab done $(( $(date +%s) - T0 ))" >> $O/times.txt
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
for S in 128256x8192 151936x4096; do
  FLASHSPEC_HOPPER_ROWS_MIN=161 FLASHSPEC_TILE_EPI_WG=1 timeout 40 ncu --clock-control none -k regex:'fsh_scan' -c 2 --csv --metrics $M \
    $X --shapes $S --rows 160 --ops sample,argmax --rounds 1 --reps 1 --warmup 0 --gemm heuristic > $O/ncu_160_${S}_ew.csv 2>&1
done
echo "ncu done $(( $(date +%s) - T0 ))" >> $O/times.txt
tar czf $OUT/out.tgz -C $O .
