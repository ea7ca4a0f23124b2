#!/usr/bin/env bash
# The device call that made this folder (one H200), from the repository
# root with carry ["carry-bin"]: carry-bin/all.txz holds two builds'
# flashspec_bench, packed off the device with absolute paths
# (tar cPf - /tmp/b-full/bench/flashspec_bench /tmp/b-new/bench/flashspec_bench
#  | xz -T2 -6 > carry-bin/all.txz):
#   base  /tmp/b-full: mbarrier.try_wait without a suspend-time hint
#         (FS_MBAR_SUSPEND_NS=0, the code before this folder's commit)
#   new   /tmp/b-new:  with the hint (FS_MBAR_SUSPEND_NS=1000000)
set -u
source bench/tools/device_env.sh
( sleep 575; tar czf "$OUT/out.tgz" -C "$O" . ) &
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,smsp__inst_executed.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,lts__t_bytes.sum
mkdir -p $O/ncu
# (a) one launch of each scan under ncu, clocks free: instructions, time, clock
for v in base:/tmp/b-full new:/tmp/b-new; do
  name=${v%%:*}; dir=${v#*:}
  for c in 128256x8192:136:argmax 128256x8192:136:sample 151936x4096:64:sample 151936x4096:512:sample 151936x4096:1024:argmax 151936x4096:1:sample; do
    IFS=: read -r sh r op <<< "$c"
    timeout 60 $NCU --clock-control none -k regex:'fshr?_scan' -c 1 --csv --metrics $M \
      $dir/bench/flashspec_bench --shapes $sh --rows $r --ops $op --reps 1 --warmup 0 --gemm heuristic \
      > $O/ncu/${name}_${sh}_${r}_${op}.csv 2>&1
  done
  el "ncu $name"
done
# (b) the calls, the two builds alternated in three rounds
A="--shapes 151936x4096,128256x8192 --rows 1,16,64,136,256,512,1024 --requests 4,32,128 --rounds 2 --reps 10 --warmup 2"
OUT=$O/ab timeout 420 bash bench/tools/ab_rounds.sh -r 3 mb "$A" \
  base=/tmp/b-full/bench/flashspec_bench new=/tmp/b-new/bench/flashspec_bench > $O/ab_mb.txt 2>&1
el ab
tar czf "$OUT/out.tgz" -C "$O" .
