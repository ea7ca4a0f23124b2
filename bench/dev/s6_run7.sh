#!/usr/bin/env bash
# Session 6, run 7 (final, commit 345e980 + later docs): every GPU test, the
# benchmark sweep and the ncu profile (bench/run_device.sh all, sanitizers
# off), then memcheck and racecheck of the benchmark on a small shape whose
# 200-row and verify calls take the rows kernel's 2-CTA clusters.
source "$(dirname "$0")/common.sh"
FS_SANITIZE=0 timeout 480 bash bench/run_device.sh all > $OUT/run_device_stdout.txt 2>&1
echo "run_device rc=$?"
grep -vE "^$" $OUT/gpu_tests_summary.txt | grep -v SKIP | tail -5
grep -E "agreement over all" $OUT/gpu_tests.log | head -3
grep -E "^ +[0-9]+/[0-9]+ Test" $OUT/gpu_tests.log | grep -v Passed | head
grep -E "targets|MISS" $OUT/bench.txt | head -20
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
for tool in memcheck racecheck; do
  timeout 150 $SAN --tool $tool --error-exitcode 1 build-sm90a/bench/flashspec_bench --shapes 30011x512 \
    --rows 200 --requests 48 --reps 1 --warmup 0 > /tmp/san_$tool.txt 2>&1
  echo "$tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' /tmp/san_$tool.txt | head -2)"
  tail -5 /tmp/san_$tool.txt > $OUT/san_${tool}_tail.txt
done
