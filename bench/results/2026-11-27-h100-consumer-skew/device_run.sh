#!/usr/bin/env bash
# The device call that made this folder: base = 3d31071 (/tmp/b-full), new =
# the same with consumer-skew.patch applied and FSHR_SKEW=2 (/tmp/b-skew).
set -u
O=/tmp/o; mkdir -p $O
T0=$(date +%s); el() { echo "$1 $(( $(date +%s) - T0 )) s" >> $O/log.txt; }
bash bench/tools/carry_unpack.sh
B=/tmp/b-full; N=/tmp/b-skew
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $O/gpu.txt
timeout 60 $N/bench/flashspec_bench --shapes 151936x4096 --rows 512 --ops sample --rounds 1 --reps 3 --warmup 1 > $O/smoke.txt 2>&1; el "smoke rc=$?"
for r in 1 2 3; do for v in base new; do
  d=$B; [ $v = new ] && d=$N
  timeout 120 $d/bench/flashspec_bench --shapes 151936x4096,128256x8192 --rows 256,512,768,1024 \
    --requests 200 --ops sample,argmax,verify --rounds 2 --reps 10 --warmup 3 > $O/b_${v}_$r.txt 2>&1
  el "ab $v $r"
done; done
for v in base new; do d=$B; [ $v = new ] && d=$N
  timeout 60 ncu --clock-control base --csv -k regex:'fshr_scan' --launch-skip 2 --launch-count 4 \
    --metrics gpu__time_duration.sum,sm__cycles_elapsed.max,smsp__inst_executed.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active \
    $d/bench/flashspec_bench --shapes 151936x4096 --rows 512,1024 --ops sample --rounds 1 --reps 2 --warmup 1 > $O/ncu_$v.csv 2>&1
  el "ncu $v"
done
tar czf $OUT/out.tgz -C $O .
cat $O/log.txt
