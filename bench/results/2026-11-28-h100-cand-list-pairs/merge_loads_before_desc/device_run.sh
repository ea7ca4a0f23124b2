#!/bin/bash
# The filtered merge's lists and tile records loaded before the row's descriptor
# (loads_before_desc.patch on 2647880: new) against 2647880 (base); builds
# made off the device and carried (bench/tools/carry_pack.sh, carry-bin/extra.txz)
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
ROOT=$PWD; C=/tmp/fsb; O=/tmp/o; mkdir -p $O/raw
T0=$(date +%s); el() { echo "$1 $(( $(date +%s) - T0 )) s" | tee -a $O/log.txt; }
nvidia-smi --query-gpu=name,power.limit --format=csv > $O/gpu.txt
for tool in initcheck memcheck; do for t in test_gpu_filter test_gpu_tree; do
  FS_GPU_TEST_SMALL=1 timeout 90 /usr/local/cuda/bin/compute-sanitizer --tool $tool \
    --error-exitcode 1 /tmp/b-full/tests/$t > $O/san_${tool}_$t.txt 2>&1
  el "$tool $t rc=$?"; grep 'ERROR SUMMARY' $O/san_${tool}_$t.txt
done; done
FS_GPU_TEST_SMALL=1 FLASHSPEC_DISABLE_HOPPER=1 timeout 90 /usr/local/cuda/bin/compute-sanitizer --tool initcheck \
    --error-exitcode 1 /tmp/b-full/tests/test_gpu_tree > $O/san_initcheck_test_gpu_tree_generic.txt 2>&1
el "initcheck tree generic rc=$?"; grep 'ERROR SUMMARY' $O/san_initcheck_test_gpu_tree_generic.txt
tar czf $OUT/out.tgz -C $O .
ARGS="--rounds 2 --reps 10 --rows 1,4,16,64 --logits 1"
for r in 1 2 3; do for b in base new; do
  timeout 60 $C/filter_bench_$b $ARGS > $O/raw/filter_bench_${b}_$r.txt 2>&1
done; done; el "ab"
python3 $ROOT/bench/tools/filter_ab_table.py base="$O/raw/filter_bench_base_*.txt" \
  new="$O/raw/filter_bench_new_*.txt" > $O/filter_ab_table.txt
grep -E 'sample all|verify all' $O/filter_ab_table.txt
tar czf $OUT/out.tgz -C $O .
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for b in base new; do
  timeout 60 $NCU --clock-control none --kernel-name regex:fs_filter_merge --csv \
    --metrics gpu__time_duration.sum,sm__inst_executed.sum \
    $C/filter_bench_$b --rows 1,64 --shapes 151936x4096 --logits 1 --rounds 1 --reps 3 \
    > $O/ncu_merge_$b.csv 2>$O/ncu_merge_$b.err; el "ncu $b rc=$?"
done
for b in base new; do python3 $ROOT/bench/tools/ncu_kernel_medians.py $O/ncu_merge_$b.csv; done > $O/ncu_merge_medians.txt 2>&1
cat $O/ncu_merge_medians.txt
gzip $O/ncu_*.csv
tar czf $OUT/out.tgz -C $O .
(cd /tmp/b-full && timeout 200 ctest -R '^test_gpu_(filter|graph|tree|tree_generic|bad_input|agree_generic|stat|single)$' --output-on-failure) > $O/ctest_gpu.txt 2>&1
el "ctest rc=$?"; grep -E 'Test +#|tests passed' $O/ctest_gpu.txt
tar czf $OUT/out.tgz -C $O .
