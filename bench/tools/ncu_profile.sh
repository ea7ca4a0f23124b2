#!/usr/bin/env bash
# Nsight Compute evidence for the Hopper scan against cuBLAS's kernels, on the
# GPU machine: per-launch time, SM clock, DRAM / L2 bytes and tensor-pipe
# activity with a clean L2 (ncu flushes before each kernel) and with the
# benchmark's own flush only (--cache-control none: a dirty L2, as in the
# timed calls), and the per-instruction stall samples of the scan kernel.
# Tables: bench/tools/ncu_metrics_table.py and ncu_sass_split.py over the
# gzipped CSVs this writes to $OUT.
#   bench/tools/ncu_profile.sh [SHAPE [ROWS]]    default 151936x4096, 256,320
# Needs the benchmark built (BUILD_DIR, default build-sm90a: bench/tools/run_bench.sh).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-$PWD/bench/results}"
BUILD_DIR="${BUILD_DIR:-build-sm90a}"
SHAPE=${1:-151936x4096}
ROWS=${2:-256,320}
B="$BUILD_DIR/bench/flashspec_bench"
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
mkdir -p "$OUT"
[ -x "$B" ] || { echo "ncu_profile.sh: $B not built" >&2; exit 1; }
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,launch__grid_size,launch__cluster_dim_x
M=$M,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,l1tex__m_xbar2l1tex_read_bytes.sum
M=$M,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
K='fshr?_scan|nvjet|gemm|xmma|cutlass'
status=0

"$NCU" --clock-control none --kernel-name regex:"$K" --csv --metrics "$M" "$B" \
  --shapes "$SHAPE" --rows "$ROWS" --requests 64 --reps 1 --warmup 0 \
  >"$OUT/ncu_clean_l2_$SHAPE.csv" || status=1
"$NCU" --cache-control none --clock-control none --kernel-name regex:"$K" --csv --metrics "$M" "$B" \
  --shapes "$SHAPE" --rows "$ROWS" --ops sample,argmax --reps 3 --warmup 1 \
  >"$OUT/ncu_dirty_l2_$SHAPE.csv" || status=1

IFS=, read -r -a rows <<<"$ROWS"
for r in "${rows[@]}"; do
  for op in sample argmax; do
    n="sass_rows${r}_$op"
    "$NCU" --clock-control none -k regex:'fshr?_scan' -c 1 --section SourceCounters \
      --section WarpStateStats -f -o "/tmp/$n" "$B" --shapes "$SHAPE" --rows "$r" --ops "$op" \
      --reps 1 --warmup 0 --gemm heuristic >/dev/null 2>&1 || status=1
    "$NCU" -i "/tmp/$n.ncu-rep" --page source --csv --print-source sass >"$OUT/$n.csv" 2>/dev/null
  done
done
gzip -f "$OUT"/ncu_*_l2_"$SHAPE".csv "$OUT"/sass_rows*.csv
python3 bench/tools/ncu_metrics_table.py "$OUT"/ncu_*_l2_"$SHAPE".csv.gz
python3 bench/tools/ncu_sass_split.py "$OUT"/sass_rows*.csv.gz
exit $status
