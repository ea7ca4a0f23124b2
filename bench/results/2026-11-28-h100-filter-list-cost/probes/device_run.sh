#!/bin/bash
# Device call: probes of the Hopper tile kernel's candidate lists under ncu
# (kernel time, one launch at a time, L2 flushed): the base build, one whose
# lists take no insert (count and drop only: noinsert.patch) and one that
# pushes nothing to the lists (nopush.patch), alternated twice; peaked
# logits, 151936 x 4096, 1 and 64 rows.  The probes' outputs are not valid
# draws (their lists are empty: every filtered row is handed over); only
# the scan kernel's time is read.  The probes are filter_bench linked
# against the base library with scan_hopper.cu rebuilt from the patch.
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
ROOT=$PWD
O=/tmp/o; mkdir -p $O
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
nvidia-smi --query-gpu=name,power.limit --format=csv > $O/gpu.txt
for r in 1 2; do
  for b in base noinsert nopush; do
    timeout 90 $NCU --clock-control none --kernel-name regex:fsh_scan_kernel --csv \
      --metrics gpu__time_duration.sum,sm__inst_executed.sum \
      /tmp/fsb/filter_bench_$b --rows 1,64 --shapes 151936x4096 --logits 1 --rounds 1 --reps 3 \
      > $O/ncu_${b}_$r.csv 2>$O/ncu_${b}_$r.err
    echo "$b $r rc=$?"
  done
done
for b in base noinsert nopush; do
  python3 $ROOT/bench/tools/ncu_kernel_medians.py $O/ncu_${b}_1.csv $O/ncu_${b}_2.csv
done > $O/ncu_medians.txt
cat $O/ncu_medians.txt
gzip $O/*.csv
tar czf $OUT/out.tgz -C $O .
