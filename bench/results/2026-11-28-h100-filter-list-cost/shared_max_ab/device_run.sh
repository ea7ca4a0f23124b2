#!/bin/bash
# Device call: the GPU tests the scan's filtered push touches, the mutants
# (the excluded token, or a tree row's children, left out of the lists),
# memcheck of test_gpu_filter, and filter_bench on peaked
# logits, both shapes, the base build (base) and this one (new) alternated
# three times.  Every step has a time limit; the outputs come back as one
# archive.
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
ROOT=$PWD
O=/tmp/o; mkdir -p $O
nvidia-smi --query-gpu=name,power.limit --format=csv > $O/gpu.txt
(cd /tmp/b-full && timeout 330 ctest -R '^test_gpu_(bad_input|filter|graph|tree|stat|agree|agree_generic|realistic)$' --output-on-failure) > $O/ctest_gpu.txt 2>&1
echo "ctest rc=$?" | tee -a $O/ctest_gpu.txt; grep -E 'Test +#|tests passed' $O/ctest_gpu.txt
for f in $(cd /tmp/fsb && ls | grep _mutant_); do
  timeout 90 /tmp/fsb/$f > $O/$f.txt 2>&1
  echo "$f rc=$? (nonzero = caught)" | tee -a $O/$f.txt
  grep -E 'ERROR|FAILED  \]' $O/$f.txt | head -3
done
( time FS_GPU_TEST_SMALL=1 timeout 100 /usr/local/cuda/bin/compute-sanitizer --tool memcheck \
    --error-exitcode 1 /tmp/b-full/tests/test_gpu_filter ) > $O/san_memcheck.txt 2>&1
echo "memcheck test_gpu_filter rc=$?" | tee -a $O/san_memcheck.txt
grep -E 'ERROR SUMMARY|^real' $O/san_memcheck.txt | head -3
tar czf $OUT/out.tgz -C $O .
ARGS="--rounds 2 --reps 10 --rows 1,4,16,64 --logits 1"
for r in 1 2 3; do
  for b in base new; do
    timeout 80 /tmp/fsb/filter_bench_$b $ARGS > $O/filter_bench_${b}_$r.txt 2>&1
  done
done
python3 $ROOT/bench/tools/filter_ab_table.py base="$O/filter_bench_base_*.txt" \
  new="$O/filter_bench_new_*.txt" > $O/filter_ab_table.txt
grep -E 'sample( |$)|sample (all|k50)|verify( |$)|verify all' $O/filter_ab_table.txt | head -60
tar czf $OUT/out.tgz -C $O .
