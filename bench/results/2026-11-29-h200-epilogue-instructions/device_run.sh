#!/usr/bin/env bash
# Eight device calls on one H200; builds made off the device and carried
# (bench/tools/carry_pack.sh /tmp/b-full; carry ["carry-bin", ".deps"]; and
# carry-bin/extra.txz: the session's starting build, 93e5ba3, as
# bench_old / tree_old, and the m_amaxnan mutant's test_gpu_bad_input,
# built with kernels/scan_hopper.cu's fmax_nan as fmaxf).  Call 1 ran the
# block-push and argmax commits, call 2 the same build, call 3 the 80-96-row
# EW blocks and 96-row pairs behind knobs, call 4 the same build, call 5 a
# build whose H200 default lost ew_min_bn (its tests and sanitizers, which
# set the knobs, are kept; its timings are not), call 6 the rows kernel of
# the start against the new one, call 7 the committed defaults, call 8 the
# argmax guard.  Each call began:
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
B=/tmp/b-full X=$B/bench/flashspec_bench TB=$B/bench/tree_bench F=/tmp/fsb
S=compute-sanitizer; command -v $S >/dev/null || S=/usr/local/cuda/bin/compute-sanitizer
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
san() { local out=$1; shift; timeout 250 "$@" > $O/$out 2>&1; echo "rc=$?" >> $O/$out; }
M=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,launch__block_size,launch__grid_size

# ---- call 1 (O=/tmp/o1): GPU suite, sanitizers, A/B against the start, ncu
O=/tmp/o1; mkdir -p $O/ab
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $O/gpu.txt 2>&1
(cd $B && timeout 330 ctest -L gpu -j4 --output-on-failure > $O/ctest_gpu.txt 2>&1) &
(cd $B/tests && export FS_GPU_TEST_SMALL=1
 san san_memcheck_bad_input.txt $S --tool memcheck --error-exitcode 1 ./test_gpu_bad_input
 FLASHSPEC_HOPPER_ROWS_MIN=161 FLASHSPEC_TILE_PAIRS_MIN=161 san san_memcheck_argmax.txt $S --tool memcheck --error-exitcode 1 \
   $X --shapes 20011x64 --rows 12,96,136,160,300 --requests 20,64 --ops sample,argmax,verify --rounds 1 --reps 1 --warmup 0
 FLASHSPEC_HOPPER_ROWS_MIN=161 FLASHSPEC_TILE_PAIRS_MIN=161 san san_racecheck_argmax.txt $S --tool racecheck --racecheck-report all --kernel-name kns=fsh_scan_kernel --error-exitcode 1 \
   $X --shapes 20011x64 --rows 96,160,300 --requests 20 --ops argmax,sample --rounds 1 --reps 1 --warmup 0) &
wait
OUT=$O/ab timeout 200 bash bench/tools/ab_rounds.sh -r 3 epi \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 64,128,160,192,288,320,512 --requests 16,32,64 --ops sample,argmax,verify --rounds 2 --reps 10 --warmup 3" \
  old=$F/bench_old new=$X > $O/ab_epi.txt 2>&1
for v in old new; do
  Y=$X; [ $v = old ] && Y=$F/bench_old
  timeout 40 $NCU --clock-control none -k regex:'fsh_scan' -c 4 --csv --metrics $M \
    $Y --shapes 151936x4096 --rows 160,320 --ops sample,argmax --rounds 1 --reps 1 --warmup 0 --gemm heuristic > $O/ncu_$v.csv 2>&1
done

# ---- call 2 (O=/tmp/o2): the mutant, pairs at 200-256 rows, trees in pairs, a sweep
# (superseded by call 7's, not kept)
O=/tmp/o2; mkdir -p $O/ab
(cd $B/tests && san mut_m_amaxnan_bad_input.txt $F/m_amaxnan/test_gpu_bad_input)
OUT=$O/ab timeout 150 bash bench/tools/ab_rounds.sh -r 2 p256 \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 200,224,240,256 --requests 40,48 --ops sample,argmax,verify --rounds 2 --reps 10 --warmup 3" \
  rows=$X pairs=$X@FLASHSPEC_TILE_PAIRS_MIN=193 > $O/ab_p256.txt 2>&1
for r in 1 2; do for v in rows pairs; do
  E=""; [ $v = pairs ] && E="FLASHSPEC_TILE_PAIRS_MIN=161"
  env $E timeout 60 $TB --shapes 151936x4096,262144x3072 --requests 8 --nodes 31,39 --rounds 2 --reps 6 > $O/ab/tree_${v}_$r.txt 2>&1
done; done
timeout 300 $X --shapes 151936x4096,128256x8192,262144x3072 > $O/sweep.txt 2>&1

# ---- call 3 (O=/tmp/o3): the new tests and variants, the mutant, 80-96-row EW
# blocks against the plain ones and the rows kernel, 96-row pairs
O=/tmp/o3; mkdir -p $O/ab
(cd $B && timeout 300 ctest -R '^test_gpu_(bad_input|agree_ew_small|tree_ew_small|agree_pairs|tree_pairs|agree_tile160|single)$' -j4 --output-on-failure > $O/ctest_3.txt 2>&1) &
(san mut_m_amaxnan_bad_input.txt $F/m_amaxnan/test_gpu_bad_input) &
wait
OUT=$O/ab timeout 170 bash bench/tools/ab_rounds.sh -r 2 small \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 72,80,88,96 --requests 16,18 --ops sample,argmax,verify --rounds 2 --reps 10 --warmup 3" \
  rowsk=$X plain=$X@FLASHSPEC_HOPPER_ROWS_MIN=161 ew=$X@FLASHSPEC_HOPPER_ROWS_MIN=161,FLASHSPEC_TILE_EW_MIN_ROWS=80 > $O/ab_small.txt 2>&1
OUT=$O/ab timeout 120 bash bench/tools/ab_rounds.sh -r 2 p192 \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 168,176,192 --requests 34,38 --ops sample,argmax,verify --rounds 2 --reps 10 --warmup 3" \
  rowsk=$X pairs=$X@FLASHSPEC_TILE_PAIRS_MIN=161 > $O/ab_p192.txt 2>&1

# ---- call 4 (O=/tmp/o4): trees of 72-160 rows on the tile kernel (EW from 80)
# against the default then (the rows kernel from 65 / 81 rows); D = 8192 and
# 5120 at 104-128 rows, the rows kernel against the tile kernel
O=/tmp/o4; mkdir -p $O/ab
for r in 1 2; do for v in dflt tile; do
  E=""; [ $v = tile ] && E="FLASHSPEC_HOPPER_ROWS_MIN=161 FLASHSPEC_TILE_EW_MIN_ROWS=80"
  env $E timeout 100 $TB --shapes 151936x4096,128256x8192,262144x3072 --requests 8 --nodes 8,9,11,15,19 --rounds 2 --reps 6 > $O/ab/tree_${v}_$r.txt 2>&1
done; done
OUT=$O/ab timeout 150 bash bench/tools/ab_rounds.sh -r 2 d8k \
  "--shapes 128256x8192,152064x5120 --rows 104,120,128 --requests 22,25 --ops sample,argmax,verify --rounds 2 --reps 10 --warmup 3" \
  rowsk=$X tile=$X@FLASHSPEC_HOPPER_ROWS_MIN=161 > $O/ab_d8k.txt 2>&1

# ---- call 5 (O=/tmp/o5): GPU suite, sanitizers of the 80-96-row EW blocks
# (its A/B, trees and sweep ran on a build whose H200 default lost
# ew_min_bn and are not kept)
O=/tmp/o5; mkdir -p $O/ab
(cd $B && timeout 420 ctest -L gpu -j4 --output-on-failure > $O/ctest_gpu.txt 2>&1) &
(export FLASHSPEC_TILE_EW_MIN_ROWS=80 FLASHSPEC_HOPPER_ROWS_MIN=161 FS_GPU_TEST_SMALL=1
 cd $B/tests
 san san_racecheck_ew_small.txt $S --tool racecheck --racecheck-report all --kernel-name kns=fsh_scan_kernel --error-exitcode 1 \
   $X --shapes 20011x64 --rows 72,90 --requests 16,18 --ops sample,argmax,verify --rounds 1 --reps 1 --warmup 0
 san san_memcheck_ew_small.txt $S --tool memcheck --error-exitcode 1 \
   $X --shapes 20011x64 --rows 65,72,80,81,90,96 --requests 13,16,19 --ops sample,argmax,verify --rounds 1 --reps 1 --warmup 0
 san san_synccheck_ew_small.txt $S --tool synccheck --error-exitcode 1 \
   $X --shapes 20011x64 --rows 72,96 --requests 16 --ops sample,verify --rounds 1 --reps 1 --warmup 0
 FS_GPU_TEST_SMALL_ROWS=96 san san_memcheck_agree_ew_small.txt $S --tool memcheck --error-exitcode 1 ./test_gpu_agree
 unset FLASHSPEC_TILE_EW_MIN_ROWS FLASHSPEC_HOPPER_ROWS_MIN
 san san_memcheck_bad_input.txt $S --tool memcheck --error-exitcode 1 ./test_gpu_bad_input) &
wait

# ---- call 6 (O=/tmp/o6): the rows kernel of the start against the new one
O=/tmp/o6; mkdir -p $O/ab
OUT=$O/ab timeout 200 bash bench/tools/ab_rounds.sh -r 3 rowsk \
  "--shapes 151936x4096,262144x3072 --rows 96,192,512 --requests 16,64 --ops sample,argmax,verify --rounds 2 --reps 10 --warmup 3" \
  start=$F/bench_old@FLASHSPEC_HOPPER_ROWS_MIN=1 now=$X@FLASHSPEC_HOPPER_ROWS_MIN=1 > $O/ab_rowsk.txt 2>&1

# ---- call 7 (O=/tmp/o7, the committed defaults): GPU suite, which kernel
# 72-96 rows launch, A/B against the session's start, trees, the sweep
O=/tmp/o7; mkdir -p $O/ab
(cd $B && timeout 330 ctest -L gpu -j4 --output-on-failure > $O/ctest_gpu.txt 2>&1)
timeout 40 $NCU --clock-control none -k regex:'fsh' -c 6 --csv --metrics launch__block_size,launch__grid_size,gpu__time_duration.sum \
  $X --shapes 262144x3072 --rows 72,96 --requests 16 --ops sample,argmax,verify --rounds 1 --reps 1 --warmup 0 --gemm heuristic > $O/ncu_launch.csv 2>&1
OUT=$O/ab timeout 130 bash bench/tools/ab_rounds.sh -r 2 dflt \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 72,96,128,160,320 --requests 16,32,64 --ops sample,argmax,verify --rounds 2 --reps 10 --warmup 3" \
  start=$F/bench_old now=$X > $O/ab_dflt.txt 2>&1
for r in 1 2; do for v in start now; do
  T=$TB; [ $v = start ] && T=$F/tree_old
  timeout 60 $T --shapes 151936x4096,262144x3072 --requests 8 --nodes 11,19,39 --rounds 2 --reps 6 > $O/ab/tree_${v}_$r.txt 2>&1
done; done
timeout 200 $X --shapes 151936x4096,128256x8192,262144x3072 > $O/sweep.txt 2>&1

# ---- call 8 (O=/tmp/o8): the argmax guard (Args::argmax only without bias
# or mask; host code), the tests of the argmax and tile-kernel paths
O=/tmp/o8; mkdir -p $O
(cd $B && timeout 200 ctest -R '^test_gpu_(bad_input|single|agree_tile160|agree_pairs|agree_ew_small|tp)$' -j4 --output-on-failure > $O/ctest_8.txt 2>&1)
# off the device: bench_ab_table.py --methods fs_sample,fs_draft_argmax,fs_verify,cublas_matmul
#   A='runs/callN_TAG_A_*.txt' B='runs/callN_TAG_B_*.txt' > bench_table_callN*.txt; tree
#   tables: the tree rows of runs/callN_tree_*; issue20_score.py sweep.txt > issue20_score.txt;
#   ncu_metrics_table.py ncu_call1_*.csv and their smsp__inst_executed.sum rows
