#!/bin/bash
# Device call: two warm-up slots (w2: slot 0 to the candidates, slot 1 the
# decision and kept record) against one (s0 = 491554f) and 60721a5 (base).
# GPU tests + memcheck of test_gpu_filter; arrivals; filter_bench peaked,
# both shapes, alternated 3 times.
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
ROOT=$PWD; C=/tmp/fsb; O=/tmp/o; mkdir -p $O
nvidia-smi --query-gpu=name,power.limit --format=csv > $O/gpu.txt
(cd /tmp/b-full && timeout 200 ctest -R '^test_gpu_(filter|graph|tree|bad_input)$' --output-on-failure) > $O/ctest_gpu.txt 2>&1
echo "ctest rc=$?" | tee -a $O/ctest_gpu.txt; grep -E 'Test +#|tests passed' $O/ctest_gpu.txt
( FS_GPU_TEST_SMALL=1 timeout 60 /usr/local/cuda/bin/compute-sanitizer --tool memcheck \
    --error-exitcode 1 /tmp/b-full/tests/test_gpu_filter ) > $O/san_memcheck.txt 2>&1
echo "memcheck test_gpu_filter rc=$?" | tee -a $O/san_memcheck.txt; grep 'ERROR SUMMARY' $O/san_memcheck.txt
for r in 1 64; do
  timeout 60 $C/filter_bench_arrive_w2 --rows $r --shapes 151936x4096 --logits 1 --rounds 2 --reps 5 \
    > $O/arrive_w2_rows$r.txt 2>&1
done
tar czf $OUT/out.tgz -C $O .
ARGS="--rounds 2 --reps 10 --rows 1,4,16,64 --logits 1"
for r in 1 2 3; do
  for b in base s0 w2; do
    timeout 60 $C/filter_bench_$b $ARGS > $O/filter_bench_${b}_$r.txt 2>&1
  done
done
python3 $ROOT/bench/tools/filter_ab_table.py base="$O/filter_bench_base_*.txt" \
  s0="$O/filter_bench_s0_*.txt" w2="$O/filter_bench_w2_*.txt" > $O/filter_ab_table.txt
grep -E 'sample( |$)|sample (all|k50|p0.9|minp)|verify( |$)|verify all' $O/filter_ab_table.txt
tar czf $OUT/out.tgz -C $O .
