#!/bin/bash
# Device call: the GPU tests the filters touch, the mutant, memcheck,
# initcheck and racecheck of test_gpu_filter, and filter_bench on both
# shapes with the base build (head), this one (new) and this one with the
# second pass's block push rolled (rolled) alternated three times.  Every
# step has a time limit; the outputs come back as one archive.
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
ROOT=$PWD
O=/tmp/o; mkdir -p $O
nvidia-smi --query-gpu=name,power.limit --format=csv > $O/gpu.txt
(cd /tmp/b-full && timeout 200 ctest -R '^test_gpu_(bad_input|filter|graph|tree)$' --output-on-failure) > $O/ctest_gpu.txt 2>&1
echo "ctest rc=$?" | tee -a $O/ctest_gpu.txt; grep -E 'Test +#|tests passed' $O/ctest_gpu.txt
timeout 120 /tmp/b-full/tests/test_gpu_filter > $O/test_gpu_filter.txt 2>&1; echo "test_gpu_filter rc=$?"
grep -E '300 rows' $O/test_gpu_filter.txt | head -6
m=mutant_merge_skips_last_slot
timeout 90 /tmp/fsb/test_gpu_filter_$m > $O/$m.txt 2>&1; echo "$m rc=$? (nonzero = caught)" | tee -a $O/$m.txt
grep -E 'ERROR|FAILED  \]' $O/$m.txt | head -3
tar czf $OUT/out.tgz -C $O .
SAN=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck initcheck racecheck; do
  extra=(); [ $tool = racecheck ] && extra=(--racecheck-report all)
  ( time FS_GPU_TEST_SMALL=1 timeout 150 $SAN --tool $tool --error-exitcode 1 ${extra[@]+"${extra[@]}"} \
      /tmp/b-full/tests/test_gpu_filter ) > $O/san_$tool.txt 2>&1
  echo "$tool rc=$?" | tee -a $O/san_$tool.txt
  grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^real' $O/san_$tool.txt | head -3
done
tar czf $OUT/out.tgz -C $O .
ARGS="--rounds 2 --reps 10 --rows 1,4,16,64"
for r in 1 2 3; do
  for b in head new rolled; do
    timeout 100 /tmp/fsb/filter_bench_$b $ARGS > $O/filter_bench_${b}_$r.txt 2>&1
  done
done
python3 $ROOT/bench/tools/filter_ab_table.py head="$O/filter_bench_head_*.txt" \
  new="$O/filter_bench_new_*.txt" rolled="$O/filter_bench_rolled_*.txt" > $O/filter_ab_table.txt
grep -E 'sample (all|k50|p0.9|minp0.05)|verify all' $O/filter_ab_table.txt | head -120
tar czf $OUT/out.tgz -C $O .
