#!/bin/bash
# Device call on the committed build: the GPU tests its kernels touch (the
# merge's body is shared by every op that merges outside the tile kernel's
# single launch), memcheck, initcheck and racecheck of test_gpu_filter,
# memcheck of test_gpu_tree, and the mutant again.
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
O=/tmp/o; mkdir -p $O; F=$O/final_tests.txt
nvidia-smi --query-gpu=name --format=csv,noheader > $F
(cd /tmp/b-full && timeout 300 ctest -R '^test_gpu_(bad_input|filter|graph|tree|agree|stat|single|realistic)$' --output-on-failure) > $O/final_ctest.txt 2>&1
echo "ctest rc=$?" >> $O/final_ctest.txt; grep -E 'Test +#|tests passed|rc=' $O/final_ctest.txt | tee -a $F
m=mutant_merge_skips_last_slot
timeout 90 /tmp/fsb/test_gpu_filter_$m > $O/$m.txt 2>&1; echo "$m rc=$? (nonzero = caught)" | tee -a $F
grep -E 'ERROR' $O/$m.txt | head -2 | tee -a $F
SAN=/usr/local/cuda/bin/compute-sanitizer
for t in memcheck:test_gpu_filter initcheck:test_gpu_filter racecheck:test_gpu_filter memcheck:test_gpu_tree; do
  tool=${t%%:*}; bin=${t#*:}
  extra=(); [ $tool = racecheck ] && extra=(--racecheck-report all)
  ( time FS_GPU_TEST_SMALL=1 timeout 150 $SAN --tool $tool --error-exitcode 1 ${extra[@]+"${extra[@]}"} \
      /tmp/b-full/tests/$bin ) > $O/san_$tool.$bin.txt 2>&1
  echo "$tool $bin rc=$?" | tee -a $F
  grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^real' $O/san_$tool.$bin.txt | head -3 | tee -a $F
done
cp $F $OUT/
tar czf $OUT/final.tgz -C $O .
