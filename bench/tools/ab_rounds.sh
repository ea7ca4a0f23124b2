#!/usr/bin/env bash
# A/B runner: runs benchmark binaries (or one binary under several
# environments) in alternating rounds inside one device call, so that clock
# and power drift on a chip held at its power cap hits every variant alike.
# Prints one summary line per run (method, rows, median ms, x bound) and
# keeps each run's full table in $OUT/TAG_NAME_ROUND.txt.
#
#   bench/tools/ab_rounds.sh [-r ROUNDS] TAG "BENCH ARGS" NAME=BINARY[@ENV] ...
#
# ENV is VAR=VALUE (several joined by ','), e.g.
#   bench/tools/ab_rounds.sh rb "--shapes 151936x4096 --rows 160,192 --reps 30" \
#     auto=build-sm90a/bench/flashspec_bench \
#     rb128=build-sm90a/bench/flashspec_bench@FLASHSPEC_HOPPER_ROW_BLOCK=128
# Compare variants only within one call, round against round.  Whole
# processes of the same build ran 5-12% apart at 400-1600 rows on an H200
# (bench/results/2026-11-30-h200-tree-tile-bits/): for a knob, prefer
# flashspec_bench --alt VAR=VALUE (tree_bench: TREE_BENCH_ALT), which times
# both sides in one process, run both ways round and read with
# bench/tools/alt_table.py; this runner is for two builds.
set -uo pipefail
rounds=2
if [ "${1:-}" = "-r" ]; then rounds=$2; shift 2; fi
if [ $# -lt 3 ]; then
  sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'
  exit 2
fi
tag=$1 args=$2
shift 2
OUT=${OUT:-/tmp/ab}
mkdir -p "$OUT"

# one line of (method rows median x_bound) per fused op and matmul row
summary() {
  grep -E '^(sample|argmax|verify) +(fs_|cublas_matmul)' "$1" | awk '{print $2,$5,$7,$10}' | paste -sd' '
}

status=0
for ((round = 1; round <= rounds; ++round)); do
  for v in "$@"; do
    name=${v%%=*} bin=${v#*=} env=()
    case "$bin" in *@*) IFS=, read -r -a env <<<"${bin#*@}"; bin=${bin%%@*} ;; esac
    out="$OUT/${tag}_${name}_${round}.txt"
    # shellcheck disable=SC2086  # args are the benchmark's flags, split on purpose
    env ${env[@]+"${env[@]}"} timeout 300 "$bin" $args >"$out" 2>&1
    rc=$?
    [ $rc -eq 0 ] || status=1
    echo "== $name round $round rc=$rc: $(summary "$out")"
  done
done
exit $status
