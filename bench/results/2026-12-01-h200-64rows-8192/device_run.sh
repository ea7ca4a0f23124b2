#!/usr/bin/env bash
# The device call that made this folder (one H200), from the repository
# root with carry ["carry-bin"]: carry-bin/all.txz holds flashspec_bench of
# the folder's commit, packed off the device with its absolute path
# (tar cPf - /tmp/b-full/bench/flashspec_bench | xz > carry-bin/all.txz).
set -u
source bench/tools/device_env.sh
( sleep 575; tar czf "$OUT/out.tgz" -C "$O" . ) &
X=$B/bench/flashspec_bench
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
# (a) is this lease one where 64 rows on 128256 x 8192 cost 1.03+ x bound?
timeout 120 $X --shapes 128256x8192,151936x4096 --rows 16,64 --requests 4 --rounds 3 --reps 20 > $O/bench_64.txt 2>&1
el bench
# (b) one launch each under ncu, clocks free: the 64-row scan (sample,
# draft argmax) and cuBLAS's kernel, DRAM and L2 rates, tensor pipe, clock
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
mkdir -p $O/ncu
for c in 128256x8192:64 151936x4096:64 128256x8192:16; do
  sh=${c%:*}; r=${c#*:}
  for op in sample argmax; do
    timeout 60 $NCU --clock-control none -k regex:'fshr?_scan' -c 1 --csv --metrics $M $X --shapes $sh --rows $r \
      --ops $op --reps 1 --warmup 0 --gemm heuristic > $O/ncu/ncu_${sh}_${r}_${op}.csv 2>&1
  done
  timeout 60 $NCU --clock-control none -k regex:'nvjet|gemm|cutlass' -c 1 --csv --metrics $M $X --shapes $sh --rows $r \
    --ops argmax --reps 1 --warmup 0 --gemm heuristic > $O/ncu/ncu_${sh}_${r}_cublas.csv 2>&1
  el "ncu $c"
done
tar czf "$OUT/out.tgz" -C "$O" .
