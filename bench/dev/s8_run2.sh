#!/usr/bin/env bash
# Session 8, run 2: the producer-drawn noise without spills (registers 40 /
# 232, row state slimmed; run 1's build spilled 52-64 bytes in the
# consumers): agreement test, A/B against 7ac2973 (ab_base.tar), two
# alternating rounds; then kernel durations (ncu) of fs_sample at 320 rows
# and fs_verify of 64 requests (320 rows) on 151936 x 4096: where verify's
# extra 15-25% goes.
source "$(dirname "$0")/common.sh"
rm -rf /tmp/base && mkdir -p /tmp/base && tar -xf ab_base.tar -C /tmp/base
( build_bench build-b /tmp/base ) > $OUT/build_b.txt 2>&1 &
build_bench build-sm90a
timeout 40 build-sm90a/bench/flashspec_bench --shapes 151936x4096 --rows 128,256 --requests 64 --reps 3 --warmup 1 > $OUT/smoke.txt 2>&1
rc=$?; echo "smoke rc=$rc"; tail -3 $OUT/smoke.txt
[ $rc = 0 ] || exit 1
export FS_BUILD_DIR=build-sm90a FS_BENCH=ON FS_SANITIZE=0
FS_CTEST_REGEX='test_gpu_agree' timeout 200 bash bench/run_gpu_tests.sh > $OUT/tests_stdout.txt 2>&1
echo "tests rc=$?"; grep -E "agreement over all|tests passed|FAILED" $OUT/gpu_tests.log | sort | uniq -c | head
wait
A=build-sm90a/bench/flashspec_bench
B=build-b/bench/flashspec_bench
ARGS="--shapes 151936x4096,128256x8192 --rows 128,256,320 --requests 32,64 --reps 30 --warmup 3"
summ() { grep -E '^(sample|argmax|verify) +fs_' $1 | awk '{print $1,$3,$5,$7,$9}' | paste -sd' '; }
for round in 1 2; do
  timeout 80 $A $ARGS > $OUT/new_$round.txt 2>&1; echo "== new $round: $(summ $OUT/new_$round.txt)"
  timeout 80 $B $ARGS > $OUT/old_$round.txt 2>&1; echo "== old $round: $(summ $OUT/old_$round.txt)"
done
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for op in sample verify; do
  timeout 90 "$NCU" --clock-control none -k regex:'^(fs|fshr)_' -c 12 --metrics gpu__time_duration.sum \
    $A --shapes 151936x4096 --rows 320 --requests 64 --ops $op --reps 1 --warmup 1 > $OUT/ncu_$op.txt 2>&1
  echo "== ncu $op"; grep -E "^\s+(fs|fshr)_\w+|gpu__time_duration" $OUT/ncu_$op.txt | sed -E 's/\(CUtensorMap_st.*|<.*//' | paste - - | awk '{print $1, $(NF-1), $NF}' | head -14
done
