#!/usr/bin/env bash
# Session 9, run 4: H of a row block wholly in range as one TMA box (this
# tree) vs always as 64-row slices (ab_base.tar, run 3's code) at 176-320
# rows, where run 3 hinted the extra boxes cost ~2%.  Agreement first (the
# three agreement tests), two alternating rounds.  Output also in
# $OUT/run4.txt.
source "$(dirname "$0")/common.sh"
exec > >(tee $OUT/run4.txt) 2>&1
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
S="--shapes 151936x4096,128256x8192 --rows 128,192,256,320 --requests 32,64 --reps 25 --warmup 3"
for round in 1 2; do
  for v in new:$A base:$B; do
    timeout 110 ${v#*:} $S > $OUT/w_${v%%:*}_$round.txt 2>&1
    echo "== ${v%%:*} round $round rc=$?: $(summ $OUT/w_${v%%:*}_$round.txt)"
  done
done
