#!/usr/bin/env bash
# The device calls that made this folder (one H200 each; `bash run.sh N`
# ran stage N), from the repository root with carry ["carry-bin", ".deps"]:
# carry-bin/all.txz packed by bench/tools/carry_pack.sh from the build in
# /tmp/b-full of the stage's code.  rows = the default plan at 193-256 rows
# (the rows kernel's two clustered 128-row blocks), pairs = the tile
# kernel's pairs forced from 161 rows (FLASHSPEC_TILE_PAIRS_MIN=161), in
# halves of 104, 112, 120 or 128 rows (calls 1-2; from call 3 the committed
# rule, without 128-row halves).
set -u
source bench/tools/device_env.sh
mkdir -p $O/ab
case "${1:-1}" in
1)
(cd $B && timeout 230 ctest -L gpu -j4 -R "agree|stat|single|bad_input|graph" --output-on-failure > $O/ctest_gpu.txt 2>&1)
el tests
OUT=$O/ab timeout 290 bash bench/tools/ab_rounds.sh -r 3 ph \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 176,200,208,216,224,232,240,256 --requests 40,44,48 --ops sample,argmax,verify --rounds 1 --reps 6" \
  rows=$B/bench/flashspec_bench@FLASHSPEC_TILE_PAIRS_MIN=0 pairs=$B/bench/flashspec_bench@FLASHSPEC_TILE_PAIRS_MIN=161 > $O/ab_ph_summary.txt 2>&1
el ab
for m in 0 161; do
  FLASHSPEC_TILE_PAIRS_MIN=$m timeout 40 $B/bench/tree_bench --shapes 151936x4096,128256x8192 --requests 8 --nodes 24,27,29 --rounds 2 --reps 5 > $O/tree_$m.txt 2>&1
done
el tree
;;
2)
(cd $B && timeout 150 ctest -L gpu -j4 -R "agree_pairs|agree_rows192|tree_pairs|hopper_policy" --output-on-failure > $O/ctest_gpu.txt 2>&1)
el tests
for tool in memcheck racecheck; do
  FS_GPU_TEST_SMALL=1 FS_GPU_TEST_SMALL_ROWS=240 FLASHSPEC_TILE_PAIRS_MIN=161 \
    san $tool san_${tool}_agree_pairs240.txt 100 $B/tests/test_gpu_agree
  el $tool
done
OUT=$O/ab timeout 200 bash bench/tools/ab_rounds.sh -r 4 ph2 \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 193,200,208,216,224,232,240,248,256 --requests 39,40,44,48,51 --ops sample,argmax,verify --rounds 1 --reps 16" \
  rows=$B/bench/flashspec_bench@FLASHSPEC_TILE_PAIRS_MIN=0 pairs=$B/bench/flashspec_bench@FLASHSPEC_TILE_PAIRS_MIN=161 > $O/ab_ph2_summary.txt 2>&1
el ab
for r in 1 2; do for m in 0 161; do
  FLASHSPEC_TILE_PAIRS_MIN=$m timeout 40 $B/bench/tree_bench --shapes 151936x4096,128256x8192,262144x3072 --requests 8 --nodes 24,27,29,31 --rounds 2 --reps 6 > $O/tree2_${m}_$r.txt 2>&1
done; done
el tree
;;
3)
(cd $B && timeout 330 ctest -L gpu -j4 -R "agree|stat|single|bad_input|graph|tree" --output-on-failure > $O/ctest_gpu.txt 2>&1; echo "rc=$?" >> $O/ctest_gpu.txt)
el tests
timeout 150 $B/bench/tree_bench --shapes 151936x4096,128256x8192 --requests 1,4,16,64 --nodes 8,16,32,64 \
  --rounds 3 --reps 8 > $O/tree_bench.txt 2>&1; el "tree rc=$?"
;;
4)
timeout 380 $B/bench/flashspec_bench --json $O/bench.json > $O/bench.txt 2>&1; el "sweep rc=$?"
;;
5)
# carry-bin/extra.txz (unpacked into /tmp/fsb by device_env.sh's
# carry_unpack.sh): mut/test_gpu_agree, linked with mutant_half_short.patch
(FS_GPU_TEST_SMALL=1 FS_GPU_TEST_SMALL_ROWS=240 FLASHSPEC_TILE_PAIRS_MIN=161 timeout 120 /tmp/fsb/mut/test_gpu_agree > $O/mut_half_short.txt 2>&1; echo "rc=$?" >> $O/mut_half_short.txt)
el mutant
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__bytes_read.sum,lts__t_bytes.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
mkdir -p $O/ncu
for c in 151936x4096:256 151936x4096:512 151936x4096:1024 128256x8192:192 128256x8192:256 128256x8192:512 128256x8192:1024 262144x3072:256 262144x3072:512 262144x3072:1024; do
  sh=${c%:*}; r=${c#*:}
  for op in sample argmax; do
    timeout 60 $NCU --clock-control none -k regex:'fshr?_scan' -c 1 --csv --metrics $M $B/bench/flashspec_bench --shapes $sh --rows $r \
      --ops $op --reps 1 --warmup 0 --gemm heuristic > $O/ncu/ncu_${sh}_${r}_${op}.csv 2>&1
  done
  timeout 60 $NCU --clock-control none -k regex:'nvjet|gemm|cutlass' -c 1 --csv --metrics $M $B/bench/flashspec_bench --shapes $sh --rows $r \
    --ops argmax --reps 1 --warmup 0 --gemm heuristic > $O/ncu/ncu_${sh}_${r}_cublas.csv 2>&1
  el "ncu $c"
done
;;
6)
# the GPU tests calls 2-3 left out (filters, realistic inputs, the rows
# kernel's lists, tensor parallel: skips on one GPU)
(cd $B && timeout 420 ctest -L gpu -j4 -E "agree|stat|single|bad_input|graph|tree" --output-on-failure > $O/ctest_gpu_rest.txt 2>&1; echo "rc=$?" >> $O/ctest_gpu_rest.txt)
el tests
;;
7)
# 241-256 rows: the rows kernel (pairs off) against the pairs' 128-row
# halves for every op but draft argmax (the default of this call's build)
OUT=$O/ab timeout 300 bash bench/tools/ab_rounds.sh -r 4 g \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 240,241,248,256 --requests 48,49,50,51 --ops sample,verify --rounds 1 --reps 16" \
  rows=$B/bench/flashspec_bench@FLASHSPEC_TILE_PAIRS_MIN=0 pairs=$B/bench/flashspec_bench > $O/ab_g_summary.txt 2>&1
el ab
for r in 1 2 3; do for m in 0 auto; do
  e=FLASHSPEC_TILE_PAIRS_MIN=0; [ $m = auto ] && e=FS_UNUSED=1
  env $e timeout 40 $B/bench/tree_bench --shapes 151936x4096,128256x8192,262144x3072 --requests 8 --nodes 30,31 --rounds 2 --reps 6 > $O/tree3_${m}_$r.txt 2>&1
done; done
el tree
(cd $B && timeout 150 ctest -L gpu -j4 -R "agree_pairs|tree_pairs|agree$|tree$" --output-on-failure > $O/ctest_gpu.txt 2>&1; echo "rc=$?" >> $O/ctest_gpu.txt)
el tests
;;
8)
# the committed rule: the GPU subset, sanitizers over the 250-row case's
# 128-row halves, the issue-20 and tree sweeps
(cd $B && timeout 240 ctest -L gpu -j4 -R "agree|stat|single|bad_input|graph|tree" --output-on-failure > $O/ctest_gpu.txt 2>&1; echo "rc=$?" >> $O/ctest_gpu.txt)
el tests
for tool in memcheck racecheck; do
  FS_GPU_TEST_SMALL=1 FS_GPU_TEST_SMALL_ROWS=256 san $tool san_${tool}_agree256.txt 100 $B/tests/test_gpu_agree
  el $tool
done
timeout 120 $B/bench/flashspec_bench --json $O/bench.json > $O/bench.txt 2>&1; el "sweep rc=$?"
timeout 60 $B/bench/tree_bench --shapes 151936x4096,128256x8192 --requests 1,4,16,64 --nodes 8,16,32,64 \
  --rounds 3 --reps 8 > $O/tree_bench.txt 2>&1; el "tree rc=$?"
;;
esac
tar czf $OUT/out.tgz -C $O .
