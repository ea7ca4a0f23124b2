#!/usr/bin/env bash
# Plots of the benchmark CSV written by flashspec_bench --csv: median time
# against rows (verify: against requests), one line per method, log-x, with
# the memory floor (V*D*2 bytes / measured copy bandwidth) as a dashed line.
# One PNG per shape and op family:
#   <outdir>/bench_V<V>_D<D>_<family>.png   family = sample | argmax | verify
# The argmax plot also shows the cuBLAS matmul alone of the sample family.
#
# usage: bench/tools/plot.sh results.csv [outdir]   (outdir defaults to the CSV's folder)
set -euo pipefail

csv="${1:?usage: bench/tools/plot.sh results.csv [outdir]}"
out="${2:-$(dirname "$csv")}"
command -v gnuplot >/dev/null || { echo "plot.sh: gnuplot not found" >&2; exit 1; }
mkdir -p "$out"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# Columns (see report.c): 1 family, 2 method, 3 fused, 4 V, 5 D, 6 rows,
# 7 requests, 8 median_ms, ..., 12 floor_ms.  Only the quoted check/note
# columns at the end may contain commas, so splitting on ',' is safe here.
# One data file per (shape, family, method): "x median_ms".
awk -F, -v dir="$tmp" '
  NR == 1 { next }
  $8 == "" { next }                       # not measured
  {
    fam = $1; meth = $2; shape = "V" $4 "_D" $5
    x = (fam == "verify") ? $7 : $6
    f = dir "/" shape "__" fam "__" meth ".dat"
    print x, $8 >> f
    shapes[shape] = $12                   # floor_ms
    fused[meth] = $3
    if (fam == "verify" && $7 > 0) tpr[shape] = $6 / $7   # target rows per request
    if (fam == "sample" && meth == "cublas_matmul") {   # also drawn on the argmax plot
      g = dir "/" shape "__argmax__" meth ".dat"
      print x, $8 >> g
    }
  }
  END {
    for (s in shapes) print s, shapes[s] > (dir "/shapes.txt")
    for (m in fused) print m, fused[m] > (dir "/fused.txt")
    for (s in tpr) print s, tpr[s] > (dir "/tpr.txt")
  }' "$csv"

[ -s "$tmp/shapes.txt" ] || { echo "plot.sh: no measured rows in $csv" >&2; exit 1; }

made=0
while read -r shape floor; do
  for fam in sample argmax verify; do
    files=( "$tmp/${shape}__${fam}__"*.dat )
    [ -e "${files[0]}" ] || continue
    png="$out/bench_${shape}_${fam}.png"
    v="${shape%%_D*}"; d="${shape##*_D}"
    if [ "$fam" = verify ]; then
      t="$(awk -v s="$shape" '$1 == s { print $2 }' "$tmp/tpr.txt" 2>/dev/null)"
      xlabel="requests (${t:-k+1} target rows each: greedy drafts + bonus)"
    else xlabel="rows"; fi
    plots=()
    for f in "${files[@]}"; do
      sort -n -k1,1 "$f" -o "$f"
      m="$(basename "$f" .dat)"; m="${m##*__}"
      fz="$(awk -v m="$m" '$1 == m { print $2 }' "$tmp/fused.txt")"
      lw=1.5; [ "$fz" = 1 ] && lw=3
      plots+=( "'$f' using 1:2 with linespoints lw $lw pt 7 ps 0.8 title '$m'" )
    done
    plots+=( "$floor with lines dt 2 lw 2 lc rgb 'black' title 'floor $(printf '%.3f' "$floor") ms (V*D*2 B / copy BW)'" )
    {
      echo "set terminal pngcairo size 1100,700 font 'sans,11'"
      echo "set output '$png'"
      echo "set title 'flashspec $fam, V=${v#V} D=$d, bf16 (median, cold L2)'"
      echo "set termoption noenhanced"
      echo "set logscale x 2"
      echo "set autoscale xfix"
      echo "set xlabel '$xlabel'"
      echo "set ylabel 'median time per call (ms)'"
      echo "set yrange [0:*]"
      echo "set grid"
      echo "set key top left box opaque"
      (IFS=,; echo "plot ${plots[*]}")
    } > "$tmp/plot.gp"
    gnuplot "$tmp/plot.gp"
    echo "wrote $png"
    made=$((made + 1))
  done
done < "$tmp/shapes.txt"
[ "$made" -gt 0 ]
