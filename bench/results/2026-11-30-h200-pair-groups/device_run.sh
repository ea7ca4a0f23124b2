#!/usr/bin/env bash
# The device calls that made this folder (one H200 each; `bash run.sh N`
# ran stage N), from the repository root with carry ["carry-bin", ".deps"]:
# carry-bin/all.txz packed by bench/tools/carry_pack.sh /tmp/b-full /tmp/b-base
# (b-base: the benchmarks of 5c4bd4a, the commit before the row groups).
set -u
source bench/tools/device_env.sh
X=$B/bench/flashspec_bench TB=$B/bench/tree_bench
case "${1:-1}" in
1)
# the row groups' tests and sanitizers, then the groups
# (FLASHSPEC_TILE_GROUPS_MAX=4096) against the rows kernel (0) in
# alternated rounds, trees likewise, ncu
(cd $B && timeout 300 ctest -R '^test_gpu_(agree_groups|tree_groups|agree|tree|agree_pairs|tree_pairs|single)$' -j4 --output-on-failure > $O/ctest_1.txt 2>&1; echo "rc=$?" >> $O/ctest_1.txt) &
(export FLASHSPEC_TILE_GROUPS_MAX=4096
 a="--shapes 20011x64 --rows 400,450,700,800 --requests 80,140 --ops sample,argmax,verify --rounds 1 --reps 1 --warmup 0"
 san racecheck san_racecheck_groups.txt 200 --kernel-name kns=fsh_scan_kernel $X $a
 san synccheck san_synccheck_groups.txt 200 $X $a
 san memcheck san_memcheck_groups.txt 200 $X $a) &
wait
el tests
OUT=$O/ab timeout 240 bash bench/tools/ab_rounds.sh -r 2 groups \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 400,448,720,864 --requests 80,90,140 --ops sample,argmax,verify --rounds 2 --reps 8 --warmup 3" \
  rows=$X@FLASHSPEC_TILE_GROUPS_MAX=0 groups=$X@FLASHSPEC_TILE_GROUPS_MAX=4096 > $O/ab_groups.txt 2>&1
el ab
# the pairs of one row group (257-320 rows) against the build before
OUT=$O/ab timeout 120 bash bench/tools/ab_rounds.sh -r 2 pairs \
  "--shapes 151936x4096,262144x3072 --rows 288,320 --requests 64 --ops sample,argmax,verify --rounds 2 --reps 8 --warmup 3" \
  base=/tmp/b-base/bench/flashspec_bench new=$X > $O/ab_pairs.txt 2>&1
el pairs
M=gpu__time_duration.sum,sm__cycles_elapsed.avg,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,lts__t_bytes.sum,smsp__inst_executed.sum,launch__grid_size,launch__cluster_dim_x
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for v in rows groups; do
  m=0; [ $v = groups ] && m=4096
  FLASHSPEC_TILE_GROUPS_MAX=$m timeout 100 $NCU --clock-control base -k regex:'fshr?_scan' -c 4 --csv --metrics $M \
    $X --shapes 151936x4096 --rows 400,720 --ops sample,argmax --rounds 1 --reps 1 --warmup 0 --gemm heuristic > $O/ncu_$v.csv 2>&1
done
el ncu
;;
2)
# with the pairs' 136- and 152-row halves: tests, sanitizers, the pairs at
# 257-320 rows against the build before (whose halves step by 16 past 128),
# the groups against the rows kernel at 528-1088 rows (four groups from
# 961), trees of the build before against the groups
(cd $B && timeout 300 ctest -R '^test_gpu_(agree_groups|tree_groups|agree|tree|agree_pairs|tree_pairs|single)$' -j4 --output-on-failure > $O/ctest_2.txt 2>&1; echo "rc=$?" >> $O/ctest_2.txt) &
(export FLASHSPEC_TILE_GROUPS_MAX=4096
 a="--shapes 20011x64 --rows 264,300,530,600,1040 --requests 60,212 --ops sample,argmax,verify --rounds 1 --reps 1 --warmup 0"
 san racecheck san_racecheck_groups2.txt 250 --kernel-name kns=fsh_scan_kernel $X $a
 san synccheck san_synccheck_groups2.txt 250 $X $a
 san memcheck san_memcheck_groups2.txt 250 $X $a) &
wait
el tests
OUT=$O/ab timeout 150 bash bench/tools/ab_rounds.sh -r 2 pairs2 \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 264,272,296,304 --requests 53,54,59,60 --ops sample,argmax,verify --rounds 2 --reps 8 --warmup 3" \
  base=/tmp/b-base/bench/flashspec_bench new=$X > $O/ab_pairs2.txt 2>&1
el pairs
OUT=$O/ab timeout 260 bash bench/tools/ab_rounds.sh -r 2 groups2 \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 528,544,600,800,1040,1088 --requests 106,120,160,208 --ops sample,argmax,verify --rounds 2 --reps 6 --warmup 3" \
  rows=$X@FLASHSPEC_TILE_GROUPS_MAX=0 groups=$X@FLASHSPEC_TILE_GROUPS_MAX=4096 > $O/ab_groups2.txt 2>&1
el groups
mkdir -p $O/ab
for r in 1 2; do for v in base groups; do
  t=$TB; e=FLASHSPEC_TILE_GROUPS_MAX=4096; [ $v = base ] && t=/tmp/b-base/bench/tree_bench && e=FS_UNUSED=1
  env $e timeout 60 $t --shapes 151936x4096,128256x8192 --requests 4,16 --nodes 32,64 --rounds 1 --reps 6 > $O/ab/tree_${v}_$r.txt 2>&1
  env $e timeout 60 $t --shapes 151936x4096,128256x8192 --requests 64 --nodes 16 --rounds 1 --reps 4 > $O/ab/tree64_${v}_$r.txt 2>&1
done; done
el trees
;;
3)
# the committed default (row groups to 960 rows for sample, draft argmax and
# verify; halves in steps of 8): every GPU test, memcheck of the agreement
# test's cases up to 700 rows, and the default against the build before at
# row counts between the rows kernel's blocks
(cd $B && timeout 420 ctest -L gpu -j4 --output-on-failure > $O/ctest_gpu_3.txt 2>&1; echo "rc=$?" >> $O/ctest_gpu_3.txt) &
(cd $B/tests && FS_GPU_TEST_SMALL=1 FS_GPU_TEST_SMALL_ROWS=700 san memcheck san_memcheck_agree_3.txt 400 ./test_gpu_agree) &
wait
el tests
OUT=$O/ab timeout 170 bash bench/tools/ab_rounds.sh -r 2 def \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 400,464,600,700,900 --requests 84,116,176 --ops sample,argmax,verify --rounds 2 --reps 6 --warmup 3" \
  base=/tmp/b-base/bench/flashspec_bench new=$X > $O/ab_def.txt 2>&1
el def
;;
4)
# the committed build (draft argmax off the groups): the agreement and tree
# tests and their groups variants, and two mutants of the groups
# (carry-bin/extra.txz: test_gpu_agree built with mutant_group.patch and
# mutant_hrow.patch, unpacked to /tmp/fsb/m_*)
(cd $B && timeout 300 ctest -R '^test_gpu_(agree|agree_groups|tree|tree_groups|agree_pairs)$' -j3 --output-on-failure > $O/ctest_4.txt 2>&1; echo "rc=$?" >> $O/ctest_4.txt) &
mkdir -p /tmp/fsb && tar xJf carry-bin/extra.txz -C /tmp/fsb
(export FLASHSPEC_TILE_GROUPS_MAX=4096
 for m in m_group m_hrow; do
   (cd $B/tests && timeout 200 /tmp/fsb/$m/test_gpu_agree > $O/mut_${m}_agree.txt 2>&1; echo "rc=$?" >> $O/mut_${m}_agree.txt)
 done) &
wait
el tests
;;
5)
# draft argmax in row groups (FLASHSPEC_TILE_GROUPS_MAX=960) against the
# rows kernel (0): three alternated rounds, and ncu at 464 and 700 rows
OUT=$O/ab timeout 300 bash bench/tools/ab_rounds.sh -r 3 argmax \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 400,464,480,600,700,720,800,900 --ops argmax --rounds 2 --reps 8 --warmup 3" \
  rows=$X@FLASHSPEC_TILE_GROUPS_MAX=0 groups=$X@FLASHSPEC_TILE_GROUPS_MAX=960 > $O/ab_argmax.txt 2>&1
el argmax
M=gpu__time_duration.sum,sm__cycles_elapsed.avg,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,lts__t_bytes.sum,smsp__inst_executed.sum,launch__grid_size
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for v in rows groups; do
  m=0; [ $v = groups ] && m=960
  FLASHSPEC_TILE_GROUPS_MAX=$m timeout 100 $NCU --clock-control base -k regex:'fshr?_scan' -c 4 --csv --metrics $M \
    $X --shapes 151936x4096,128256x8192 --rows 464,700 --ops argmax --rounds 1 --reps 1 --warmup 0 --gemm heuristic > $O/ncu_argmax_$v.csv 2>&1
done
el ncu
;;
6)
# the final default (draft argmax in groups too): the agreement and tree
# tests, their groups variants, and the default against the rows kernel
(cd $B && timeout 300 ctest -R '^test_gpu_(agree|agree_groups|tree|tree_groups|stat)$' -j3 --output-on-failure > $O/ctest_6.txt 2>&1; echo "rc=$?" >> $O/ctest_6.txt)
el tests
OUT=$O/ab timeout 150 bash bench/tools/ab_rounds.sh -r 2 final \
  "--shapes 151936x4096,128256x8192 --rows 400,464,700 --requests 84,140 --ops sample,argmax,verify --rounds 2 --reps 6 --warmup 3" \
  rows=$X@FLASHSPEC_TILE_GROUPS_MAX=0 new=$X > $O/ab_final.txt 2>&1
el final
;;
esac
tar czf $OUT/out.tgz -C $O .
