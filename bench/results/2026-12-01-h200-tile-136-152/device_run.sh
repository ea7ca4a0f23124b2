#!/usr/bin/env bash
# The device calls that made this folder (one H200 each; `bash run.sh N`
# ran stage N), from the repository root with carry ["carry-bin", ".deps"]:
# carry-bin/all.txz packed by bench/tools/carry_pack.sh /tmp/b-full.
set -u
source bench/tools/device_env.sh
F=$B/bench/filter_bench X=$B/bench/flashspec_bench T=$B/bench/tree_bench
run() { # NAME SECONDS [VAR=VALUE ...] COMMAND...: output and status in $O/NAME.txt
  local name=$1 secs=$2
  shift 2
  timeout "$secs" env "$@" > "$O/$name.txt" 2>&1; echo "rc=$?" >> "$O/$name.txt"
}
# a snapshot of the outputs before the call's 600 s run out, whatever runs
( sleep 575; tar czf "$OUT/out.tgz" -C "$O" . ) &
case "${1:-1}" in
1)
# (a) filter_bench's sort-pipeline check through the tests' oracle, with
# the sort baseline's one scratch carve (sort_carve)
run check 240 $F --rows 1,16,64 --shapes 151936x4096,30011x64 --logits 1,2,0 --rounds 1 --reps 3
el check
# (b) the tests that run the tile kernel's single CTAs past 128 rows
(cd $B && timeout 240 ctest -R '^test_(gpu_agree|gpu_agree_tile160|gpu_tree|gpu_tree_tile|gpu_single)$' \
  -j3 --output-on-failure > $O/ctest_1.txt 2>&1; echo "rc=$?" >> $O/ctest_1.txt)
el tests
# (c) 129-160 rows in 136- and 152-row blocks (default) against 144 and 160
# (FLASHSPEC_TILE_BN_STEP=16), in one process, both ways round
a="--shapes 151936x4096,128256x8192,262144x3072 --rows 130,136,146,152 --requests 26,27,29,30 --rounds 3 --reps 8 --warmup 3"
run alt_step16 200 FS_UNSET=1 $X $a --alt FLASHSPEC_TILE_BN_STEP=16
el alt1
run step16_alt8 200 FLASHSPEC_TILE_BN_STEP=16 $X $a --alt FLASHSPEC_TILE_BN_STEP=8
el alt2
# (d) trees of 132 and 148 rows (4 requests x 32 and 36 nodes), tree@alt
# the 16-row steps, and the other way round
t="--requests 4 --nodes 32,36 --rounds 3 --reps 8 --shapes 151936x4096,128256x8192,262144x3072"
run tree_alt_step16 150 TREE_BENCH_ALT=FLASHSPEC_TILE_BN_STEP=16 $T $t
run tree_step16_alt8 150 FLASHSPEC_TILE_BN_STEP=16 TREE_BENCH_ALT=FLASHSPEC_TILE_BN_STEP=8 $T $t
el tree
;;
2)
# (a) carry-bin/extra.txz (unpacked into /tmp/fsb): mut/test_gpu_agree,
# linked with mutant_136_rows.patch (the 136-row block's EW warps never
# push rows 128-135): it must fail
(FS_GPU_TEST_SMALL=1 FS_GPU_TEST_SMALL_ROWS=160 timeout 120 /tmp/fsb/mut/test_gpu_agree > $O/mut_136_rows.txt 2>&1; echo "rc=$?" >> $O/mut_136_rows.txt)
el mutant
# (b) the sanitizers over test_gpu_agree's cases of up to 160 rows (the
# 131-row case in a 136-row block, verify of 151 rows in a 152-row one)
FS_GPU_TEST_SMALL=1 FS_GPU_TEST_SMALL_ROWS=160 san memcheck memcheck_agree160.txt 200 $B/tests/test_gpu_agree
el memcheck
FS_GPU_TEST_SMALL=1 FS_GPU_TEST_SMALL_ROWS=160 san racecheck racecheck_agree160.txt 200 $B/tests/test_gpu_agree
el racecheck
# (c) ncu: the tile kernel (draft argmax and sample) and cuBLAS's matmul at
# 136 and 152 rows, where the fused ops trail cuBLAS + one pass on
# 128256 x 8192
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__bytes_read.sum,lts__t_bytes.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,sm__warps_active.avg.pct_of_peak_sustained_active
mkdir -p $O/ncu
for c in 128256x8192:136 128256x8192:152 151936x4096:136 151936x4096:152; do
  sh=${c%:*}; r=${c#*:}
  for op in sample argmax; do
    timeout 60 $NCU --clock-control none -k regex:'fshr?_scan' -c 1 --csv --metrics $M $X --shapes $sh --rows $r \
      --ops $op --reps 1 --warmup 0 --gemm heuristic > $O/ncu/ncu_${sh}_${r}_${op}.csv 2>&1
  done
  timeout 60 $NCU --clock-control none -k regex:'nvjet|gemm|cutlass' -c 1 --csv --metrics $M $X --shapes $sh --rows $r \
    --ops argmax --reps 1 --warmup 0 --gemm heuristic > $O/ncu/ncu_${sh}_${r}_cublas.csv 2>&1
  el "ncu $c"
done
;;
3)
# every GPU test at this build (test_gpu_tp skips on one GPU)
(cd $B && timeout 560 ctest -L gpu -j4 --output-on-failure > $O/ctest_gpu.txt 2>&1; echo "rc=$?" >> $O/ctest_gpu.txt)
el tests
;;
esac
tar czf "$OUT/out.tgz" -C "$O" .
