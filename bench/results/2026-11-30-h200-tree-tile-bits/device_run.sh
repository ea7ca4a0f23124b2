#!/usr/bin/env bash
# The device calls that made this folder (one H200 each; `bash run.sh N`
# ran stage N), from the repository root with carry ["carry-bin", ".deps"]:
# carry-bin/all.txz packed by bench/tools/carry_pack.sh /tmp/b-full /tmp/b-base
# (b-base: the benchmarks of 68ef7d1, the commit before the tree words),
# carry-bin/extra.txz the mutant's test_gpu_tree (mutant_tile_late.patch).
set -u
source bench/tools/device_env.sh
X=$B/bench/flashspec_bench TB=$B/bench/tree_bench BT=/tmp/b-base/bench/tree_bench
mkdir -p /tmp/stage && tar xJf carry-bin/extra.txz -C /tmp/stage
case "${1:-1}" in
1)
# tests, the mutant, sanitizers over trees on every tile-kernel form
(cd $B && timeout 300 ctest -R '^test_gpu_(tree|tree_tile|tree_pairs|tree_groups|tree_ew_small|tree_rowsm|agree|agree_pairs|agree_groups|agree_ew_small|filter|single)$' -j4 --output-on-failure > $O/ctest_1.txt 2>&1; echo "rc=$?" >> $O/ctest_1.txt) &
(cd $B/tests && for e in FS_UNUSED=1 FLASHSPEC_TILE_PAIRS_MIN=161 FLASHSPEC_TILE_GROUPS_MAX=4096; do
   env $e timeout 120 /tmp/stage/mut/test_gpu_tree > $O/mut_tile_late_${e%%=*}.txt 2>&1; echo "rc=$?" >> $O/mut_tile_late_${e%%=*}.txt
 done) &
(export FLASHSPEC_TILE_GROUPS_MAX=4096
 a="--shapes 30011x64 --requests 1,4,16,40,68 --nodes 8,32,5 --rounds 1 --reps 1"
 san memcheck san_memcheck_trees.txt 200 $TB $a
 san initcheck san_initcheck_trees.txt 200 $TB $a
 san racecheck san_racecheck_trees.txt 250 --kernel-name kns=fsh_scan_kernel $TB $a) &
wait
el tests
# trees: the build before and this one alternated, tile-kernel counts
# (9-272 rows) and the rows kernel's (528, 1040) as the control
mkdir -p $O/ab
for r in 1 2; do for v in base new; do
  t=$TB; [ $v = base ] && t=$BT
  timeout 150 $t --shapes 151936x4096,128256x8192,262144x3072 --requests 1,4,16 --nodes 8,16,32,64 --rounds 1 --reps 8 > $O/ab/tree_${v}_$r.txt 2>&1
done; done
el trees
# trees in row groups (FLASHSPEC_TILE_GROUPS_MAX=960) against the rows kernel, this build
for r in 1 2; do for v in rows groups; do
  m=0; [ $v = groups ] && m=960
  FLASHSPEC_TILE_GROUPS_MAX=$m timeout 100 $TB --shapes 151936x4096,128256x8192,262144x3072 --requests 16,24,40,48 --nodes 16,32 --rounds 1 --reps 6 > $O/ab/treeg_${v}_$r.txt 2>&1
done; done
el groups
# chain ops on the same kernels (no tree rows): the build before and this one
OUT=$O/ab timeout 120 bash bench/tools/ab_rounds.sh -r 2 chain \
  "--shapes 151936x4096,262144x3072 --rows 64,144,300,600 --requests 60 --ops sample,verify --rounds 1 --reps 8 --warmup 3" \
  base=/tmp/b-base/bench/flashspec_bench new=$X > $O/ab_chain.txt 2>&1
el chain
;;
2)
# kernel cycles at base clocks (ncu), the build before and this one: chain
# ops on the pairs (300 / 600 rows) and the epilogue warps (144 rows), trees
# on the epilogue warps (144 rows) and the pairs (272 rows)
M=gpu__time_duration.sum,sm__cycles_elapsed.avg,smsp__inst_executed.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
for v in base new; do
  x=$X t=$TB; [ $v = base ] && x=/tmp/b-base/bench/flashspec_bench t=$BT
  for c in "262144x3072 sample --rows 600" "262144x3072 verify --requests 60" "151936x4096 sample --rows 144" "151936x4096 verify --requests 60"; do
    set -- $c
    ncu_csv ncu/${v}_$1_$2_$4.csv 60 --clock-control base -k regex:'fshr?_scan' -c 1 --metrics $M \
      $x --shapes $1 $3 $4 --ops $2 --reps 1 --warmup 0 --rounds 1 --gemm heuristic
  done
  for c in "151936x4096 16 8" "151936x4096 16 16" "262144x3072 4 32"; do
    set -- $c
    ncu_csv ncu/${v}_tree_$1_$2x$3.csv 60 --clock-control base -k regex:'fshr?_scan' -c 1 --metrics $M \
      $t --shapes $1 --requests $2 --nodes $3 --rounds 1 --reps 1
  done
done
el ncu
# trees in row groups against the rows kernel in one process (tree@alt)
TREE_BENCH_ALT=FLASHSPEC_TILE_GROUPS_MAX=960 timeout 200 $TB --shapes 151936x4096,128256x8192,262144x3072 \
  --requests 16,24,40,48 --nodes 16,32 --rounds 3 --reps 5 > $O/tree_groups_alt.txt 2>&1
el groups
# racecheck of the trees of 360 rows (rows kernel) on both builds
for v in base new; do
  t=$TB; [ $v = base ] && t=$BT
  FLASHSPEC_TILE_GROUPS_MAX=4096 san racecheck san_racecheck_360_$v.txt 120 $t --shapes 30011x64 --requests 40 --nodes 8 --rounds 1 --reps 1
done
el race
;;
3)
# trees in row groups by default: every GPU test, memcheck and racecheck of
# trees on every tile-kernel form
(cd $B && timeout 420 ctest -L gpu -j4 --output-on-failure > $O/ctest_gpu_3.txt 2>&1; echo "rc=$?" >> $O/ctest_gpu_3.txt) &
(a="--shapes 30011x64 --requests 1,4,16,40,48,68 --nodes 5,8,16,32 --rounds 1 --reps 1"
 san memcheck san_memcheck_trees_3.txt 250 $TB $a
 san racecheck san_racecheck_trees_3.txt 300 --kernel-name kns=fsh_scan_kernel $TB $a) &
wait
el tests
# call 2's A/B with the roles swapped: the groups the default (tree), the
# rows kernel the alternative (tree@alt)
TREE_BENCH_ALT=FLASHSPEC_TILE_GROUPS_MAX=0 timeout 200 $TB --shapes 151936x4096,128256x8192,262144x3072 \
  --requests 16,24,40,48 --nodes 16,32 --rounds 3 --reps 5 > $O/tree_groups_swapped.txt 2>&1
el swapped
# tree_bench's defaults (1-64 requests x 8-64 nodes)
timeout 150 $TB --shapes 151936x4096,128256x8192 --rounds 2 --reps 5 > $O/tree_bench_3.txt 2>&1
el table
;;
4)
# (after ../2026-11-30-h200-sweep/device_run.sh 1, same call) racecheck of
# call 3's sequence on the build before; the A/B of call 3 with the rounds'
# order rotated (bench_util.c), groups the default
a="--shapes 30011x64 --requests 1,4,16,40,48,68 --nodes 5,8,16,32 --rounds 1 --reps 1"
san racecheck san_racecheck_trees_base.txt 100 --kernel-name kns=fsh_scan_kernel $BT $a
el race
TREE_BENCH_ALT=FLASHSPEC_TILE_GROUPS_MAX=0 timeout 60 $TB --shapes 151936x4096,262144x3072 \
  --requests 24,40 --nodes 16,32 --rounds 4 --reps 4 > $O/tree_groups_rotated.txt 2>&1
el rotated
;;
5)
# (after ../2026-11-30-h200-sweep/device_run.sh 2, same call) tree_bench's
# defaults on three shapes, rounds rotated
timeout 200 $TB --shapes 151936x4096,128256x8192,262144x3072 --rounds 3 --reps 5 > $O/tree_bench.txt 2>&1
el trees
;;
6)
# racecheck of trees with a kernel filter that leaves cluster kernels out
# (the rows kernel alone instrumented), then with every scan kernel
# instrumented (two calls: the first stage's second command had a bad filter)
a="--shapes 30011x64 --requests 1,4,16,40,48 --nodes 5,8,16,32 --rounds 1 --reps 1"
san racecheck san_racecheck_rows_kernel_only.txt 200 --kernel-name kns=fshr_scan_kernel $TB $a
san racecheck san_racecheck_all_fsh.txt 250 --kernel-name kns=fsh $TB $a
;;
7)
# four row groups (1025-1088 rows) for trees, both ways round
a="--shapes 151936x4096,128256x8192,262144x3072 --requests 16,32 --nodes 33,64 --rounds 4 --reps 5"
TREE_BENCH_ALT=FLASHSPEC_TILE_GROUPS_MAX=1280 timeout 150 $TB $a > $O/tree_groups4_alt.txt 2>&1
FLASHSPEC_TILE_GROUPS_MAX=1280 TREE_BENCH_ALT=FLASHSPEC_TILE_GROUPS_MAX=960 timeout 150 $TB $a > $O/tree_groups4_swapped.txt 2>&1
;;
8)
# flashspec_bench --alt (the chain ops' A/B inside one process): the row
# groups against the rows kernel, both ways round; 512 and 1024 rows (and
# 200 requests) run the rows kernel either way (controls)
a="--shapes 151936x4096,128256x8192,262144x3072 --rows 400,464,700,512,1024 --requests 80,140,200 --rounds 4 --reps 8 --warmup 3"
timeout 280 $X $a --alt FLASHSPEC_TILE_GROUPS_MAX=0 > $O/alt_rows.txt 2>&1; echo "rc=$?" >> $O/alt_rows.txt
FLASHSPEC_TILE_GROUPS_MAX=0 timeout 280 $X $a --alt FLASHSPEC_TILE_GROUPS_MAX=960 > $O/alt_groups.txt 2>&1; echo "rc=$?" >> $O/alt_groups.txt
;;
9)
# FLASHSPEC_HOPPER_ROWS_TIE128 (set across processes in
# ../2026-11-29-h200-row-block-ties/) again with --alt, both ways round
a="--shapes 151936x4096,128256x8192,262144x3072 --rows 1100,1152,300,384 --ops sample,argmax --rounds 4 --reps 6 --warmup 3"
timeout 250 $X $a --alt FLASHSPEC_HOPPER_ROWS_TIE128=0 > $O/tie_default.txt 2>&1; echo "rc=$?" >> $O/tie_default.txt
FLASHSPEC_HOPPER_ROWS_TIE128=0 timeout 250 $X $a --alt FLASHSPEC_HOPPER_ROWS_TIE128=1 > $O/tie_swapped.txt 2>&1; echo "rc=$?" >> $O/tie_swapped.txt
;;
10)
# draft argmax keeps 192-row blocks at the 1025-1152-row ties: the agreement
# tests on the rows kernel, and the new default against 128-row blocks
# (FLASHSPEC_HOPPER_ROW_BLOCK=128, the old H200 default there), both ways round
(cd $B && timeout 300 ctest -R '^test_gpu_(agree|agree_rows192|agree_rowsm|agree_rowsjobs|agree_groups)$' -j4 --output-on-failure > $O/ctest_10.txt 2>&1; echo "rc=$?" >> $O/ctest_10.txt)
a="--shapes 151936x4096,128256x8192,262144x3072 --rows 1100,1152 --ops argmax --rounds 4 --reps 6 --warmup 3"
timeout 120 $X $a --alt FLASHSPEC_HOPPER_ROW_BLOCK=128 > $O/argmax_tie_default.txt 2>&1; echo "rc=$?" >> $O/argmax_tie_default.txt
FLASHSPEC_HOPPER_ROW_BLOCK=128 timeout 120 $X $a --alt FLASHSPEC_HOPPER_ROW_BLOCK=0 > $O/argmax_tie_swapped.txt 2>&1; echo "rc=$?" >> $O/argmax_tie_swapped.txt
;;
esac
tar czf $OUT/out.tgz -C $O .
