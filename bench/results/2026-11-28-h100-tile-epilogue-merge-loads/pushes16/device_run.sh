#!/bin/bash
# loads at once + pushes over all 16 places (new) against efe0d18 (base)
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
ROOT=$PWD; C=/tmp/fsb; O=/tmp/o; mkdir -p $O
nvidia-smi --query-gpu=name,power.limit --format=csv > $O/gpu.txt
(cd /tmp/b-full && timeout 250 ctest -R '^test_gpu_(filter|graph|tree|bad_input|agree|agree_generic)$' --output-on-failure) > $O/ctest_gpu.txt 2>&1
echo "ctest rc=$?" | tee -a $O/ctest_gpu.txt; grep -E 'Test +#|tests passed' $O/ctest_gpu.txt
( FS_GPU_TEST_SMALL=1 timeout 60 /usr/local/cuda/bin/compute-sanitizer --tool memcheck \
    --error-exitcode 1 /tmp/b-full/tests/test_gpu_filter ) > $O/san_memcheck.txt 2>&1
echo "memcheck test_gpu_filter rc=$?" | tee -a $O/san_memcheck.txt; grep 'ERROR SUMMARY' $O/san_memcheck.txt
tar czf $OUT/out.tgz -C $O .
ARGS="--rounds 2 --reps 10 --rows 1,4,16,64 --logits 1"
for r in 1 2 3; do
  for b in base new; do
    timeout 60 $C/filter_bench_$b $ARGS > $O/filter_bench_${b}_$r.txt 2>&1
  done
done
python3 $ROOT/bench/tools/filter_ab_table.py base="$O/filter_bench_base_*.txt" \
  new="$O/filter_bench_new_*.txt" > $O/filter_ab_table.txt
grep -E 'sample( |  +[0-9]| all|$)|verify( |$)|verify all|sample all' $O/filter_ab_table.txt | grep -v cublas
tar czf $OUT/out.tgz -C $O .
