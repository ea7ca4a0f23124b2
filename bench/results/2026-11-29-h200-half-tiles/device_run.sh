#!/usr/bin/env bash
# The device calls that made this folder (one H200), from the repository
# root with carry ["carry-bin", ".deps"]: carry-bin/all.txz packed by
# bench/tools/carry_pack.sh from a build of the change (/tmp/b-full), and
# carry-bin/extra.txz holding ef66af1's flashspec_bench (base/) and
# test_gpu_agree linked with mutant_halfnoise.patch (mut/).  Each began:
set -u
T0=$(date +%s); O=/tmp/o; mkdir -p $O; el() { echo "$1 $(( $(date +%s) - T0 )) s" >> $O/log.txt; }
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
export PATH=/usr/local/cuda/bin:$PATH
B=/tmp/b-full
# ---- call 2: timings, the GPU suite, the mutant, memcheck
OUT=$O/ab timeout 200 bash bench/tools/ab_rounds.sh -r 3 half \
  "--shapes 128256x8192,262144x3072,151936x4096 --rows 448,512,576,640,768 --requests 102,128 --ops sample,argmax,verify --rounds 1 --reps 15" \
  base=/tmp/fsb/base/flashspec_bench new=$B/bench/flashspec_bench > $O/ab_summary.txt 2>&1; el "ab rc=$?"
(cd $B && timeout 330 ctest -L gpu -j4 --output-on-failure > $O/ctest_gpu.txt 2>&1; echo "rc=$?" >> $O/ctest_gpu.txt) &
(cd $B/tests && FLASHSPEC_HOPPER_ROWS_MIN=1 FS_GPU_TEST_SMALL=1 timeout 200 /tmp/fsb/mut/test_gpu_agree \
   > $O/mut_halfnoise_agree_rowsm.txt 2>&1; echo "rc=$?" >> $O/mut_halfnoise_agree_rowsm.txt) &
(cd $B/tests && FLASHSPEC_HOPPER_ROWS_MIN=1 FS_GPU_TEST_SMALL=1 timeout 300 compute-sanitizer --tool memcheck \
   --error-exitcode 9 ./test_gpu_agree > $O/san_memcheck_agree_rowsm.txt 2>&1; echo "rc=$?" >> $O/san_memcheck_agree_rowsm.txt) &
wait; el "tests"
# ---- call 3: the rows kernel's launches under ncu at base clocks
M=gpu__time_duration.sum,sm__cycles_elapsed.max,launch__grid_size,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
ARGS="--shapes 128256x8192,262144x3072 --rows 448,512,640 --requests 128 --ops sample,argmax,verify --rounds 1 --reps 2 --warmup 0 --gemm heuristic"
for r in 1 2; do
  for v in base new; do
    BIN=/tmp/fsb/base/flashspec_bench; [ $v = new ] && BIN=$B/bench/flashspec_bench
    timeout 130 ncu --clock-control base -k regex:'fshr_scan' --csv --metrics $M $BIN $ARGS \
      > $O/ncu_${v}_$r.csv 2>&1; el "ncu $v $r rc=$?"
  done
done
# tables (off the device):
#   bench/tools/bench_ab_table.py --methods cublas_matmul,cublas+argmax,fs_sample,fs_draft_argmax,fs_verify \
#     base='runs/half_base_*.txt' new='runs/half_new_*.txt' > bench_ab_table_call2.txt
#   bench/tools/ncu_launch_ab.py base='ncu_base_*.csv' new='ncu_new_*.csv' > ncu_ab_call3.txt
tar czf $OUT/out.tgz -C $O .
# ---- call 5: the tree kernels with half tiles too (variant_tree_half_tiles.patch,
# tree_bench and test_gpu_tree linked with it, carried as v/), 46c76b5 as base
M=gpu__time_duration.sum,sm__cycles_elapsed.max,launch__grid_size,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
ARGS="--shapes 128256x8192,151936x4096 --requests 16,64 --nodes 8,32,64 --rounds 1 --reps 2"
for r in 1 2; do
  for v in base new; do
    BIN=$B/bench/tree_bench; [ $v = new ] && BIN=/tmp/fsb/v/tree_bench
    timeout 100 ncu --clock-control base -k regex:'fshr_scan' --csv --metrics $M $BIN $ARGS \
      > $O/ncu_tree_${v}_$r.csv 2>&1; el "ncu $v $r rc=$?"
  done
done
(cd $B/tests && FLASHSPEC_HOPPER_ROWS_MIN=1 timeout 200 /tmp/fsb/v/test_gpu_tree > $O/tree_rowsm_v.txt 2>&1)
#   bench/tools/ncu_launch_ab.py base='ncu_tree_base_*.csv' new='ncu_tree_new_*.csv' > ncu_tree_ab_call5.txt
