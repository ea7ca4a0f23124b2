#!/usr/bin/env bash
# call 11: the epilogue-warpgroup tile kernel for real: the single launch
# off (FLASHSPEC_SINGLE_LAUNCH=0; the EW kernels do not take it) in every
# setting, the tile kernel up to 160 rows; tests, ncu at 160 rows (plain,
# EW, EW reading only), calls
set -u
T0=$(date +%s)
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
O=/tmp/o; mkdir -p $O/ab
B=/tmp/b-full X=$B/bench/flashspec_bench
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,memory.total --format=csv > $O/gpu.txt 2>&1
export FLASHSPEC_SINGLE_LAUNCH=0 FLASHSPEC_HOPPER_ROWS_MIN=161
(cd $B/tests && FLASHSPEC_TILE_EPI_WG=1 timeout 40 ./test_gpu_stat > $O/stat_ew.txt 2>&1; echo "rc=$?" >> $O/stat_ew.txt)
(cd $B/tests && FLASHSPEC_TILE_EPI_WG=1 timeout 120 ./test_gpu_agree > $O/agree_ew.txt 2>&1; echo "rc=$?" >> $O/agree_ew.txt)
echo "tests done $(( $(date +%s) - T0 ))" >> $O/times.txt
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,launch__block_size
for S in 151936x4096 128256x8192; do for v in tile ew reads; do
  w=0; r=0; [ $v != tile ] && w=1; [ $v = reads ] && r=1
  FLASHSPEC_TILE_EPI_WG=$w FLASHSPEC_EW_READS_ONLY=$r timeout 40 ncu --clock-control none -k regex:'fsh_scan' -c 2 --csv --metrics $M \
    $X --shapes $S --rows 160 --ops sample,argmax --rounds 1 --reps 1 --warmup 0 --gemm heuristic > $O/ncu_160_${S}_$v.csv 2>&1
done; done
echo "ncu done $(( $(date +%s) - T0 ))" >> $O/times.txt
OUT=$O/ab timeout 120 bash bench/tools/ab_rounds.sh -r 2 ew2 \
  "--shapes 151936x4096,128256x8192 --rows 112,144,160 --requests 32 --ops sample,argmax,verify --rounds 2 --reps 10 --warmup 3" \
  tile=$X ew=$X@FLASHSPEC_TILE_EPI_WG=1 > $O/ab_ew2.txt 2>&1
echo "ab done $(( $(date +%s) - T0 ))" >> $O/times.txt
tar czf $OUT/out.tgz -C $O .
