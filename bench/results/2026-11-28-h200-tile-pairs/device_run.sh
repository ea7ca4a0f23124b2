#!/usr/bin/env bash
# One device call on an H200: the build with tile_pairs.patch carried by
# bench/tools/carry_pack.sh.
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
O=/tmp/o; mkdir -p $O/ab
B=/tmp/b-full/bench
(cd /tmp/b-full && FLASHSPEC_TILE_PAIRS=1 ctest --timeout 100 \
  -R "test_gpu_agree$|test_gpu_single|test_gpu_stat$|test_gpu_tree$|test_gpu_graph|test_gpu_bad_input" \
  > $O/ctest_pairs.txt)
OUT=$O/ab bash bench/tools/ab_rounds.sh -r 3 pairs \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 48,64,80,96 --requests 10,13,16,19 --rounds 2 --reps 10" \
  def=$B/flashspec_bench pairs=$B/flashspec_bench@FLASHSPEC_TILE_PAIRS=1 \
  pairs_tile=$B/flashspec_bench@FLASHSPEC_TILE_PAIRS=1,FLASHSPEC_HOPPER_ROWS_EARLY=0
for r in 1 2; do for v in def pairs; do
  e=""; [ $v = pairs ] && e="FLASHSPEC_TILE_PAIRS=1"
  env $e $B/tree_bench --shapes 151936x4096,128256x8192 --requests 1,2,4 --nodes 8,16,19,32 \
    --rounds 2 --reps 10 > $O/tree_${v}_$r.txt
done; done
# ab_pairs_table.txt: bench/tools/bench_ab_table.py default='runs/pairs_def_[0-9].txt' \
#   pairs='runs/pairs_pairs_[0-9].txt' pairs_to_96='runs/pairs_pairs_tile_[0-9].txt'

# the default build (e1f0198's kernels): where the warps wait, 16 and 80 rows
for rows in 16 80; do
  ncu --clock-control none --csv -k regex:'fsh_scan' -c 1 \
    --section WarpStateStats --section SchedulerStats --section SpeedOfLight --section Occupancy \
    --metrics gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active \
    $B/flashspec_bench --shapes 151936x4096 --rows $rows --ops sample --rounds 1 --reps 1 --warmup 0 \
    --gemm heuristic > $O/ncu_sched_${rows}rows.csv
  ncu --clock-control none --csv -k regex:'fsh_scan' -c 1 \
    --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio \
    $B/flashspec_bench --shapes 151936x4096 --rows $rows --ops sample --rounds 1 --reps 1 --warmup 0 \
    --gemm heuristic > $O/ncu_stalls_${rows}rows.csv
done
