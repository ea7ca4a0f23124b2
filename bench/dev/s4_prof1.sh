#!/usr/bin/env bash
# Runs on commit 31c9292 (the multicast; reverted in 1aa1774): FLASHSPEC_HOPPER_NO_MULTICAST exists only there.
# Session 4, probe 1: why the W multicast is slower -- launch shape (grid,
# cluster, active clusters) and throughput of the rows kernel at 256 rows,
# multicast on and off.
source "$(dirname "$0")/common.sh"
B=build-sm90a/bench/flashspec_bench
M=gpu__time_duration.sum,launch__grid_size,launch__cluster_dim_x,launch__occupancy_cluster_pct,launch__cluster_max_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum.per_second,lts__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_active.avg,smsp__pcsamp_warps_issue_stalled_long_scoreboard,smsp__pcsamp_warps_issue_stalled_barrier,smsp__pcsamp_warps_issue_stalled_wait,smsp__pcsamp_warps_issue_stalled_membar,smsp__pcsamp_warps_issue_stalled_sleeping,smsp__pcsamp_warps_issue_stalled_misc,smsp__pcsamp_warps_issue_stalled_lg_throttle
run() { # label env rows
  echo "=== $1"; env $2 ncu --clock-control none -k regex:fshr_scan -c 1 --metrics $M $B --shapes 151936x4096 --rows $3 --ops argmax --reps 1 --warmup 0 --gemm heuristic 2>&1 | grep -E "^\s+(fsh|void)|gpu__time|launch__|dram__|lts__|tensor|cycles_active|stalled|==ERR|==WARN" ; }
{
run "mc 256" "X=1" 256
run "no mc 256" "FLASHSPEC_HOPPER_NO_MULTICAST=1" 256
} 2>&1 | tee $OUT/s4_prof1.txt
