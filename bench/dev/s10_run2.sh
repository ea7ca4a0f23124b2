#!/usr/bin/env bash
# Session 10, run 2: where the six remaining misses (sample at 256 rows on
# 151936 x 4096; sample, draft argmax, verify at 320 rows on both shapes)
# lose their time.  (a) call times of the final build and of a probe build
# without the rows kernel's epilogue (FSHR_PROBE_NO_EPI: the mainloop alone,
# wrong results) at 256 and 320 rows, with SM clock and power sampled; (b)
# ncu counters of the rows kernel and of cuBLAS's GEMM in the same process:
# time, SM clock, tensor-pipe activity, L2 -> SM and DRAM bytes, stall
# samples.  Output in $OUT/run2.txt and the ncu CSVs.
source "$(dirname "$0")/common.sh"
exec > >(tee $OUT/run2.txt) 2>&1
( [ -f build-probe/CMakeCache.txt ] || cmake -S . -B build-probe -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90a-real -DFLASHSPEC_TESTS=OFF -DFLASHSPEC_BENCH=ON \
    -DCMAKE_CUDA_FLAGS=-DFSHR_PROBE_NO_EPI=1 >/dev/null
  cmake --build build-probe -j8 --target flashspec_bench >/dev/null 2>&1 || echo "BUILD FAILED probe" ) &
ppid=$!
build_bench build-sm90a
wait $ppid
A=build-sm90a/bench/flashspec_bench P=build-probe/bench/flashspec_bench
ls -la $A $P >/dev/null || exit 1
echo "built at ${SECONDS}s"
timeout 30 $A --shapes 151936x4096 --rows 320 --reps 2 --warmup 1 > /dev/null 2>&1 || { echo "smoke failed"; exit 1; }
S="--shapes 151936x4096,128256x8192 --rows 256,320 --requests 64 --reps 15 --warmup 3"
for v in full:$A probe:$P; do
  nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader,nounits -lms 100 > /tmp/smi_${v%%:*}.csv &
  spid=$!
  timeout 120 ${v#*:} $S > $OUT/t_${v%%:*}.txt 2>&1
  rc=$?; kill $spid
  echo "== ${v%%:*} rc=$rc: $(summ $OUT/t_${v%%:*}.txt)"
  sort -t, -k1 -n /tmp/smi_${v%%:*}.csv | awk -F, '$2 > 300 {c[n++]=$1; if ($2 > p) p = $2} END {if (n) print "   SM clock under load (power > 300 W): min " c[0] " median " c[int(n/2)] " MHz; peak power " p " W; samples " n}'
done
echo "timed at ${SECONDS}s"
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,launch__grid_size,launch__cluster_dim_x,launch__block_size,dram__bytes_read.sum,lts__t_bytes.sum,l1tex__m_xbar2l1tex_read_bytes.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,smsp__pcsamp_sample_count,smsp__pcsamp_warps_issue_stalled_selected,smsp__pcsamp_warps_issue_stalled_long_scoreboard,smsp__pcsamp_warps_issue_stalled_barrier,smsp__pcsamp_warps_issue_stalled_wait,smsp__pcsamp_warps_issue_stalled_sleeping,smsp__pcsamp_warps_issue_stalled_math_pipe_throttle,smsp__pcsamp_warps_issue_stalled_short_scoreboard,smsp__pcsamp_warps_issue_stalled_no_instructions,smsp__pcsamp_warps_issue_stalled_membar,smsp__pcsamp_warps_issue_stalled_dispatch_stall,smsp__pcsamp_warps_issue_stalled_mio_throttle
for shape in 151936x4096 128256x8192; do
  [ $SECONDS -lt 430 ] || { echo "skip ncu $shape (time)"; continue; }
  timeout 150 ncu --clock-control none --kernel-name regex:'fshr_scan|nvjet|gemm|xmma|cutlass' --csv \
    --metrics $M $A --shapes $shape --rows 256,320 --requests 64 --reps 1 --warmup 0 \
    > $OUT/ncu_full_$shape.csv 2> /tmp/ncu_$shape.err
  echo "ncu $shape rc=$? at ${SECONDS}s; $(grep -c fshr_scan $OUT/ncu_full_$shape.csv) fshr rows"; tail -2 /tmp/ncu_$shape.err
done
if [ $SECONDS -lt 520 ]; then
  timeout 60 ncu --clock-control none --kernel-name regex:'fshr_scan' --csv --metrics $M $P \
    --shapes 151936x4096 --rows 256,320 --requests 64 --ops sample,argmax --reps 1 --warmup 0 \
    > $OUT/ncu_probe_151936x4096.csv 2>/dev/null
  echo "ncu probe rc=$? at ${SECONDS}s"
fi
gzip -f $OUT/ncu_*.csv
