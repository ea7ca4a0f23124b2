#!/usr/bin/env bash
# The device calls that made this folder (one H200 each; `bash run.sh N`
# ran stage N), from the repository root with carry ["carry-bin", ".deps"]:
# carry-bin/all.txz packed by bench/tools/carry_pack.sh from /tmp/b-full.
set -u
source bench/tools/device_env.sh
X=$B/bench/flashspec_bench TB=$B/bench/tree_bench
case "${1:-1}" in
1)
# the quads' tests and sanitizers, then the quads (FLASHSPEC_TILE_QUADS_MIN=321)
# against the rows kernel (0) in alternated rounds, trees likewise, ncu
(cd $B && timeout 300 ctest -R '^test_(hopper_policy|gpu_agree_quads|gpu_tree_quads|gpu_agree|gpu_agree_pairs|gpu_tree_pairs|gpu_tree)$' -j4 --output-on-failure > $O/ctest_1.txt 2>&1; echo "rc=$?" >> $O/ctest_1.txt) &
(export FLASHSPEC_TILE_QUADS_MIN=321
 a="--shapes 20011x64 --rows 321,400,450,512,600,640 --requests 80,128 --ops sample,argmax,verify --rounds 1 --reps 1 --warmup 0"
 san racecheck san_racecheck_quads.txt 200 --kernel-name kns=fsh_scan_kernel $X $a
 san synccheck san_synccheck_quads.txt 200 $X $a
 san memcheck san_memcheck_quads.txt 200 $X $a) &
wait
el tests
OUT=$O/ab timeout 240 bash bench/tools/ab_rounds.sh -r 2 quads \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 336,400,448,480,512,576,608,640 --requests 68,80,96,104,128 --ops sample,argmax,verify --rounds 2 --reps 8 --warmup 3" \
  rows=$X@FLASHSPEC_TILE_QUADS_MIN=0 quads=$X@FLASHSPEC_TILE_QUADS_MIN=321 > $O/ab_quads.txt 2>&1
el ab
for r in 1 2; do for v in rows quads; do
  m=0; [ $v = quads ] && m=321
  FLASHSPEC_TILE_QUADS_MIN=$m timeout 60 $TB --shapes 151936x4096,128256x8192 \
    --requests 8,16 --nodes 40,49,64 --rounds 1 --reps 6 > $O/ab/tree_${v}_$r.txt 2>&1
done; done
el trees
M=gpu__time_duration.sum,sm__cycles_elapsed.avg,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,lts__t_bytes.sum,smsp__inst_executed.sum,launch__grid_size,launch__cluster_dim_x
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for v in rows quads; do
  m=0; [ $v = quads ] && m=321
  FLASHSPEC_TILE_QUADS_MIN=$m timeout 90 $NCU --clock-control base -k regex:'fshr?_scan' -c 4 --csv --metrics $M \
    $X --shapes 151936x4096 --rows 400,512 --ops sample,argmax --rounds 1 --reps 1 --warmup 0 --gemm heuristic > $O/ncu_$v.csv 2>&1
done
el ncu
;;
esac
tar czf $OUT/out.tgz -C $O .
