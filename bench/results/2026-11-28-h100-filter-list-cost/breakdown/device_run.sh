#!/bin/bash
# Device call: every kernel of the base build's filtered and unfiltered
# calls under ncu (one launch at a time, L2 not flushed between kernels, so
# the merge finds the scan's records and lists in L2 as it does in a call),
# peaked logits, 151936 x 4096, 1 and 64 rows, twice.
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
ROOT=$PWD
O=/tmp/o; mkdir -p $O
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for r in 1 2; do
  timeout 120 $NCU --clock-control none --cache-control none --csv \
    --metrics gpu__time_duration.sum,sm__inst_executed.sum \
    /tmp/fsb/filter_bench_base --rows 1,64 --shapes 151936x4096 --logits 1 --rounds 1 --reps 3 \
    > $O/ncu_all_$r.csv 2>$O/ncu_all_$r.err
  echo "run $r rc=$?"
done
python3 $ROOT/bench/tools/ncu_kernel_medians.py $O/ncu_all_1.csv $O/ncu_all_2.csv > $O/ncu_all_medians.txt
cat $O/ncu_all_medians.txt
gzip $O/*.csv
tar czf $OUT/out.tgz -C $O .
