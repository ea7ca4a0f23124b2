#!/bin/bash
# Device call: the tile kernel with W prefetched into L2 ahead of its loads
# (FLASHSPEC_HOPPER_PREFETCH = steps ahead; 0 = none, the control).
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
O=/tmp/o; mkdir -p $O
B=/tmp/b-full/bench/flashspec_bench
OUT2=$O/ab
OUT=$OUT2 timeout 400 bash bench/tools/ab_rounds.sh -r 2 pf "--shapes 151936x4096,128256x8192 --rows 1,16,64 --requests 1,16 --rounds 2 --reps 10" pf0=$B@FLASHSPEC_HOPPER_PREFETCH=0 pf2=$B@FLASHSPEC_HOPPER_PREFETCH=2 pf4=$B@FLASHSPEC_HOPPER_PREFETCH=4 pf8=$B@FLASHSPEC_HOPPER_PREFETCH=8 > $O/ab_pf.txt 2>&1
python3 bench/tools/bench_ab_table.py --methods cublas_matmul,fs_sample,fs_draft_argmax,fs_verify pf0="$OUT2/pf_pf0_*.txt" pf2="$OUT2/pf_pf2_*.txt" pf4="$OUT2/pf_pf4_*.txt" pf8="$OUT2/pf_pf8_*.txt" > $O/ab_pf_table.txt 2>&1
cat $O/ab_pf_table.txt
tar czf $OUT/out.tgz -C $O .
