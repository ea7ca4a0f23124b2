#!/bin/bash
# base = efe0d18; mid = loads at once + pushes over 16 places; new = mid + unswitched score loop
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
ROOT=$PWD; C=/tmp/fsb; O=/tmp/o; mkdir -p $O
nvidia-smi --query-gpu=name,power.limit --format=csv > $O/gpu.txt
(cd /tmp/b-full && timeout 200 ctest -R '^test_gpu_(filter|tree|bad_input|agree)$' --output-on-failure) > $O/ctest_gpu.txt 2>&1
echo "ctest rc=$?" | tee -a $O/ctest_gpu.txt; grep -E 'Test +#|tests passed' $O/ctest_gpu.txt
tar czf $OUT/out.tgz -C $O .
BARGS="--shapes 151936x4096,128256x8192 --rows 1,16,64,128,160 --requests 1,16,32 --ops sample,argmax,verify --rounds 2 --reps 10"
for r in 1 2; do
  for b in base mid new; do
    timeout 150 $C/flashspec_bench_$b $BARGS > $O/fsb_${b}_$r.txt 2>&1; echo "fsb $b $r rc=$?"
  done
  tar czf $OUT/out.tgz -C $O .
done
python3 $ROOT/bench/tools/bench_ab_table.py base="$O/fsb_base_*.txt" mid="$O/fsb_mid_*.txt" new="$O/fsb_new_*.txt" > $O/fsb_ab_table.txt 2>&1
cat $O/fsb_ab_table.txt | head -80
tar czf $OUT/out.tgz -C $O .
ARGS="--rounds 2 --reps 10 --rows 1,4,16,64 --logits 1"
for r in 1 2; do
  for b in base mid new; do
    timeout 60 $C/filter_bench_$b $ARGS > $O/filter_bench_${b}_$r.txt 2>&1
  done
done
python3 $ROOT/bench/tools/filter_ab_table.py base="$O/filter_bench_base_*.txt" mid="$O/filter_bench_mid_*.txt" \
  new="$O/filter_bench_new_*.txt" > $O/filter_ab_table.txt
grep -E 'sample( |  +[0-9]| all|$)|verify( |$)|verify all|sample all' $O/filter_ab_table.txt | grep -v cublas
tar czf $OUT/out.tgz -C $O .
