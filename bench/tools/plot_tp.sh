#!/usr/bin/env bash
# Plot tp_bench's CSV: time vs TP size per op and row count, fused against
# ideal scaling and against all-gathering the logits + one pass over them.
#   bench/tools/plot_tp.sh results/.../tp_scaling.csv OUTDIR
set -euo pipefail
csv=$1
out=${2:-$(dirname "$csv")}
shape=$(awk -F, 'NR == 2 { print "V=" $3 " D=" $4 }' "$csv")
for op in $(tail -n +2 "$csv" | cut -d, -f1 | sort -u); do
  for rows in $(awk -F, -v o="$op" 'NR > 1 && $1 == o { print $5 }' "$csv" | sort -n -u); do
    data=$(mktemp)
    awk -F, -v o="$op" -v r="$rows" 'NR > 1 && $1 == o && $5 == r { print $2, $6, $7, $8 }' \
      "$csv" > "$data"
    gnuplot <<GP
set terminal pngcairo size 800,520 noenhanced
set output "$out/tp_${op}_rows${rows}.png"
set title "$op over a vocabulary-sharded LM head, rows=$rows ($shape bf16)"
set xlabel "TP size (GPUs)"
set ylabel "median time per call (ms)"
set logscale x 2
set xtics (1, 2, 4, 8)
set key top right
set grid
plot "$data" using 1:2 with linespoints lw 2 title "fused (flashspec)", \
     "$data" using 1:3 with lines dt 2 lw 2 title "ideal (TP=1 fused / TP)", \
     "$data" using 1:4 with linespoints lw 2 title "cuBLAS + all-gather logits + one pass"
GP
    rm -f "$data"
    echo "wrote $out/tp_${op}_rows${rows}.png"
  done
done
