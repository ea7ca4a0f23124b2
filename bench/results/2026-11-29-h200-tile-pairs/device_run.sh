#!/usr/bin/env bash
# Two device calls on one H200; builds made off the device and carried
# (bench/tools/carry_pack.sh /tmp/b-full; carry ["carry-bin", ".deps"]; in
# call 2 also carry-bin/extra.txz: the mutants' test_gpu_agree, built with
# mutant_*.patch).  Call 1 ran the pairs with fs_hopper_pairs_min 0 (pairs
# only where FLASHSPEC_TILE_PAIRS_MIN sets them), call 2 the committed
# kernel and default.  Each call began:
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
B=/tmp/b-full X=$B/bench/flashspec_bench TB=$B/bench/tree_bench F=/tmp/fsb
S=compute-sanitizer; command -v $S >/dev/null || S=/usr/local/cuda/bin/compute-sanitizer

# ---- call 1: tests, sanitizers, pairs against the rows kernel, ncu
O=/tmp/o; mkdir -p $O/ab
san() { local out=$1; shift; timeout 200 "$@" > $O/$out 2>&1; echo "rc=$?" >> $O/$out; }
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,memory.total --format=csv > $O/gpu.txt 2>&1
(cd $B && timeout 260 ctest -R '^test_gpu_(agree_pairs|tree_pairs|single|single_tail|agree_tile160|tree_tile)$' -j3 --output-on-failure > $O/ctest_1.txt 2>&1; echo "rc=$?" >> $O/ctest_1.txt) &
(cd $B/tests && export FS_GPU_TEST_SMALL=1
 san san_synccheck_single.txt $S --tool synccheck --error-exitcode 1 ./test_gpu_single
 FLASHSPEC_HOPPER_ROWS_MIN=161 san san_racecheck_ew.txt $S --tool racecheck --racecheck-report all --kernel-name kns=fsh_scan_kernel --error-exitcode 1 \
   $X --shapes 20011x64 --rows 104,144,160 --requests 32 --ops sample,argmax,verify --rounds 1 --reps 1 --warmup 0
 export FLASHSPEC_TILE_PAIRS_MIN=161
 san san_racecheck_pairs.txt $S --tool racecheck --racecheck-report all --kernel-name kns=fsh_scan_kernel --error-exitcode 1 \
   $X --shapes 20011x64 --rows 200,288,320 --requests 64 --ops sample,argmax,verify --rounds 1 --reps 1 --warmup 0
 san san_synccheck_pairs.txt $S --tool synccheck --error-exitcode 1 \
   $X --shapes 20011x64 --rows 161,200,288,320 --requests 64 --ops sample,argmax,verify --rounds 1 --reps 1 --warmup 0
 san san_memcheck_pairs.txt $S --tool memcheck --error-exitcode 1 \
   $X --shapes 20011x64 --rows 161,200,288,320 --requests 64 --ops sample,argmax,verify --rounds 1 --reps 1 --warmup 0) &
wait
OUT=$O/ab timeout 200 bash bench/tools/ab_rounds.sh -r 2 pairs \
  "--shapes 151936x4096,128256x8192,262144x3072,152064x5120 --rows 176,192,208,224,256,288,320 --requests 40,52,64 --ops sample,argmax,verify --rounds 2 --reps 10 --warmup 3" \
  rows=$X@FLASHSPEC_TILE_PAIRS_MIN=0 pairs=$X@FLASHSPEC_TILE_PAIRS_MIN=161 > $O/ab_pairs.txt 2>&1
for r in 1 2; do for v in rows pairs; do
  m=0; [ $v = pairs ] && m=161
  FLASHSPEC_TILE_PAIRS_MIN=$m timeout 60 $TB --shapes 151936x4096,128256x8192,262144x3072 \
    --requests 8 --nodes 24,31,39 --rounds 2 --reps 6 > $O/ab/tree_${v}_$r.txt 2>&1
done; done
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,lts__t_bytes.sum,smsp__inst_executed.sum,launch__block_size,launch__grid_size
for v in rows pairs; do
  m=0; [ $v = pairs ] && m=161
  FLASHSPEC_TILE_PAIRS_MIN=$m timeout 60 ncu --clock-control none -k regex:'fsh' -c 4 --csv --metrics $M \
    $X --shapes 151936x4096 --rows 256,320 --ops sample,argmax --rounds 1 --reps 1 --warmup 0 --gemm heuristic > $O/ncu_pairs_$v.csv 2>&1
done

# ---- call 2: the GPU suite on the committed default, mutants, sanitizers
# of the agreement test, the default against the rows kernel, the sweep
O=/tmp/o2; mkdir -p $O/ab
san() { local out=$1; shift; timeout 330 "$@" > $O/$out 2>&1; echo "rc=$?" >> $O/$out; }
(cd $B && timeout 400 ctest -L gpu -j4 --output-on-failure > $O/ctest_gpu.txt 2>&1; echo "rc=$?" >> $O/ctest_gpu.txt) &
(export FLASHSPEC_TILE_PAIRS_MIN=161
 san mut_m_prow_agree.txt $F/m_prow/test_gpu_agree
 san mut_m_hrow_agree.txt $F/m_hrow/test_gpu_agree) &
(cd $B/tests && export FS_GPU_TEST_SMALL=1
 FS_GPU_TEST_SMALL_ROWS=320 FLASHSPEC_TILE_PAIRS_MIN=161 san san_memcheck_agree_pairs.txt $S --tool memcheck --error-exitcode 1 ./test_gpu_agree
 FS_GPU_TEST_SMALL_ROWS=160 FLASHSPEC_HOPPER_ROWS_MIN=161 san san_synccheck_agree_tile.txt $S --tool synccheck --error-exitcode 1 ./test_gpu_agree) &
(cd $B/tests && FS_GPU_TEST_SMALL=1 FS_GPU_TEST_SMALL_ROWS=320 FLASHSPEC_TILE_PAIRS_MIN=161 san san_racecheck_agree_pairs.txt $S --tool racecheck --racecheck-report all --error-exitcode 1 ./test_gpu_agree) &
wait
OUT=$O/ab timeout 200 bash bench/tools/ab_rounds.sh -r 3 def \
  "--shapes 151936x4096,128256x8192,262144x3072,152064x5120 --rows 257,272,288,304,320 --requests 52,56,60,64 --ops sample,argmax,verify --rounds 2 --reps 10 --warmup 3" \
  rows=$X@FLASHSPEC_TILE_PAIRS_MIN=0 new=$X > $O/ab_def.txt 2>&1
for r in 1 2; do for v in rows new; do
  e=FLASHSPEC_TILE_PAIRS_MIN=0; [ $v = new ] && e=FS_UNUSED=1
  env $e timeout 60 $TB --shapes 151936x4096,128256x8192,262144x3072,152064x5120 \
    --requests 8 --nodes 31,39 --rounds 2 --reps 6 > $O/ab/tree_${v}_$r.txt 2>&1
done; done
timeout 400 $X --shapes 151936x4096,128256x8192,262144x3072 > $O/sweep.txt 2>&1
# off the device: bench_ab_table.py --methods fs_sample,fs_draft_argmax,fs_verify,cublas_matmul
#   rows='runs/call1_pairs_rows_*.txt' pairs='runs/call1_pairs_pairs_*.txt' > bench_table_call1.txt
#   (call 2: rows / new = runs/call2_def_*); issue20_score.py sweep.txt > issue20_score.txt;
#   ncu_metrics_table.py ncu_pairs_rows.csv ncu_pairs_pairs.csv > ncu_320_table.txt
