#!/bin/bash
# Device call (final): three warm-up slots + the unrolled kept draw.  GPU
# tests the resolve touches, memcheck and racecheck of test_gpu_filter, two
# mutants of the kept record that test_gpu_filter must reject; filter_bench
# against 60721a5 (base), peaked both shapes x3, flat 151936x4096 x1.
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
ROOT=$PWD; C=/tmp/fsb; O=/tmp/o; mkdir -p $O
nvidia-smi --query-gpu=name,power.limit --format=csv > $O/gpu.txt
(cd /tmp/b-full && timeout 200 ctest -R '^test_gpu_(filter|graph|tree|bad_input)$' --output-on-failure) > $O/ctest_gpu.txt 2>&1
echo "ctest rc=$?" | tee -a $O/ctest_gpu.txt; grep -E 'Test +#|tests passed' $O/ctest_gpu.txt
SAN=/usr/local/cuda/bin/compute-sanitizer
( FS_GPU_TEST_SMALL=1 timeout 60 $SAN --tool memcheck --error-exitcode 1 /tmp/b-full/tests/test_gpu_filter ) > $O/san_memcheck.txt 2>&1
echo "memcheck rc=$?" | tee -a $O/san_memcheck.txt; grep 'ERROR SUMMARY' $O/san_memcheck.txt
( FS_GPU_TEST_SMALL=1 timeout 100 $SAN --tool racecheck --error-exitcode 1 /tmp/b-full/tests/test_gpu_filter ) > $O/san_racecheck.txt 2>&1
echo "racecheck rc=$?" | tee -a $O/san_racecheck.txt; grep 'RACECHECK SUMMARY\|ERROR SUMMARY' $O/san_racecheck.txt
for m in noexcl selcut; do
  timeout 60 $C/test_gpu_filter_mutant_$m > $O/mutant_$m.txt 2>&1
  echo "mutant $m rc=$? (must be non-zero)" | tee -a $O/mutant_$m.txt; grep -m3 -E 'FAILED|fail|token' $O/mutant_$m.txt
done
tar czf $OUT/out.tgz -C $O .
cp /tmp/b-full/bench/filter_bench $C/filter_bench_new
ARGS="--rounds 2 --reps 10 --rows 1,4,16,64 --logits 1"
for r in 1 2 3; do
  for b in base new; do
    timeout 60 $C/filter_bench_$b $ARGS > $O/filter_bench_${b}_$r.txt 2>&1
  done
done
python3 $ROOT/bench/tools/filter_ab_table.py base="$O/filter_bench_base_*.txt" new="$O/filter_bench_new_*.txt" > $O/filter_ab_table.txt
grep -E 'sample (all|k50|p0.9|minp|k200)|verify all' $O/filter_ab_table.txt
FARGS="--rounds 1 --reps 5 --rows 1,16,64 --logits 0 --shapes 151936x4096"
for b in base new; do timeout 100 $C/filter_bench_$b $FARGS > $O/flat_${b}_1.txt 2>&1; done
python3 $ROOT/bench/tools/filter_ab_table.py base="$O/flat_base_*.txt" new="$O/flat_new_*.txt" > $O/flat_ab_table.txt
grep -E 'sample (p0.9|minp|k200|all)' $O/flat_ab_table.txt
tar czf $OUT/out.tgz -C $O .
