#!/bin/bash
# Device call: the single launch against prep + scan + merge
# (FLASHSPEC_SINGLE_LAUNCH=0) at 64-96 rows on the H200, three rounds.
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
O=/tmp/o; mkdir -p $O
B=/tmp/b-full/bench/flashspec_bench
OUT2=$O/ab
OUT=$OUT2 timeout 420 bash bench/tools/ab_rounds.sh -r 3 s "--shapes 151936x4096,128256x8192 --rows 48,64,72,80,88,96 --requests 13,16,19 --rounds 2 --reps 10" default=$B single0=$B@FLASHSPEC_SINGLE_LAUNCH=0 > $O/ab_s.txt 2>&1
python3 bench/tools/bench_ab_table.py --methods cublas_matmul,fs_sample,fs_draft_argmax,fs_verify default="$OUT2/s_default_*.txt" single0="$OUT2/s_single0_*.txt" > $O/ab_s_table.txt 2>&1
grep fs_ $O/ab_s_table.txt
tar czf $OUT/out.tgz -C $O .
