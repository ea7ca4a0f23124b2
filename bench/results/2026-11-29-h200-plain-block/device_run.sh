#!/usr/bin/env bash
# Four device calls on one H200; builds made off the device and carried
# (bench/tools/carry_pack.sh /tmp/b-full; carry ["carry-bin", ".deps"]; and
# carry-bin/extra.txz: the session's starting build, 349c996, as
# bench_old / tree_old, and the two plain_block mutants' test_gpu_bad_input,
# built with kernels/scan_hopper.cu's plain_block changed: m_plain_nan
# without its NaN-sum check, m_plain_ovf testing the logits' max for
# overflow (fabsf(ml) < INFINITY) instead of the scores').  Each call began:
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
B=/tmp/b-full X=$B/bench/flashspec_bench TB=$B/bench/tree_bench F=/tmp/fsb
S=compute-sanitizer; command -v $S >/dev/null || S=/usr/local/cuda/bin/compute-sanitizer
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
san() { local out=$1; shift; timeout 250 "$@" > $O/$out 2>&1; echo "rc=$?" >> $O/$out; }
M=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,launch__block_size,launch__grid_size

# ---- call 1 (O=/tmp/o1): A/B of the start against the new push, trees, ncu
O=/tmp/o1; mkdir -p $O/ab
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $O/gpu.txt 2>&1
OUT=$O/ab timeout 330 bash bench/tools/ab_rounds.sh -r 3 push \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 16,64,80,96,128,144,160,288,320 --requests 16,32,64 --ops sample,argmax,verify --rounds 2 --reps 10 --warmup 3" \
  old=$F/bench_old new=$X > $O/ab_push.txt 2>&1
for r in 1 2; do for v in old new; do
  Y=$TB; [ $v = old ] && Y=$F/tree_old
  timeout 50 $Y --shapes 151936x4096,262144x3072 --requests 8 --nodes 11,19,39 --rounds 2 --reps 6 > $O/ab/tree_${v}_$r.txt 2>&1
done; done
for v in old new; do
  Y=$X; [ $v = old ] && Y=$F/bench_old
  timeout 40 $NCU --clock-control none -k regex:'fsh_scan' -c 6 --csv --metrics $M \
    $Y --shapes 151936x4096 --rows 64,128,160 --ops sample,argmax --rounds 1 --reps 1 --warmup 0 --gemm heuristic > $O/ncu_$v.csv 2>&1
done
# bench_table_call1.txt: bench/tools/bench_ab_table.py --methods fs_sample,fs_draft_argmax,fs_verify,cublas_matmul \
#   old='ab/push_old_*.txt' new='ab/push_new_*.txt'

# ---- call 2 (O=/tmp/o2): GPU suite, sanitizers of the new push, the mutants, trees
O=/tmp/o2; mkdir -p $O/ab
(cd $B && timeout 330 ctest -L gpu -j4 --output-on-failure > $O/ctest_gpu.txt 2>&1) &
(cd $B/tests && export FS_GPU_TEST_SMALL=1
 san san_memcheck_bad_input.txt $S --tool memcheck --error-exitcode 1 ./test_gpu_bad_input
 FLASHSPEC_HOPPER_ROWS_MIN=161 FLASHSPEC_TILE_PAIRS_MIN=161 san san_memcheck_push.txt $S --tool memcheck --error-exitcode 1 \
   $X --shapes 20011x64 --rows 12,80,96,128,136,160,300 --requests 16,20,64 --ops sample,verify --rounds 1 --reps 1 --warmup 0
 FLASHSPEC_HOPPER_ROWS_MIN=161 FLASHSPEC_TILE_PAIRS_MIN=161 san san_racecheck_push.txt $S --tool racecheck --racecheck-report all --kernel-name kns=fsh_scan_kernel --error-exitcode 1 \
   $X --shapes 20011x64 --rows 96,128,160,300 --requests 20 --ops sample,verify --rounds 1 --reps 1 --warmup 0) &
wait
(cd $B/tests && for m in m_plain_nan m_plain_ovf; do san mut_${m}_bad_input.txt $F/$m/test_gpu_bad_input; done)
for r in 1 2 3; do for v in old new; do
  Y=$TB; [ $v = old ] && Y=$F/tree_old
  timeout 60 $Y --shapes 151936x4096,262144x3072 --requests 8 --nodes 11,19,39 --rounds 2 --reps 6 > $O/ab/tree_${v}_$r.txt 2>&1
done; done
# (call 2's mutants ran an earlier form of test_gpu_bad_input, which
# m_plain_ovf passed; not kept.  tree_ab_calls12.txt: calls 1-2's tree runs.)

# ---- call 3 (O=/tmp/o3): test_gpu_bad_input with the -inf-score block, the mutants, trees
O=/tmp/o3; mkdir -p $O
(cd $B/tests && san test_gpu_bad_input.txt ./test_gpu_bad_input
 for m in m_plain_nan m_plain_ovf; do san mut_${m}_bad_input.txt $F/$m/test_gpu_bad_input; done)
timeout 260 $TB > $O/tree_bench_1.txt 2>&1

# ---- call 4 (O=/tmp/o4): the sweep, trees twice more
O=/tmp/o4; mkdir -p $O
timeout 400 $X --shapes 151936x4096,128256x8192,262144x3072 > $O/sweep.txt 2>&1
for r in 2 3; do timeout 60 $TB > $O/tree_bench_$r.txt 2>&1; done
# issue20_score.txt: bench/tools/issue20_score.py sweep.txt
# tree_table.txt: the three tree_bench runs' ranges per cell

# ---- call 8 (O=/tmp/o8): tree rows' blocks without a child on plain_block
# too (carry-bin/extra.txz: cedda1f's tree_bench as tree_cedda)
O=/tmp/o8; mkdir -p $O/ab
(cd $B && timeout 300 ctest -R '^test_gpu_(tree.*|agree|agree_ew_small|agree_tile160|agree_pairs)$' -j4 --output-on-failure > $O/ctest_tree_agree.txt 2>&1)
for r in 1 2 3; do for v in prev new; do
  Y=$TB; [ $v = prev ] && Y=$F/tree_cedda
  timeout 60 $Y --shapes 151936x4096,128256x8192,262144x3072 --requests 4,8 --nodes 11,15,19,39 --rounds 2 --reps 6 > $O/ab/tree_${v}_$r.txt 2>&1
done; done

# ---- call 9 (O=/tmp/o9): the GPU suite on the final build (514484b's kernels)
O=/tmp/o9; mkdir -p $O
(cd $B && timeout 330 ctest -L gpu -j4 --output-on-failure > $O/ctest_gpu.txt 2>&1)
