#!/bin/bash
# final state (fin: a row's lists and records loaded once its descriptor is in) against efe0d18
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
ROOT=$PWD; C=/tmp/fsb; O=/tmp/o; mkdir -p $O
nvidia-smi --query-gpu=name,power.limit --format=csv > $O/gpu.txt
SAN=/usr/local/cuda/bin/compute-sanitizer; T=/tmp/b-full/tests
for st in "initcheck test_gpu_filter" "memcheck test_gpu_filter" "initcheck test_gpu_tree"; do
  set -- $st
  ( FS_GPU_TEST_SMALL=1 timeout 90 $SAN --tool $1 --error-exitcode 1 $T/$2 ) > $O/san_$1_$2.txt 2>&1
  echo "$1 $2 rc=$? $(grep -h 'ERROR SUMMARY' $O/san_$1_$2.txt | tail -1)"
done
(cd /tmp/b-full && timeout 120 ctest -R '^test_gpu_(filter|tree|bad_input|graph)$' --output-on-failure) > $O/ctest_gpu.txt 2>&1
echo "ctest rc=$?" | tee -a $O/ctest_gpu.txt; grep -E 'Test +#|tests passed' $O/ctest_gpu.txt
tar czf $OUT/out.tgz -C $O .
ARGS="--rounds 2 --reps 10 --rows 1,4,16,64 --logits 1"
for r in 1 2 3; do
  for b in base fin; do
    timeout 60 $C/filter_bench_$b $ARGS > $O/filter_bench_${b}_$r.txt 2>&1
  done
done
python3 $ROOT/bench/tools/filter_ab_table.py base="$O/filter_bench_base_*.txt" fin="$O/filter_bench_fin_*.txt" > $O/filter_ab_table.txt
grep -E 'sample( |  +[0-9]| all|$)|verify( |$)|verify all|sample all' $O/filter_ab_table.txt | grep -v cublas
tar czf $OUT/out.tgz -C $O .
