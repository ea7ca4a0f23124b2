#!/usr/bin/env bash
# Session 6, run 8: after the review (the multicast knob through the context
# and fs_hopper_opts, the cluster count asked once per device, cluster-of-3
# code removed): agreement (default and rows forced), graph, bad input; the
# knob still switches the clusters (200 rows, on / off).
source "$(dirname "$0")/common.sh"
export FS_BUILD_DIR=build-sm90a FS_BENCH=ON FS_SANITIZE=0
FS_CTEST_REGEX='test_gpu_agree$|_rowsm|test_gpu_graph|test_gpu_bad_input' timeout 420 bash bench/run_gpu_tests.sh > $OUT/tests_stdout.txt 2>&1
echo "tests rc=$?"; grep -E "agreement over all|tests passed|Failed|FAILED" $OUT/gpu_tests.log | sort | uniq -c | head
A=build-sm90a/bench/flashspec_bench
summ() { grep -E '^(sample|argmax|verify) +fs_' $1 | awk '{print $1,$3,$5,$9}' | paste -sd' '; }
ARGS="--shapes 128256x8192 --rows 200,256 --requests 48 --reps 20 --warmup 3"
timeout 90 $A $ARGS > $OUT/mc.txt 2>&1; echo "== multicast: $(summ $OUT/mc.txt)"
FLASHSPEC_HOPPER_NO_MULTICAST=1 timeout 90 $A $ARGS > $OUT/nomc.txt 2>&1; echo "== no multicast: $(summ $OUT/nomc.txt)"
