#!/bin/bash
# checks of the build whose merge read every row's lists and records before its descriptor
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
O=/tmp/o; mkdir -p $O
nvidia-smi --query-gpu=name,power.limit --format=csv > $O/gpu.txt
SAN=/usr/local/cuda/bin/compute-sanitizer; T=/tmp/b-full/tests
for st in "memcheck test_gpu_filter" "racecheck test_gpu_filter" "initcheck test_gpu_filter" "initcheck test_gpu_agree" "memcheck test_gpu_tree"; do
  set -- $st
  ( FS_GPU_TEST_SMALL=1 timeout 90 $SAN --tool $1 --error-exitcode 1 $T/$2 ) > $O/san_$1_$2.txt 2>&1
  echo "$1 $2 rc=$? $(grep -h 'ERROR SUMMARY\|RACECHECK SUMMARY' $O/san_$1_$2.txt | tail -1)"
done
tar czf $OUT/out.tgz -C $O .
(cd /tmp/b-full && timeout 300 ctest -R '^test_gpu_(agree|agree_generic|filter|tree|tree_generic|realistic|single|stat|stat_generic|bad_input|graph)$' --output-on-failure) > $O/ctest_gpu.txt 2>&1
echo "ctest rc=$?" | tee -a $O/ctest_gpu.txt; grep -E 'Test +#|tests passed' $O/ctest_gpu.txt
tar czf $OUT/out.tgz -C $O .
