#!/usr/bin/env bash
# Session 9, run 3: H loaded as one 64-row box per warpgroup, moved back so
# that no box reaches past the last row (run 2: 136 rows took 11% longer
# than 192 with the 192-row shape, as if the TMA's zero fill were slow), vs
# ab_base.tar (the one-box H load, 5 stages).  Agreement (default, every row
# count in the rows kernel, and at 192-row CTAs), then two alternating
# rounds.  Everything printed also goes to $OUT/run3.txt.
source "$(dirname "$0")/common.sh"
exec > >(tee $OUT/run3.txt) 2>&1
mkdir -p /tmp/base && tar -xf ab_base.tar -C /tmp/base
( build_bench /tmp/base-build /tmp/base ) > $OUT/build_base.txt 2>&1 &
bpid=$!
FS_BUILD_DIR=build-sm90a FS_BENCH=ON FS_SANITIZE=0 FS_CTEST_REGEX='^test_api$' \
  timeout 300 bash bench/run_gpu_tests.sh > $OUT/build_stdout.txt 2>&1
echo "build rc=$?"
wait $bpid; cat $OUT/build_base.txt  # not a bare wait: it would wait for tee too
A=build-sm90a/bench/flashspec_bench B=/tmp/base-build/bench/flashspec_bench
ls -la $A $B >/dev/null || exit 1
timeout 30 $A --shapes 151936x4096 --rows 136,320 --requests 28 --reps 3 --warmup 1 > $OUT/smoke.txt 2>&1
rc=$?; echo "smoke rc=$rc"; [ $rc = 0 ] || exit 1
FS_BUILD_DIR=build-sm90a FS_BENCH=ON FS_SANITIZE=0 \
  FS_CTEST_REGEX='^test_gpu_agree$|^test_gpu_agree_rowsm$|^test_gpu_agree_rows192$' \
  timeout 300 bash bench/run_gpu_tests.sh > $OUT/tests_stdout.txt 2>&1
echo "tests rc=$?"; grep -E "agreement over all|tests passed|FAILED" $OUT/gpu_tests.log | head -6
summ() { grep -E '^(sample|argmax|verify) +(fs_|cublas_matmul)' $1 | awk '{print $2,$5,$7,$9}' | paste -sd' '; }
S="--shapes 151936x4096,128256x8192 --rows 136,144,160,176,256,320 --requests 28,32,64 --reps 25 --warmup 3"
for round in 1 2; do
  for v in new:$A base:$B; do
    timeout 110 ${v#*:} $S > $OUT/h_${v%%:*}_$round.txt 2>&1
    echo "== ${v%%:*} round $round rc=$?: $(summ $OUT/h_${v%%:*}_$round.txt)"
  done
done
