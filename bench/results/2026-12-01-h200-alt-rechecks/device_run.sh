#!/usr/bin/env bash
# The device calls that made this folder (one H200 each; `bash run.sh N`
# ran stage N), from the repository root with carry ["carry-bin", ".deps"]:
# carry-bin/all.txz packed by bench/tools/carry_pack.sh /tmp/b-full.
# Each knob against the default in one process (flashspec_bench --alt,
# tree_bench's TREE_BENCH_ALT), both ways round (the knob set for the whole
# process, the default as the alternative).
set -u
source bench/tools/device_env.sh
X=$B/bench/flashspec_bench TB=$B/bench/tree_bench
run() { # NAME SECONDS [VAR=VALUE ...] COMMAND...: output and status in $O/NAME.txt
  local name=$1 secs=$2
  shift 2
  timeout "$secs" env "$@" > "$O/$name.txt" 2>&1; echo "rc=$?" >> "$O/$name.txt"
}
S3=151936x4096,128256x8192,262144x3072
case "${1:-1}" in
1)
# FLASHSPEC_TAIL_ROWS_MAX (4): 0 and 8 at 1-8 rows (16: control)
a="--shapes $S3 --rows 1,2,4,6,8,16 --requests 1 --rounds 4 --reps 10 --warmup 3"
run tail_alt8 150 FS_UNSET=1 $X $a --alt FLASHSPEC_TAIL_ROWS_MAX=8
run tail_swap8 150 FLASHSPEC_TAIL_ROWS_MAX=8 $X $a --alt FLASHSPEC_TAIL_ROWS_MAX=4
run tail_alt0 150 FS_UNSET=1 $X $a --alt FLASHSPEC_TAIL_ROWS_MAX=0
el tail
# FLASHSPEC_TILE_EW_MIN_ROWS with D = 8192 (80 there): 48 at 33-79 rows
a="--shapes 128256x8192 --rows 40,48,56,64,72 --requests 8,10,12 --rounds 4 --reps 8 --warmup 3"
run ew_alt48 150 FS_UNSET=1 $X $a --alt FLASHSPEC_TILE_EW_MIN_ROWS=48
run ew_swap48 150 FLASHSPEC_TILE_EW_MIN_ROWS=48 $X $a --alt FLASHSPEC_TILE_EW_MIN_ROWS=80
el ew
# the pairs at 241-256 rows (sample and verify where D <= 5120 by default):
# every op both ways round; trees (the rows kernel there by default) too
a="--shapes $S3 --rows 241,248,256 --requests 49,50,51 --rounds 4 --reps 8 --warmup 3"
run pairs_off_alt_on 200 FLASHSPEC_TILE_PAIRS_128=0 $X $a --alt FLASHSPEC_TILE_PAIRS_128=1
run pairs_on_alt_off 200 FLASHSPEC_TILE_PAIRS_128=1 $X $a --alt FLASHSPEC_TILE_PAIRS_128=0
t="--shapes $S3 --requests 8 --nodes 30,31 --rounds 4 --reps 6"
run tree_pairs_alt_on 120 TREE_BENCH_ALT=FLASHSPEC_TILE_PAIRS_128=1 $TB $t
run tree_pairs_on_alt_off 120 FLASHSPEC_TILE_PAIRS_128=1 TREE_BENCH_ALT=FLASHSPEC_TILE_PAIRS_128=0 $TB $t
el pairs
;;
2)
# the H200's op tail to 8 rows (FS_TAIL_ROWS_MAX_FAST_HBM): the single-launch
# tests, the agreement and tree tests; verify of one request with 5-7
# drafts (6-8 rows) against 4 both ways round; trees of 244-256 rows in
# the pairs (FLASHSPEC_TILE_PAIRS_128) on more tree shapes; the chain ops
# in four row groups at 1040-1088 rows (FLASHSPEC_TILE_GROUPS_MAX=1280)
(cd $B && timeout 280 ctest -R '^test_gpu_(single|single_tail|agree|tree|bad_input|graph)$' -j3 --output-on-failure > $O/ctest_2.txt 2>&1; echo "rc=$?" >> $O/ctest_2.txt)
el tests
for k in 5 7; do
  a="--shapes $S3 --ops verify --requests 1,2 --drafts $k --rounds 4 --reps 10 --warmup 3"
  run tail_verify_d${k}_alt8 100 FS_UNSET=1 $X $a --alt FLASHSPEC_TAIL_ROWS_MAX=8
  run tail_verify_d${k}_swap8 100 FLASHSPEC_TAIL_ROWS_MAX=8 $X $a --alt FLASHSPEC_TAIL_ROWS_MAX=4
done
el tail
for t in "8 30,31" "16 15" "4 60,61"; do
  set -- $t
  a="--shapes $S3 --requests $1 --nodes $2 --rounds 4 --reps 6"
  run tree_pairs_r$1_alt_on 120 TREE_BENCH_ALT=FLASHSPEC_TILE_PAIRS_128=1 $TB $a
  run tree_pairs_r$1_on_alt_off 120 FLASHSPEC_TILE_PAIRS_128=1 TREE_BENCH_ALT=FLASHSPEC_TILE_PAIRS_128=0 $TB $a
done
el trees
a="--shapes $S3 --rows 1040,1056,1088 --requests 208,212 --rounds 4 --reps 6 --warmup 3"
run groups4_alt 200 FS_UNSET=1 $X $a --alt FLASHSPEC_TILE_GROUPS_MAX=1280
run groups4_swap 200 FLASHSPEC_TILE_GROUPS_MAX=1280 $X $a --alt FLASHSPEC_TILE_GROUPS_MAX=960
el groups4
;;
3)
# the build with the H200's new defaults (trees in the pairs at 241-256
# rows, the chain ops in four row groups at 1025-1088): the tests of those
# paths, then each against its old setting in one process, both ways
# round, and the issue-20 sweep
(cd $B && timeout 330 ctest -R '^test_gpu_(tree|tree_pairs|tree_groups|agree|agree_groups|agree_pairs|single)$' -j4 --output-on-failure > $O/ctest_3.txt 2>&1; echo "rc=$?" >> $O/ctest_3.txt)
el tests
a="--shapes $S3 --rows 1025,1040,1056,1088 --requests 206,210,216 --rounds 6 --reps 6 --warmup 3"
run groups4_new_alt_old 200 FS_UNSET=1 $X $a --alt FLASHSPEC_TILE_GROUPS_MAX=960
run groups4_old_alt_new 200 FLASHSPEC_TILE_GROUPS_MAX=960 $X $a --alt FLASHSPEC_TILE_GROUPS_MAX=1088
el groups4
t="--shapes $S3 --requests 8 --nodes 30,31 --rounds 4 --reps 6"
run tree_new_alt_old 120 TREE_BENCH_ALT=FLASHSPEC_TILE_PAIRS_128=0 $TB $t
run tree_old_alt_new 120 FLASHSPEC_TILE_PAIRS_128=0 TREE_BENCH_ALT=FLASHSPEC_TILE_PAIRS_128=1 $TB $t
el trees
run sweep 200 FS_UNSET=1 $X --json $O/sweep.json
el sweep
;;
4)
# two more H200 rules set across processes, with D = 8192: draft argmax
# keeps the rows kernel at 193-256 rows (pairs from 257:
# FLASHSPEC_TILE_PAIRS_MIN=193 makes them take 193-240 too), and every op
# keeps the rows kernel at 97-128 rows (FLASHSPEC_HOPPER_ROWS_MIN=161: the
# tile kernel's EW blocks up to 160 rows; =0: automatic)
a="--shapes 128256x8192 --rows 193,200,208,216,224,232,240 --ops argmax --rounds 4 --reps 8 --warmup 3"
run argmax_pairs_alt 150 FS_UNSET=1 $X $a --alt FLASHSPEC_TILE_PAIRS_MIN=193
run argmax_pairs_swap 150 FLASHSPEC_TILE_PAIRS_MIN=193 $X $a --alt FLASHSPEC_TILE_PAIRS_MIN=257
a="--shapes 128256x8192 --rows 100,104,112,120,128 --requests 20,24 --rounds 4 --reps 8 --warmup 3"
run tile128_alt 150 FS_UNSET=1 $X $a --alt FLASHSPEC_HOPPER_ROWS_MIN=161
run tile128_swap 150 FLASHSPEC_HOPPER_ROWS_MIN=161 $X $a --alt FLASHSPEC_HOPPER_ROWS_MIN=0
t="--shapes 128256x8192 --requests 4 --nodes 25,27,31 --rounds 4 --reps 6"
run tree_tile128_alt 120 TREE_BENCH_ALT=FLASHSPEC_HOPPER_ROWS_MIN=161 $TB $t
run tree_tile128_swap 120 FLASHSPEC_HOPPER_ROWS_MIN=161 TREE_BENCH_ALT=FLASHSPEC_HOPPER_ROWS_MIN=0 $TB $t
el stage4
;;
5)
# the build that takes both (draft argmax in pairs from 193 rows at every D;
# trees on the EW blocks at 97-128 rows where D > 5120): the tests of those
# paths, then each against its old setting, both ways round, on more cells
(cd $B && timeout 300 ctest -R '^test_gpu_(tree|agree|tree_pairs|agree_pairs)$' -j4 --output-on-failure > $O/ctest_5.txt 2>&1; echo "rc=$?" >> $O/ctest_5.txt)
el tests
a="--shapes 128256x8192 --rows 193,196,200,204,208,212,216,220,224,228,232,236,240 --ops argmax --rounds 4 --reps 8 --warmup 3"
run argmax_pairs_new_alt_old 200 FS_UNSET=1 $X $a --alt FLASHSPEC_TILE_PAIRS_MIN=257
run argmax_pairs_old_alt_new 200 FLASHSPEC_TILE_PAIRS_MIN=257 $X $a --alt FLASHSPEC_TILE_PAIRS_MIN=193
for t in "4 25,27,31" "8 12,13,15" "16 6,7" "2 55,63"; do
  set -- $t
  a="--shapes 128256x8192 --requests $1 --nodes $2 --rounds 4 --reps 6"
  run tree_ew128_r$1_new_alt_old 120 TREE_BENCH_ALT=FLASHSPEC_HOPPER_ROWS_MIN=97 $TB $a
  run tree_ew128_r$1_old_alt_new 120 FLASHSPEC_HOPPER_ROWS_MIN=97 TREE_BENCH_ALT=FLASHSPEC_HOPPER_ROWS_MIN=0 $TB $a
done
el stage5
;;
6)
# the session's last build (318f193): every GPU test
(cd $B && timeout 480 ctest -L gpu -j4 --output-on-failure > $O/ctest_gpu_6.txt 2>&1; echo "rc=$?" >> $O/ctest_gpu_6.txt)
el tests
;;
esac
tar czf $OUT/out.tgz -C $O .
