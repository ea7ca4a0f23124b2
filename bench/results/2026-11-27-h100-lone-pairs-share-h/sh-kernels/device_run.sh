#!/usr/bin/env bash
# The device call that made this folder: GPU ctest and sanitizers of the
# carried SH-kernels build (/tmp/b-full), then base (main, /tmp/b-base) and
# new alternated in four rounds, then ncu at 160 rows.  Run from the repo
# root after bench/tools/carry_pack.sh /tmp/b-full /tmp/b-base.
set -u
T0=$(date +%s); el() { echo "$1 $(( $(date +%s) - T0 )) s" >> $OUT/log.txt; }
bash bench/tools/carry_unpack.sh
mkdir -p /tmp/fs_deps; for f in .deps/*.deb; do dpkg -x "$f" /tmp/fs_deps; done
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $OUT/gpu.txt
N=/tmp/b-full; B=/tmp/b-base
( cd $N && ctest -L gpu -j3 --output-on-failure ) > $OUT/ctest.txt 2>&1; echo "ctest rc=$?" >> $OUT/log.txt; el ctest
for run in "memcheck 1 0" "racecheck 1 0" "memcheck 160 192" "racecheck 160 192"; do
  read -r tool rows rb <<<"$run"; extra=(); [ $tool = racecheck ] && extra=(--racecheck-report all)
  env FS_GPU_TEST_SMALL=1 FLASHSPEC_HOPPER_ROWS_MIN=1 $( [ $rows != 1 ] && echo FS_GPU_TEST_SMALL_ROWS=$rows FLASHSPEC_HOPPER_ROW_BLOCK=$rb ) \
    compute-sanitizer --tool $tool --error-exitcode 1 "${extra[@]}" $N/tests/test_gpu_agree > $OUT/san_${tool}_$rows.txt 2>&1
  echo "$tool rows=$rows rb=$rb rc=$? $(grep -h 'PASSED\|FAILED' $OUT/san_${tool}_$rows.txt | tail -1) $(grep -h 'SUMMARY' $OUT/san_${tool}_$rows.txt | tail -1)" >> $OUT/log.txt; el san
done
env FS_GPU_TEST_SMALL=1 FLASHSPEC_HOPPER_ROWS_MIN=1 FS_GPU_TEST_SMALL_ROWS=160 FLASHSPEC_HOPPER_ROW_BLOCK=192 compute-sanitizer --tool memcheck --error-exitcode 1 $N/tests/test_gpu_tree > $OUT/san_tree160.txt 2>&1
echo "memcheck tree rows=160 rc=$? $(grep -h 'SUMMARY' $OUT/san_tree160.txt | tail -1)" >> $OUT/log.txt; el santree
for r in 1 2 3 4; do for v in base new; do
  d=$B; [ $v = new ] && d=$N
  $d/bench/flashspec_bench --shapes 128256x8192,151936x4096 --rows 128,144,160,176,192,528 \
    --requests 20,24,32,36 --ops sample,argmax,verify --rounds 2 --reps 15 --warmup 3 > $OUT/b_${v}_$r.txt 2>&1
  $d/bench/tree_bench --shapes 128256x8192,151936x4096 --requests 4 --nodes 39 --rounds 2 --reps 8 > $OUT/t39_${v}_$r.txt 2>&1
  $d/bench/tree_bench --shapes 128256x8192,151936x4096 --requests 16 --nodes 8 --rounds 2 --reps 8 > $OUT/t8_${v}_$r.txt 2>&1
  $d/bench/tree_bench --shapes 128256x8192,151936x4096 --requests 4,8 --nodes 31 --rounds 2 --reps 8 > $OUT/t31_${v}_$r.txt 2>&1
  el "ab $v $r"
done; done
for v in base new; do d=$B; [ $v = new ] && d=$N
  ncu --clock-control none --csv -k regex:'fshr?_scan' --launch-skip 4 --launch-count 6 \
    --metrics gpu__time_duration.sum,smsp__cycles_elapsed.avg.per_second,lts__t_bytes.sum,dram__bytes_read.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active \
    $d/bench/flashspec_bench --shapes 128256x8192 --rows 160 --ops sample --rounds 1 --reps 6 --warmup 1 > $OUT/ncu_$v.csv 2>&1
  el "ncu $v"
done
