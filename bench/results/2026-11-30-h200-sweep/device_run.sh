#!/usr/bin/env bash
# The device calls that made this folder (one H200 each; `bash run.sh N` ran
# stage N), from the repository root with carry ["carry-bin", ".deps"]:
# carry-bin/all.txz packed by bench/tools/carry_pack.sh /tmp/b-full /tmp/b-base
# (the build named in the README).  Each call also ran a stage of
# ../2026-11-30-h200-tree-tile-bits/device_run.sh (4 and 5) after these
# commands.  The scoring ran off the device:
#   bench/tools/issue20_score.py bench.json > issue20_score.txt
#   bench/tools/issue20_score.py repeats/bench_N.json > repeats/issue20_score_N.txt
set -u
source bench/tools/device_env.sh
X=$B/bench/flashspec_bench F=$B/bench/filter_bench
case "${1:-1}" in
1)
timeout 420 $X --json $O/bench.json > $O/bench.txt 2>&1
echo "rc=$?" >> $O/bench.txt
el sweep
;;
2)
# two repeats of the sweep, and issue 19's filter table
for r in 2 3; do timeout 120 $X --json $O/bench_$r.json > $O/bench_$r.txt 2>&1; echo "rc=$?" >> $O/bench_$r.txt; done
el sweeps
timeout 150 $F --rows 1,16,48,64 --logits 1 --rounds 3 --reps 10 > $O/filter_bench.txt 2>&1
el filters
;;
esac
tar czf $OUT/out.tgz -C $O .
