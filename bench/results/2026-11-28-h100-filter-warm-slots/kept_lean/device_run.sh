#!/bin/bash
# Device call: the lean kept record for chain rows.  GPU tests the resolve
# touches + memcheck of test_gpu_filter; resolve probe base/new at 1 and 64
# rows; filter_bench peaked, both shapes, base and new alternated 3 times.
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
ROOT=$PWD; C=/tmp/fsb
O=/tmp/o; mkdir -p $O
nvidia-smi --query-gpu=name,power.limit --format=csv > $O/gpu.txt
(cd /tmp/b-full && timeout 200 ctest -R '^test_gpu_(filter|graph|tree|bad_input)$' --output-on-failure) > $O/ctest_gpu.txt 2>&1
echo "ctest rc=$?" | tee -a $O/ctest_gpu.txt; grep -E 'Test +#|tests passed' $O/ctest_gpu.txt
( FS_GPU_TEST_SMALL=1 timeout 60 /usr/local/cuda/bin/compute-sanitizer --tool memcheck \
    --error-exitcode 1 /tmp/b-full/tests/test_gpu_filter ) > $O/san_memcheck.txt 2>&1
echo "memcheck test_gpu_filter rc=$?" | tee -a $O/san_memcheck.txt; grep 'ERROR SUMMARY' $O/san_memcheck.txt
for b in base new; do
  for r in 1 64; do
    timeout 60 $C/filter_bench_probe_$b --rows $r --shapes 151936x4096 --logits 1 --rounds 2 --reps 5 \
      > $O/probe_${b}_rows$r.txt 2>&1
    echo "probe $b rows $r"; python3 bench/tools/resolve_probe_table.py $O/probe_${b}_rows$r.txt | tee $O/probe_${b}_rows${r}_table.txt
  done
done
tar czf $OUT/out.tgz -C $O .
ARGS="--rounds 2 --reps 10 --rows 1,4,16,64 --logits 1"
for r in 1 2 3; do
  for b in base new; do
    timeout 60 $C/filter_bench_$b $ARGS > $O/filter_bench_${b}_$r.txt 2>&1
  done
done
python3 $ROOT/bench/tools/filter_ab_table.py base="$O/filter_bench_base_*.txt" \
  new="$O/filter_bench_new_*.txt" > $O/filter_ab_table.txt
grep -E 'sample( |$)|sample (all|k50)|verify( |$)|verify all' $O/filter_ab_table.txt | head -60
tar czf $OUT/out.tgz -C $O .
