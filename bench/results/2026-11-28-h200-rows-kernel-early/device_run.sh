#!/bin/bash
# Two device calls (fresh H200s), a build carried (bench/tools/carry_pack.sh).
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
O=/tmp/o; mkdir -p $O
B=/tmp/b-full/bench/flashspec_bench
OUT2=$O/ab
# call 1, at 894fb04 (the tile kernel to 96 rows): the rows kernel forced
# from 65 and from 81 rows -> ab_forced_table.txt
OUT=$OUT2 bash bench/tools/ab_rounds.sh -r 3 k "--shapes 262144x3072,151936x4096,128256x8192 --rows 64,72,80,88,96 --requests 13,16,19 --rounds 2 --reps 10" \
  default=$B rm65=$B@FLASHSPEC_HOPPER_ROWS_MIN=65 rm81=$B@FLASHSPEC_HOPPER_ROWS_MIN=81
python3 bench/tools/bench_ab_table.py --methods cublas_matmul,fs_sample,fs_draft_argmax,fs_verify \
  default="$OUT2/k_default_*.txt" rm65="$OUT2/k_rm65_*.txt" rm81="$OUT2/k_rm81_*.txt" > $O/ab_forced_table.txt
# call 2, with the rule (fs_hopper_rows_min_fast_hbm): against the old
# choice on six shapes, three of them new -> ab_validate_table.txt; then
# the GPU suite -> ctest_gpu.txt
OUT=$OUT2 bash bench/tools/ab_rounds.sh -r 3 v "--shapes 128256x3072,152064x3584,152064x5120,262144x3072,151936x4096,128256x8192 --rows 48,64,72,80,88,96 --requests 13,16,19 --rounds 2 --reps 10" \
  early=$B old=$B@FLASHSPEC_HOPPER_ROWS_EARLY=0
python3 bench/tools/bench_ab_table.py --methods cublas_matmul,fs_sample,fs_draft_argmax,fs_verify \
  early="$OUT2/v_early_*.txt" old="$OUT2/v_old_*.txt" > $O/ab_validate_table.txt
( cd /tmp/b-full && ctest -j 4 -R gpu --output-on-failure > $O/ctest_gpu.txt 2>&1 )
tar czf $OUT/out.tgz -C $O .
# call 3: trees with the rule against the old choice -> tree_table.txt,
# tree_{early,old}_N.txt; the GPU suite again -> ctest_gpu.txt
T=/tmp/b-full/bench/tree_bench
for r in 1 2 3; do
  $T --requests 1,3,4,5,6,8 --nodes 8,15,16,31,64 --shapes 128256x3072,262144x3072,151936x4096,128256x8192 --rounds 2 --reps 10 > $O/tree_early_$r.txt
  FLASHSPEC_HOPPER_ROWS_EARLY=0 $T --requests 1,3,4,5,6,8 --nodes 8,15,16,31,64 --shapes 128256x3072,262144x3072,151936x4096,128256x8192 --rounds 2 --reps 10 > $O/tree_old_$r.txt
done
# call 4: below 65 rows -> ab_below65_table.txt, tree_below65_table.txt
OUT=$OUT2 bash bench/tools/ab_rounds.sh -r 3 s "--shapes 262144x3072,128256x3072 --rows 40,48,56,64 --requests 8,10,12 --rounds 2 --reps 10" \
  early=$B rm33=$B@FLASHSPEC_HOPPER_ROWS_MIN=33 rm49=$B@FLASHSPEC_HOPPER_ROWS_MIN=49
for r in 1 2 3; do
  $T --requests 1,2,3,4,7 --nodes 8,15,16,31 --shapes 151936x4096,128256x8192,262144x3072 --rounds 2 --reps 10 > $O/tree33_early_$r.txt
  FLASHSPEC_HOPPER_ROWS_MIN=33 $T --requests 1,2,3,4,7 --nodes 8,15,16,31 --shapes 151936x4096,128256x8192,262144x3072 --rounds 2 --reps 10 > $O/tree33_rm33_$r.txt
done
# 2026-11-29 recheck (one call at 848fa5d): ab_recheck_48_80_table.txt
#   OUT=$O/ab bash bench/tools/ab_rounds.sh -r 3 early \
#     "--shapes 151936x4096,128256x8192,262144x3072 --rows 48,56,64,72,80 --requests 12,16 --rounds 2 --reps 10" \
#     auto=$B rm49=$B@FLASHSPEC_HOPPER_ROWS_MIN=49
