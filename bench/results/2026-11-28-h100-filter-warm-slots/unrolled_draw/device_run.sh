#!/bin/bash
# Device call: the kept block's draw unrolled (w3u) on three warm-up slots
# (w3), against one slot (s0 = 491554f).  GPU tests + memcheck (w3u);
# arrivals (w3u); filter_bench peaked both shapes x3; flat 151936x4096
# (the second pass) s0 / w3u x2.
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
  timeout 60 $C/filter_bench_arrive_w3u --rows $r --shapes 151936x4096 --logits 1 --rounds 2 --reps 5 \
    > $O/arrive_w3u_rows$r.txt 2>&1
done
tar czf $OUT/out.tgz -C $O .
ARGS="--rounds 2 --reps 10 --rows 1,4,16,64 --logits 1"
for r in 1 2 3; do
  for b in s0 w3 w3u; do
    timeout 60 $C/filter_bench_$b $ARGS > $O/filter_bench_${b}_$r.txt 2>&1
  done
done
python3 $ROOT/bench/tools/filter_ab_table.py s0="$O/filter_bench_s0_*.txt" \
  w3="$O/filter_bench_w3_*.txt" w3u="$O/filter_bench_w3u_*.txt" > $O/filter_ab_table.txt
grep -E 'sample (all|k200)|verify all' $O/filter_ab_table.txt
tar czf $OUT/out.tgz -C $O .
FARGS="--rounds 1 --reps 5 --rows 1,16,64 --logits 0 --shapes 151936x4096"
for r in 1 2; do
  for b in s0 w3u; do
    timeout 100 $C/filter_bench_$b $FARGS > $O/flat_${b}_$r.txt 2>&1
  done
done
python3 $ROOT/bench/tools/filter_ab_table.py s0="$O/flat_s0_*.txt" w3u="$O/flat_w3u_*.txt" > $O/flat_ab_table.txt
grep -E 'sample (p0.9|minp|k200)' $O/flat_ab_table.txt
tar czf $OUT/out.tgz -C $O .
