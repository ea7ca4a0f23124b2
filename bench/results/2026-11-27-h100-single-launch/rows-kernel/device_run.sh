#!/usr/bin/env bash
# The device call for the rows kernel's single launch (97-384 rows;
# measured and not kept: rows-kernel-single.patch, on 2d9f48e), on a
# build carried with bench/tools/carry_pack.sh: GPU ctest (test_gpu_single
# and its variant through the rows kernel at every row count included),
# compute-sanitizer memcheck and racecheck of test_gpu_single through the
# rows kernel (small shapes), then the same benchmark binary with and
# without the single launch alternated in four rounds at 97-384 rows.
set -u
O=/tmp/o; mkdir -p $O
T0=$(date +%s); el() { echo "$1 $(( $(date +%s) - T0 )) s" >> $O/log_rows.txt; }
pack() { tar czf $OUT/out.tgz -C $O .; }
bash bench/tools/carry_unpack.sh
mkdir -p /tmp/fs_deps; for f in .deps/*.deb; do dpkg -x "$f" /tmp/fs_deps; done
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $O/gpu_rows.txt
N=/tmp/b-full
( cd $N && ctest -L gpu -j3 --output-on-failure ) > $O/ctest_rows.txt 2>&1; echo "ctest rc=$?" >> $O/log_rows.txt; el ctest
for tool in memcheck racecheck; do
  env FS_GPU_TEST_SMALL=1 FLASHSPEC_HOPPER_ROWS_MIN=1 compute-sanitizer --tool $tool --error-exitcode 1 $N/tests/test_gpu_single > $O/san_${tool}_single_rowsm.txt 2>&1
  echo "$tool single rowsm rc=$? $(grep -h 'SUMMARY' $O/san_${tool}_single_rowsm.txt | tail -1)" >> $O/log_rows.txt; el $tool
done
pack
for r in 1 2 3 4; do for v in prep single; do
  s=1; [ $v = prep ] && s=0
  env FLASHSPEC_SINGLE_LAUNCH=$s $N/bench/flashspec_bench --rows 128,160,192,256,320,384 \
    --requests 20,32,40,64,76 --ops sample,argmax,verify --rounds 3 --reps 15 > $O/r_${v}_$r.txt 2>&1
  el "ab $v $r"
done; pack; done
cat $O/log_rows.txt
