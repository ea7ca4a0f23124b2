#!/bin/bash
# Device call: where the one-row second pass lost ~100 us: flat top-p 0.9 at
# 1 row (one row handed over) across builds (s0 s2 w2 w3 w3u) and w3u
# without warm-up slots; 3 alternations.
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
ROOT=$PWD; C=/tmp/fsb; O=/tmp/o; mkdir -p $O
FARGS="--rounds 1 --reps 10 --rows 1 --logits 0 --shapes 151936x4096"
for r in 1 2 3; do
  for b in s0 s2 w2 w3 w3u; do
    timeout 100 $C/filter_bench_$b $FARGS > $O/flat_${b}_$r.txt 2>&1
  done
  FLASHSPEC_FILTER_WARM=0 timeout 100 $C/filter_bench_w3u $FARGS > $O/flat_w3unowarm_$r.txt 2>&1
  FLASHSPEC_FILTER_WARM=0 timeout 100 $C/filter_bench_s0 $FARGS > $O/flat_s0nowarm_$r.txt 2>&1
done
python3 $ROOT/bench/tools/filter_ab_table.py s0="$O/flat_s0_*.txt" s2="$O/flat_s2_*.txt" w2="$O/flat_w2_*.txt" w3="$O/flat_w3_*.txt" w3u="$O/flat_w3u_*.txt" w3u_nowarm="$O/flat_w3unowarm_*.txt" s0_nowarm="$O/flat_s0nowarm_*.txt" > $O/flat_ab_table.txt
grep -E 'sample( |$)|sample (p0.9|minp|k200)' $O/flat_ab_table.txt
tar czf $OUT/out.tgz -C $O .
