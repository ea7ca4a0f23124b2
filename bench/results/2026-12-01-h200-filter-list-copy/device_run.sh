#!/usr/bin/env bash
# The device calls that made this folder (one H200 each; `bash run.sh N`
# ran stage N), from the repository root with carry ["carry-bin", ".deps"]:
# carry-bin/all.txz packed by bench/tools/carry_pack.sh /tmp/b-full /tmp/b-base
# (stages 2-3: /tmp/b-base the parent commit's benchmarks; stages 4-5 pack
# their own, below).
set -u
source bench/tools/device_env.sh
F=$B/bench/filter_bench X=$B/bench/flashspec_bench
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
run() { # NAME SECONDS [VAR=VALUE ...] COMMAND...: output and status in $O/NAME.txt
  local name=$1 secs=$2
  shift 2
  timeout "$secs" env "$@" > "$O/$name.txt" 2>&1; echo "rc=$?" >> "$O/$name.txt"
}
# one launch of the tile kernel whose mangled name holds $2 under ncu
# (sections for stalls by source line, memory and issue), as $O/ncu/$1.*
ncu_one() {
  local name=$1 k=$2
  shift 2
  mkdir -p "$O/ncu"
  timeout 240 env "$@" "$NCU" --kernel-name-base mangled -k regex:"fsh_scan_kernel$k" \
    --launch-skip 2 -c 1 --clock-control none --import-source no \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section SchedulerStats \
    --section WarpStateStats --section SourceCounters --section LaunchStats \
    -f -o "/tmp/$name" $F --shapes 151936x4096 --rows 64 --logits 1 --rounds 1 --reps 3 \
    > "$O/ncu/$name.log" 2>&1
  "$NCU" -i "/tmp/$name.ncu-rep" --page details --csv > "$O/ncu/$name.details.csv" 2>&1
  "$NCU" -i "/tmp/$name.ncu-rep" --page source --csv --print-source sass 2>/dev/null |
    gzip > "$O/ncu/$name.source.csv.gz"
}
case "${1:-1}" in
1)
# (a) filter_bench's sort-pipeline check through the tests' oracle
run check 240 $F --rows 1,16,64 --shapes 151936x4096,30011x64 --logits 1,2,0 --rounds 1 --reps 3
el check
# (b) the 64-row tile kernel, filtered (FILT) against the unfiltered one
# without epilogue warps (plain) and with them (ew), under ncu
ncu_one filt 'ILi64ELb1ELb1ELb0ELb0E' FS_UNSET=1
ncu_one plain 'ILi64ELb1ELb0ELb0ELb0E' FLASHSPEC_TILE_EPI_WG=0 FLASHSPEC_SINGLE_LAUNCH=0
ncu_one ew 'ILi64ELb1ELb0ELb1ELb0E' FLASHSPEC_SINGLE_LAUNCH=0
mkdir -p /tmp/cub && (cd /tmp/cub && cuobjdump -xelf all $F > /dev/null 2>&1)
c=$(grep -l 'fsh_scan_kernelILi64ELb1ELb1ELb0ELb0E' /tmp/cub/*.cubin | head -1)
nvdisasm -g -c "$c" 2>/dev/null | xz -6 > "$O/ncu/scan_hopper.sass.xz"
el ncu
# (c) chain ops at 97-103 rows with D = 8192: the EW tile kernel (rows kernel
# from 161) against the default rows kernel, both ways round
a="--shapes 128256x8192 --rows 97,100,103 --requests 20 --rounds 4 --reps 8 --warmup 3"
run r97_alt_tile 150 FS_UNSET=1 $X $a --alt FLASHSPEC_HOPPER_ROWS_MIN=161
run r97_tile_alt_rows 150 FLASHSPEC_HOPPER_ROWS_MIN=161 $X $a --alt FLASHSPEC_HOPPER_ROWS_MIN=97
el r97
;;
2)
# the tile kernel's consumers read the row descriptors after their first
# tile's MMA (new) against before it (base, /tmp/b-base: the parent
# commit's benchmarks), alternated in rounds: filtered calls (prep kernel)
# and unfiltered ones of 1-40 rows (one launch, the plain kernel)
FA="--shapes 151936x4096,128256x8192 --rows 1,16,48,64 --logits 1 --rounds 1 --reps 10"
for r in 1 2 3; do
  run fb_base_$r 200 FS_UNSET=1 /tmp/b-base/bench/filter_bench $FA
  run fb_new_$r 200 FS_UNSET=1 $F $FA
done
el filter
A="--shapes 151936x4096,128256x8192 --rows 1,4,16,32,40 --requests 1,4,8 --rounds 2 --reps 10 --warmup 2"
OUT=$O/ab timeout 300 bash bench/tools/ab_rounds.sh -r 3 small "$A" \
  base=/tmp/b-base/bench/flashspec_bench new=$X > $O/ab_small.txt 2>&1
el small
;;
3)
# the filtered tile kernel's lists staged in shared memory and copied out in
# 16-byte units (new) against each thread storing its own and a row's
# first thread the empty ones (base): the tests that run the filtered tile
# kernel, filtered calls alternated in rounds, the 64-row kernel under ncu,
# and the sanitizers over test_gpu_filter
(cd $B && timeout 200 ctest -R '^test_gpu_(filter|tree|tree_tile|graph|bad_input|realistic|stat|rows_lists)$' \
  -j3 --output-on-failure > $O/ctest_3.txt 2>&1; echo "rc=$?" >> $O/ctest_3.txt)
el tests
FA="--shapes 151936x4096,128256x8192 --rows 1,16,48,64,128 --logits 1 --rounds 1 --reps 10"
for r in 1 2 3; do
  run fb3_base_$r 200 FS_UNSET=1 /tmp/b-base/bench/filter_bench $FA
  run fb3_new_$r 200 FS_UNSET=1 $F $FA
done
el filter
ncu_one filt_new 'ILi64ELb1ELb1ELb0ELb0E' FS_UNSET=1
el ncu
FS_GPU_TEST_SMALL=1 san memcheck memcheck_filter.txt 120 $B/tests/test_gpu_filter
FS_GPU_TEST_SMALL=1 san racecheck racecheck_filter.txt 120 $B/tests/test_gpu_filter
el san
;;
4)
# carry ["carry-bin"]: all.txz holding $B and /tmp/b-tile's filter_bench
# the rows kernel's lists copied by each warp in consecutive words (new,
# $B) against each lane storing its own (tile, /tmp/b-tile: this folder's
# tile-kernel change alone), filtered calls past 160 rows, alternated
FA="--shapes 151936x4096,128256x8192 --rows 64,128,256,512 --logits 1 --rounds 1 --reps 6"
for r in 1 2 3; do
  run fb4_tile_$r 200 FS_UNSET=1 /tmp/b-tile/bench/filter_bench $FA
  run fb4_new_$r 200 FS_UNSET=1 $F $FA
done
el filter
;;
5)
# all.txz: $B's GPU tests and CTest files, and /tmp/fsb/mut/test_gpu_filter
# built with mutant_no_empty_lists.patch (the tile kernel leaves a row's
# empty lists unstaged), which must fail
(timeout 120 /tmp/fsb/mut/test_gpu_filter > $O/mutant_no_empty_lists.txt 2>&1; echo "rc=$?" >> $O/mutant_no_empty_lists.txt)
el mutant
# every GPU test on the final build, and the sanitizers over
# test_gpu_filter (its > 160-row cases run the rows kernel's lists)
(cd $B && timeout 480 ctest -L gpu -j4 --output-on-failure > $O/ctest_gpu_5.txt 2>&1; echo "rc=$?" >> $O/ctest_gpu_5.txt)
el ctest
FS_GPU_TEST_SMALL=1 san memcheck memcheck_filter_5.txt 100 $B/tests/test_gpu_filter
FS_GPU_TEST_SMALL=1 san racecheck racecheck_filter_5.txt 120 $B/tests/test_gpu_filter
el san
;;
6)
# carry ["carry-bin"]: all.txz holding $B's filter_bench and flashspec_bench.
# The final build's filters on every logit shape at 1-64 rows, and verify
# of 20 requests (100 rows, D = 8192) on the EW tile kernel against the
# rows kernel again, both ways round
run final_filters 240 FS_UNSET=1 $F --shapes 151936x4096,128256x8192 --rows 1,16,48,64 \
  --logits 1,2,0 --rounds 2 --reps 6
el filters
a="--shapes 128256x8192 --rows 100 --requests 19,20,21 --ops verify --rounds 6 --reps 8 --warmup 3"
run v100_alt_tile 90 FS_UNSET=1 $X $a --alt FLASHSPEC_HOPPER_ROWS_MIN=161
run v100_tile_alt_rows 90 FLASHSPEC_HOPPER_ROWS_MIN=161 $X $a --alt FLASHSPEC_HOPPER_ROWS_MIN=97
el v100
;;
7)
# all.txz: $B's GPU tests and CTest files.  The rows kernel from 104 rows
# where D > 5120 (97-103 on the EW tile kernel): the agreement tests, with
# a 100-row case at D = 5128, on the final build
(cd $B && timeout 200 ctest -R '^test_gpu_(agree|single|tree)$' -j3 --output-on-failure \
  > $O/ctest_7.txt 2>&1; echo "rc=$?" >> $O/ctest_7.txt)
el ctest
;;
esac
tar czf $OUT/out.tgz -C $O .
