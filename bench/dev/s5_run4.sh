#!/usr/bin/env bash
# Session 5, run 4: the rows kernel at 128 rows costs ~40 us more per call
# than its ncu duration (cuBLAS: ~8 us).  ncu after the benchmark's own L2
# flush (--cache-control none: L2 full of the memset's dirty lines, as in the
# timed calls); the W policy (evict_first vs normal); the tile kernel at 128.
# Needs commit d524e74 (FLASHSPEC_HOPPER_W_NORMAL, rows kernel only; the
# knob went when evict_normal became the default in 2eac044).
source "$(dirname "$0")/common.sh"
build_bench build-a
B=build-a/bench/flashspec_bench
timeout 120 ncu --cache-control none --clock-control none --kernel-name regex:'fshr|fs_prep|nvjet|gemm' \
  --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum --csv \
  $B --shapes 151936x4096 --rows 128 --ops argmax --reps 3 --warmup 0 --gemm heuristic > $OUT/ncu_nocache.csv 2>&1
python3 - $OUT/ncu_nocache.csv <<'PY'
import csv,sys,collections
L=open(sys.argv[1]).read().splitlines(); i=next(k for k,l in enumerate(L) if l.startswith('"ID"'))
d=collections.OrderedDict()
for r in csv.DictReader(L[i:]): d.setdefault(r["ID"],{"n":r["Kernel Name"][:40]})[r["Metric Name"]]=r["Metric Value"]
for k,m in d.items(): print(k,m["n"],m.get("gpu__time_duration.sum"),"rd",m.get("dram__bytes_read.sum"),"wr",m.get("dram__bytes_write.sum"))
PY
sum() { grep -E "^(sample|argmax|verify) +(fs_|cublas_matmul)" "$1" | awk '{printf "%s %s %s %s %s\n",$1,$2,$5,$7,$9}' | paste -sd' '; }
for round in 1 2; do
  for v in first normal tile; do
    E="FLASHSPEC_HOPPER_W_NORMAL=0"; [ $v = normal ] && E="FLASHSPEC_HOPPER_W_NORMAL=1"; [ $v = tile ] && E="FLASHSPEC_HOPPER_ROWS_MIN=100000"
    env $E timeout 60 $B --shapes 151936x4096,128256x8192 --rows 128 --ops sample,argmax --reps 20 --warmup 3 --gemm heuristic > $OUT/ab_${v}_$round.txt 2>&1
    echo "== $v $round: $(sum $OUT/ab_${v}_$round.txt)"
  done
done
