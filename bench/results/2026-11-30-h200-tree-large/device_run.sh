#!/usr/bin/env bash
# The device calls that made this folder (one H200 each; `bash run.sh N`
# ran stage N), from the repository root with carry ["carry-bin", ".deps"]:
# carry-bin/all.txz packed by bench/tools/carry_pack.sh from /tmp/b-full.
set -u
source bench/tools/device_env.sh
case "${1:-1}" in
1)
# where a large tree's call goes, kernel by kernel, beside chain verify of
# about the same rows (52 / 104 / 208 requests of 5 rows: 260 / 520 / 1040)
ktrace tree 200 $B/bench/tree_bench --shapes 151936x4096 --requests 4,16 --nodes 16,32,64 --rounds 2 --reps 6
el tree
ktrace verify 150 $B/bench/flashspec_bench --shapes 151936x4096 --rows 256 --requests 52,104,208 --ops verify,sample --rounds 2 --reps 6
el verify
# the scan kernels alone under ncu: trees of 260 and 1040 rows, verify of
# 260 and 1040 rows
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
M=gpu__time_duration.sum,sm__cycles_elapsed.avg,dram__bytes_read.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,launch__registers_per_thread,launch__grid_size
mkdir -p $O/ncu
for rq in "4 64" "16 64" "16 16"; do
  set -- $rq
  timeout 90 $NCU --clock-control base -k regex:'fshr?_scan|tree|merge|final' -c 6 --csv --metrics $M $B/bench/tree_bench --shapes 151936x4096 \
    --requests $1 --nodes $2 --rounds 1 --reps 1 > $O/ncu/tree_${1}x${2}.csv 2>&1
done
for rq in 52 208 54; do
  timeout 90 $NCU --clock-control base -k regex:'fshr?_scan|merge|final|prep' -c 6 --csv --metrics $M $B/bench/flashspec_bench --shapes 151936x4096 \
    --rows 256 --requests $rq --ops verify --reps 1 --warmup 0 > $O/ncu/verify_${rq}.csv 2>&1
done
el ncu
;;
esac
tar czf $OUT/out.tgz -C $O .
