#!/usr/bin/env bash
# Plot tp_bench's CSV: time vs TP size per row count, fused against ideal
# scaling and against all-gather of logits + sampling.
#   bench/tools/plot_tp.sh results/.../tp_scaling.csv OUTDIR
set -euo pipefail
csv=$1
out=${2:-$(dirname "$csv")}
for rows in $(tail -n +2 "$csv" | cut -d, -f4 | sort -n -u); do
  data=$(mktemp)
  awk -F, -v r="$rows" 'NR > 1 && $4 == r { print $1, $5, $6, $7 }' "$csv" > "$data"
  gnuplot <<GP
set terminal pngcairo size 800,520 noenhanced
set output "$out/tp_rows${rows}.png"
set title "fs_sample over a vocabulary-sharded LM head, rows=$rows (V=128256 D=8192 bf16, H200)"
set xlabel "TP size (GPUs)"
set ylabel "median time per call (ms)"
set logscale x 2
set xtics (1, 2, 4, 8)
set key top right
set grid
plot "$data" using 1:2 with linespoints lw 2 title "fused (flashspec)", \
     "$data" using 1:3 with lines dt 2 lw 2 title "ideal (TP=1 fused / TP)", \
     "$data" using 1:4 with linespoints lw 2 title "cuBLAS + all-gather logits + Gumbel sampler"
GP
  rm -f "$data"
  echo "wrote $out/tp_rows${rows}.png"
done
