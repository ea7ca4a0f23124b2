#!/usr/bin/env bash
# Session 9, run 1: the rows kernel with 192-row CTAs (3 consumer
# warpgroups, 128-token tiles) for 129-192 rows, and the tile kernel's
# shared memory aligned by an offset (LDS / STS instead of generic LD / ST).
# Build, smoke, agreement (default and every row count at 192-row CTAs),
# then A/B 128 vs 192 rows per CTA at 129-192 rows and 320, two rounds.
source "$(dirname "$0")/common.sh"
export FS_BUILD_DIR=build-sm90a FS_BENCH=ON FS_SANITIZE=0
# build (tests and benchmark), with one CPU test
FS_CTEST_REGEX='^test_api$' timeout 300 bash bench/run_gpu_tests.sh > $OUT/build_stdout.txt 2>&1
echo "build rc=$?"
A=build-sm90a/bench/flashspec_bench
[ -x $A ] || { echo "no bench"; tail -30 $OUT/gpu_tests.log; exit 1; }
# smoke: a hang of the new kernel ends here
for rb in 128 192; do
  FLASHSPEC_HOPPER_ROW_BLOCK=$rb timeout 30 $A --shapes 151936x4096 --rows 160 --requests 32 --reps 3 --warmup 1 > $OUT/smoke_$rb.txt 2>&1
  rc=$?; echo "smoke rb $rb rc=$rc"; grep -E "^(sample|argmax|verify) +fs_" $OUT/smoke_$rb.txt
  [ $rc = 0 ] || exit 1
done
export FS_CTEST_REGEX='^test_gpu_agree$|^test_gpu_agree_rows192$'
timeout 240 bash bench/run_gpu_tests.sh > $OUT/tests_stdout.txt 2>&1
echo "tests rc=$?"; grep -vE "^$" $OUT/gpu_tests_summary.txt | tail -6
grep -E "agreement over all|tests passed|FAILED|differ" $OUT/gpu_tests.log | head
ARGS_S="--shapes 151936x4096,128256x8192 --rows 144,160,192,320 --ops sample,argmax --reps 30 --warmup 3"
ARGS_V="--shapes 151936x4096,128256x8192 --requests 28,32,38,64 --ops verify --reps 30 --warmup 3"
summ() { grep -E '^(sample|argmax|verify) +(fs_|cublas_matmul)' $1 | awk '{print $2,$5,$7,$9}' | paste -sd' '; }
for round in 1 2; do
  for rb in 128 192; do
    FLASHSPEC_HOPPER_ROW_BLOCK=$rb timeout 90 $A $ARGS_S > $OUT/s_rb${rb}_$round.txt 2>&1
    echo "== sample/argmax rb $rb round $round rc=$?: $(summ $OUT/s_rb${rb}_$round.txt)"
    FLASHSPEC_HOPPER_ROW_BLOCK=$rb timeout 90 $A $ARGS_V > $OUT/v_rb${rb}_$round.txt 2>&1
    echo "== verify rb $rb round $round rc=$?: $(summ $OUT/v_rb${rb}_$round.txt)"
  done
done
