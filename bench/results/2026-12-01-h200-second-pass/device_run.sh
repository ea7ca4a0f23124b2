#!/usr/bin/env bash
# The device calls that made this folder (one H200 each; `bash run.sh N`
# ran stage N), from the repository root with carry ["carry-bin", ".deps"]:
# carry-bin/all.txz packed here by
#   tar cPf - <paths below> | xz -T1 --lzma2=preset=6,dict=64MiB > carry-bin/all.txz
# /tmp/b-full the change's build (tests, filter_bench, the trace library),
# /tmp/b-base/bench/filter_bench the parent commit's with this folder's
# --methods, /tmp/b-mut/tests/test_gpu_filter a mutant's.  Stage 1: the
# draw taking two groups a tile (sweep.patch; mutant: the second group's
# blocks pushed into the first's records); stage 2: /tmp/b-sweep that build,
# /tmp/b-full with W asked of L2 ahead too (prefetch.patch); stage 3: the
# ring (cp.async), ring.patch, and mutant_ring_swizzle.patch; stage 4:
# /tmp/b-u6 and /tmp/b-u8 the direct path (up to 8 rows handed over) with
# 6 or 8 steps of loads a warp in flight instead of 4 (`U`); stage 5:
# /tmp/b-full with six, as committed; stage 6: /tmp/b-u6 the build with six,
# /tmp/b-full the staged path (9-32 rows handed over) in 128-k chunks;
# stage 7: /tmp/b-hk that build, /tmp/b-st1 with up to 8 rows on the
# staged path too (staged_one.patch); stage 8: every GPU test at the
# session's last build (carry_pack.sh /tmp/b-full /tmp/b-base), and its
# filter_bench against the parent commit's kernels; stage 9: /tmp/b-prev
# that build, /tmp/b-full with the histograms' per-bucket sums by redux
# (redux.patch).
set -u
source bench/tools/device_env.sh
( sleep 575; tar czf "$OUT/out.tgz" -C "$O" . ) &
F=$B/bench/filter_bench FB=/tmp/b-base/bench/filter_bench
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:$LD_LIBRARY_PATH
run() { # NAME SECONDS [VAR=VALUE ...] COMMAND...: output and status in $O/NAME.txt
  local name=$1 secs=$2
  shift 2
  timeout "$secs" env "$@" > "$O/$name.txt" 2>&1; echo "rc=$?" >> "$O/$name.txt"
}
# one launch of the filtered merge kernel (resolve + second pass) under ncu
ncu_merge() { # NAME ARGS...
  local name=$1
  shift
  mkdir -p "$O/ncu"
  timeout 150 "$NCU" --kernel-name-base mangled -k regex:'fs_filter_merge_kernelILb0E' \
    --launch-skip 2 -c 1 --clock-control none --import-source no \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section SchedulerStats \
    --section WarpStateStats --section SourceCounters --section LaunchStats --section Occupancy \
    -f -o "/tmp/$name" "$F" "$@" > "$O/ncu/$name.log" 2>&1
  "$NCU" -i "/tmp/$name.ncu-rep" --page details --csv > "$O/ncu/$name.details.csv" 2>&1
  "$NCU" -i "/tmp/$name.ncu-rep" --page source --csv --print-source sass 2>/dev/null |
    gzip > "$O/ncu/$name.source.csv.gz"
}
case "${1:-1}" in
1)
# (a) the GPU tests the second pass runs in
for t in test_gpu_filter test_gpu_tree test_gpu_rows_lists test_gpu_realistic test_gpu_bad_input; do
  run "$t" 200 "$B/tests/$t"
done
FS_GPU_TEST_SMALL=1 san memcheck memcheck_filter.txt 200 "$B/tests/test_gpu_filter"
el tests
# (b) the mutant must fail test_gpu_filter
run mutant_sweep_record 200 /tmp/b-mut/tests/test_gpu_filter
el mutant
# (c) base and new filter_bench alternated, twice each: flat and moderate
# rows, whose top-p 0.9 takes the second pass
a="--shapes 151936x4096 --rows 1,16,64,128 --logits 0,2 --methods p0.9,all,k200 --rounds 2 --reps 5"
for r in 1 2; do
  run "fb_base_$r" 150 $FB $a
  run "fb_new_$r" 150 $F $a
done
el ab
# (d) the merge kernel under ncu: flat rows, top-p 0.9 (every row handed over)
for rows in 1 64; do
  ncu_merge "merge_flat_p_${rows}" --shapes 151936x4096 --rows "$rows" --logits 0 \
    --methods p0.9 --rounds 1 --reps 3
done
el ncu
;;
2)
for t in test_gpu_filter test_gpu_tree; do
  run "$t" 200 "$B/tests/$t"
done
el tests
# (a) base, the groups' sweep alone, and with W asked of L2 ahead, alternated
a="--shapes 151936x4096 --rows 1,16,64,128 --logits 1,0,2 --methods p0.9,all,k200 --rounds 2 --reps 5"
for r in 1 2 3; do
  run "fb_base_$r" 150 $FB $a
  run "fb_sweep_$r" 150 /tmp/b-sweep/bench/filter_bench $a
  run "fb_new_$r" 150 $F $a
done
el ab
for rows in 1 64; do
  ncu_merge "merge_flat_p_${rows}" --shapes 151936x4096 --rows "$rows" --logits 0 \
    --methods p0.9 --rounds 1 --reps 3
done
mkdir -p /tmp/cub && (cd /tmp/cub && cuobjdump -xelf all $F > /dev/null 2>&1)
c=$(grep -l 'fs_filter_merge_kernelILb0E' /tmp/cub/*.cubin | head -1)
nvdisasm -g -c "$c" 2>/dev/null | xz -6 > "$O/ncu/merge.sass.xz"
el ncu
;;
3)
for t in test_gpu_filter test_gpu_tree test_gpu_rows_lists test_gpu_realistic test_gpu_bad_input; do
  run "$t" 200 "$B/tests/$t"
done
FS_GPU_TEST_SMALL=1 san memcheck memcheck_filter.txt 200 "$B/tests/test_gpu_filter"
FS_GPU_TEST_SMALL=1 san racecheck racecheck_filter.txt 150 "$B/tests/test_gpu_filter"
el tests
run mutant_ring_swizzle 200 /tmp/b-mut/tests/test_gpu_filter
el mutant
a="--shapes 151936x4096,128256x8192 --rows 1,16,64,128 --logits 1,0,2 --methods p0.9,all,k200 --rounds 2 --reps 5"
for r in 1 2 3; do
  run "fb_base_$r" 150 $FB $a
  run "fb_new_$r" 150 $F $a
done
el ab
for rows in 1 64; do
  ncu_merge "merge_flat_p_${rows}" --shapes 151936x4096 --rows "$rows" --logits 0 \
    --methods p0.9 --rounds 1 --reps 3
done
mkdir -p /tmp/cub && (cd /tmp/cub && cuobjdump -xelf all $F > /dev/null 2>&1)
c=$(grep -l 'fs_filter_merge_kernelILb0E' /tmp/cub/*.cubin | head -1)
nvdisasm -g -c "$c" 2>/dev/null | xz -6 > "$O/ncu/merge.sass.xz"
el ncu
;;
4)
a="--shapes 151936x4096,128256x8192 --rows 1,4,8,16 --logits 0,2 --methods p0.9,all --rounds 2 --reps 5"
for r in 1 2 3; do
  run "fb_base_$r" 150 $FB $a
  run "fb_u6_$r" 150 /tmp/b-u6/bench/filter_bench $a
  run "fb_u8_$r" 150 /tmp/b-u8/bench/filter_bench $a
done
el ab
;;
5)
for t in test_gpu_filter test_gpu_tree test_gpu_rows_lists test_gpu_bad_input; do
  run "$t" 200 "$B/tests/$t"
done
FS_GPU_TEST_SMALL=1 san memcheck memcheck_filter.txt 200 "$B/tests/test_gpu_filter"
el tests
p="--shapes 151936x4096,128256x8192 --rows 1,16,64 --logits 1 --methods k50,p0.9,minp0.05,all,k200,verify-all --rounds 2 --reps 5"
f="--shapes 151936x4096,128256x8192 --rows 1,8,64 --logits 0,2 --methods p0.9,k200 --rounds 2 --reps 5"
for r in 1 2 3; do
  run "fb_base_$r" 150 $FB $p
  run "fb_new_$r" 150 $F $p
  run "fbf_base_$r" 150 $FB $f
  run "fbf_new_$r" 150 $F $f
done
el ab
;;
6)
for t in test_gpu_filter test_gpu_tree test_gpu_rows_lists; do
  run "$t" 200 "$B/tests/$t"
done
el tests
U6=/tmp/b-u6/bench/filter_bench
p="--shapes 151936x4096,128256x8192 --rows 1,16,64 --logits 1 --methods k50,p0.9,all,k200,verify-all --rounds 2 --reps 5"
f="--shapes 151936x4096,128256x8192 --rows 1,16,64,128 --logits 0,2 --methods p0.9,k200 --rounds 2 --reps 5"
for r in 1 2 3; do
  run "fb_base_$r" 150 $U6 $p
  run "fb_new_$r" 150 $F $p
  run "fbf_base_$r" 150 $U6 $f
  run "fbf_new_$r" 150 $F $f
done
el ab
;;
7)
f="--shapes 151936x4096,128256x8192 --rows 1,4,8,16 --logits 0,2 --methods p0.9,all --rounds 2 --reps 5"
for r in 1 2 3; do
  run "fb_base_$r" 150 /tmp/b-hk/bench/filter_bench $f
  run "fb_new_$r" 150 /tmp/b-st1/bench/filter_bench $f
done
el ab
;;
8)
(cd $B && timeout 450 ctest -L gpu -j4 --output-on-failure > $O/ctest_gpu.txt 2>&1; echo "rc=$?" >> $O/ctest_gpu.txt)
el ctest
p="--shapes 151936x4096,128256x8192 --rows 1,16,64 --logits 1 --methods k50,p0.9,minp0.05,all,k200,verify-all --rounds 2 --reps 5"
f="--shapes 151936x4096,128256x8192 --rows 1,8,16,64,128 --logits 0,2 --methods p0.9,k200 --rounds 2 --reps 5"
for r in 1 2; do
  run "fb_base_$r" 150 $FB $p
  run "fb_new_$r" 150 $F $p
  run "fbf_base_$r" 150 $FB $f
  run "fbf_new_$r" 150 $F $f
done
el ab
;;
9)
for t in test_gpu_filter test_gpu_tree; do
  run "$t" 200 "$B/tests/$t"
done
el tests
f="--shapes 151936x4096,128256x8192 --rows 1,16,64,128 --logits 0,2 --methods p0.9,all,k200 --rounds 2 --reps 5"
for r in 1 2 3; do
  run "fb_base_$r" 150 /tmp/b-prev/bench/filter_bench $f
  run "fb_new_$r" 150 $F $f
done
el ab
;;
esac
tar czf "$OUT/out.tgz" -C "$O" .
