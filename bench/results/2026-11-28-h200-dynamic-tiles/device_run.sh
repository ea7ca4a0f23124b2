#!/bin/bash
# Device call: the tile kernel's tiles handed out from a counter (every
# tile; a -DFSH_DYN_TILES=1 build of scan_hopper.cu) against the static
# schedule, single-launch ops at 1-96 rows, three shapes.
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
O=/tmp/o; mkdir -p $O
OUT2=$O/ab
OUT=$OUT2 timeout 380 bash bench/tools/ab_rounds.sh -r 3 d "--shapes 151936x4096,128256x8192,262144x3072 --rows 1,4,16,64,96 --requests 1,16 --rounds 2 --reps 10" base=/tmp/b-full/bench/flashspec_bench dyn=/tmp/fsb/flashspec_bench_dyn > $O/ab_d.txt 2>&1
python3 bench/tools/bench_ab_table.py --methods cublas_matmul,fs_sample,fs_draft_argmax,fs_verify base="$OUT2/d_base_*.txt" dyn="$OUT2/d_dyn_*.txt" > $O/ab_d_table.txt 2>&1
grep fs_ $O/ab_d_table.txt
grep -h "same token" $OUT2/d_dyn_1.txt | awk '{print $2, $3, $5, $(NF-1), $NF}' | head -12
tar czf $OUT/out.tgz -C $O .
