#!/usr/bin/env bash
# The device call that made this folder (one H200), from the repository
# root with carry ["carry-bin"]: carry-bin/all.txz holds this folder's
# commit's flashspec_bench, filter_bench and tree_bench, built off the
# device and packed with absolute paths
# (tar cPf - /tmp/b-full/bench/{flashspec,filter,tree}_bench | xz > carry-bin/all.txz).
# The scoring ran off the device:
#   bench/tools/issue20_score.py bench_N.json > issue20_score_N.txt
set -u
source bench/tools/device_env.sh
( sleep 575; tar czf "$OUT/out.tgz" -C "$O" . ) &
X=$B/bench/flashspec_bench F=$B/bench/filter_bench T=$B/bench/tree_bench
# three sweeps of issue 20's rows and shapes (the benchmark's defaults)
for r in 1 2 3; do
  timeout 150 $X --json $O/bench_$r.json > $O/bench_$r.txt 2>&1; echo "rc=$?" >> $O/bench_$r.txt
  el "sweep $r"
done
# issue 19's filter table (peaked logits) and issue 21's trees (defaults)
timeout 120 $F --rows 1,16,48,64 --logits 1 --rounds 3 --reps 10 > $O/filter_bench.txt 2>&1
el filters
timeout 150 $T > $O/tree_bench.txt 2>&1
el trees
tar czf "$OUT/out.tgz" -C "$O" .
