#!/usr/bin/env bash
# Two device calls on one H200 (builds made off the device, carried with
# bench/tools/carry_pack.sh /tmp/b-full; carry ["carry-bin", ".deps"]).
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
O=/tmp/o; mkdir -p $O/ab
B=/tmp/b-full
# call 2: the tile kernel up to 160 rows against the default
OUT=$O/ab bash bench/tools/ab_rounds.sh -r 2 t160 \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 136,144,160 --requests 26,29,32 --ops sample,argmax,verify --rounds 2 --reps 10 --warmup 3" \
  rows=$B/bench/flashspec_bench tile=$B/bench/flashspec_bench@FLASHSPEC_HOPPER_ROWS_MIN=161
for r in 1 2; do for v in rows tile; do
  m=0; [ $v = tile ] && m=161
  FLASHSPEC_HOPPER_ROWS_MIN=$m $B/bench/tree_bench --shapes 151936x4096,128256x8192,262144x3072 \
    --requests 16,4 --nodes 8,39 --rounds 2 --reps 6 > $O/ab/tree_${v}_$r.txt 2>&1
done; done
# call 3: the 192-row block, two 128-row blocks, the tile kernel
OUT=$O/ab bash bench/tools/ab_rounds.sh -r 2 rb \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 136,144,160,176,192 --requests 26,29,32,36 --ops sample,argmax,verify --rounds 2 --reps 10 --warmup 3" \
  r192=$B/bench/flashspec_bench r128=$B/bench/flashspec_bench@FLASHSPEC_HOPPER_ROW_BLOCK=128 \
  tile=$B/bench/flashspec_bench@FLASHSPEC_HOPPER_ROWS_MIN=161
for r in 1 2; do for v in r192 r128; do
  e=0; [ $v = r128 ] && e=128
  FLASHSPEC_HOPPER_ROW_BLOCK=$e $B/bench/tree_bench --shapes 151936x4096,128256x8192,262144x3072 \
    --requests 16,4 --nodes 8,39 --rounds 2 --reps 6 > $O/ab/tree_${v}_$r.txt 2>&1
done; done
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__bytes_read.sum,lts__t_bytes.sum,l1tex__m_xbar2l1tex_read_bytes.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
for v in r192 r128 tile; do
  case $v in r192) env="X=0";; r128) env="FLASHSPEC_HOPPER_ROW_BLOCK=128";; tile) env="FLASHSPEC_HOPPER_ROWS_MIN=161";; esac
  env $env ncu --clock-control none -k regex:'fshr?_scan' -c 2 --csv --metrics $M \
    $B/bench/flashspec_bench --shapes 128256x8192 --rows 144 --ops sample,argmax --rounds 1 --reps 1 --warmup 0 --gemm heuristic > $O/ncu_144_$v.csv 2>&1
done
ncu --clock-control none -k regex:'nvjet|gemm|cutlass|sm90' -c 1 --csv --metrics $M \
  $B/bench/flashspec_bench --shapes 128256x8192 --rows 144 --ops argmax --rounds 1 --reps 1 --warmup 0 --gemm heuristic > $O/ncu_144_cublas.csv 2>&1
