#!/bin/bash
# Device call: the GPU tests the change touches, the mutant, memcheck,
# initcheck and racecheck of test_gpu_filter, then filter_bench on both
# shapes (peaked and flat logits) with the base 73f0b43 (head), the filtered
# merge with its second pass (merge, 68ace87) and this change (single)
# alternated three times.  Every step has a time limit; the outputs come
# back as one archive.
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
ROOT=$PWD
O=/tmp/o; mkdir -p $O
nvidia-smi --query-gpu=name,power.limit --format=csv > $O/gpu.txt
(cd /tmp/b-full && timeout 260 ctest -R '^test_gpu_(bad_input|filter|graph|tree|agree|stat|single|realistic)$' --output-on-failure) > $O/ctest_gpu.txt 2>&1
echo "ctest rc=$?" | tee -a $O/ctest_gpu.txt; grep -E 'Test +#|tests passed' $O/ctest_gpu.txt
m=mutant_single_keeps_fallback
timeout 60 /tmp/fsb/test_gpu_filter_$m > $O/$m.txt 2>&1; echo "$m rc=$? (nonzero = caught)" | tee -a $O/$m.txt
grep -E 'ERROR' $O/$m.txt | head -2
tar czf $OUT/out.tgz -C $O .
SAN=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck initcheck racecheck; do
  extra=(); [ $tool = racecheck ] && extra=(--racecheck-report all)
  ( time FS_GPU_TEST_SMALL=1 timeout 120 $SAN --tool $tool --error-exitcode 1 ${extra[@]+"${extra[@]}"} \
      /tmp/b-full/tests/test_gpu_filter ) > $O/san_$tool.txt 2>&1
  echo "$tool rc=$?" | tee -a $O/san_$tool.txt
  grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^real' $O/san_$tool.txt | head -3
done
tar czf $OUT/out.tgz -C $O .
ARGS="--rounds 2 --reps 10 --rows 1,4,16,64 --logits 1,0"
for r in 1 2 3; do
  for b in head merge single; do
    timeout 60 /tmp/fsb/filter_bench_$b $ARGS > $O/filter_bench_${b}_$r.txt 2>&1
  done
done
python3 $ROOT/bench/tools/filter_ab_table.py head="$O/filter_bench_head_*.txt" \
  merge="$O/filter_bench_merge_*.txt" single="$O/filter_bench_single_*.txt" > $O/filter_ab_table.txt
grep -E 'peaked .*(sample|verify)' $O/filter_ab_table.txt | grep -vE ' 320 |p0.9|minp' | head -60; grep -E 'flat .*p0.9' $O/filter_ab_table.txt
tar czf $OUT/out.tgz -C $O .
