#!/bin/bash
# Device call, final build: the GPU tests the filters touch, memcheck,
# initcheck and racecheck of test_gpu_filter, the two mutants, and
# filter_bench on both shapes with the base build (head) and this one (new)
# alternated three times, and this one once with FLASHSPEC_FILTER_WIDE=0.
# Every step has a time limit and writes to $OUT as it goes.
set -u
bash bench/tools/carry_unpack.sh >/dev/null
python3 -c "import lzma,tarfile; tarfile.open(fileobj=lzma.open('carry-bin/extra.txz')).extractall('/tmp/fsb')"
mkdir -p /tmp/fs_deps; for f in .deps/*.deb; do dpkg -x "$f" /tmp/fs_deps; done
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
ROOT=$PWD
nvidia-smi --query-gpu=name,power.limit --format=csv > $OUT/gpu.txt
mkdir -p /tmp/o
(cd /tmp/b-full && timeout 150 ctest -R '^test_gpu_(bad_input|filter|graph|tree)$' --output-on-failure) > /tmp/o/ctest_gpu.txt 2>&1
echo "ctest rc=$?" | tee -a /tmp/o/ctest_gpu.txt; grep -E 'Test +#|tests passed' /tmp/o/ctest_gpu.txt
/tmp/b-full/tests/test_gpu_filter > /tmp/o/test_gpu_filter.txt 2>&1; echo "test_gpu_filter rc=$?"
grep -E 'law' /tmp/o/test_gpu_filter.txt
for m in mutant_wide_drops_last mutant_wide_walk_cuts_crossing; do
  timeout 60 /tmp/fsb/test_gpu_filter_$m > /tmp/o/$m.txt 2>&1; echo "$m rc=$? (nonzero = caught)" | tee -a /tmp/o/$m.txt
  grep -E 'ERROR|FAILED  \]' /tmp/o/$m.txt | head -4
done
tar czf $OUT/tests.tgz -C /tmp/o .
SAN=/usr/local/cuda/bin/compute-sanitizer
for tool in memcheck initcheck racecheck; do
  extra=(); [ $tool = racecheck ] && extra=(--racecheck-report all)
  ( time FS_GPU_TEST_SMALL=1 timeout 150 $SAN --tool $tool --error-exitcode 1 ${extra[@]+"${extra[@]}"} \
      /tmp/b-full/tests/test_gpu_filter ) > /tmp/o/san_$tool.txt 2>&1
  echo "$tool rc=$?" | tee -a /tmp/o/san_$tool.txt
  grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|^real' /tmp/o/san_$tool.txt | head -3
done
tar czf $OUT/tests.tgz -C /tmp/o .
ARGS="--rounds 2 --reps 10 --rows 1,4,16,64"
for r in 1 2 3; do
  for b in head new; do
    timeout 100 /tmp/fsb/filter_bench_$b $ARGS > /tmp/o/filter_bench_${b}_$r.txt 2>&1
  done
done
FLASHSPEC_FILTER_WIDE=0 timeout 100 /tmp/fsb/filter_bench_new $ARGS > /tmp/o/filter_bench_wide0_1.txt 2>&1
python3 $ROOT/bench/tools/filter_ab_table.py head='/tmp/o/filter_bench_head_*.txt' \
  new='/tmp/o/filter_bench_new_*.txt' wide0='/tmp/o/filter_bench_wide0_*.txt' > /tmp/o/filter_ab_table.txt
tar czf $OUT/all.tgz -C /tmp/o .
grep -E 'p0.9|minp' /tmp/o/filter_ab_table.txt | head -50
