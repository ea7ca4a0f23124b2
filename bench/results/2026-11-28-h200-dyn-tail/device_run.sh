#!/bin/bash
# Two device calls (each on a fresh H200), a build of dyn_tail.patch carried
# (bench/tools/carry_pack.sh): test_gpu_single with its test_dyn_tiles case,
# then the dynamic tail against the static schedule in alternating rounds.
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
O=/tmp/o; mkdir -p $O
( cd /tmp/b-full && timeout 170 ctest -R "test_gpu_single$" --output-on-failure > $O/single.txt 2>&1 )
B=/tmp/b-full/bench/flashspec_bench
E=FLASHSPEC_DYN_TILES_ROWS_MIN
OUT2=$O/ab
# call 1: ab_table.txt
OUT=$OUT2 bash bench/tools/ab_rounds.sh -r 2 d "--shapes 151936x4096,128256x8192,262144x3072 --rows 1,64,96 --requests 16 --rounds 2 --reps 10" \
  base=$B@$E=0 d1=$B@$E=1,FLASHSPEC_DYN_TILES_ROUNDS=1 \
  d2=$B@$E=1,FLASHSPEC_DYN_TILES_ROUNDS=2 dmax=$B@$E=1,FLASHSPEC_DYN_TILES_ROUNDS=99
python3 bench/tools/bench_ab_table.py --methods cublas_matmul,fs_sample,fs_draft_argmax,fs_verify \
  base="$OUT2/d_base_*.txt" d1="$OUT2/d_d1_*.txt" d2="$OUT2/d_d2_*.txt" dmax="$OUT2/d_dmax_*.txt" > $O/ab_table.txt
# call 2: ab_table_memset.txt (m0: the counter's memset, no tile drawn)
OUT=$OUT2 bash bench/tools/ab_rounds.sh -r 3 m "--shapes 151936x4096,128256x8192,262144x3072 --rows 1,64,96 --requests 16 --rounds 2 --reps 10" \
  base=$B@$E=0 m0=$B@$E=1,FLASHSPEC_DYN_TILES_ROUNDS=0 d1=$B@$E=1,FLASHSPEC_DYN_TILES_ROUNDS=1
python3 bench/tools/bench_ab_table.py --methods fs_sample,fs_draft_argmax,fs_verify \
  base="$OUT2/m_base_*.txt" m0="$OUT2/m_m0_*.txt" d1="$OUT2/m_d1_*.txt" > $O/ab_table_memset.txt
tar czf $OUT/out.tgz -C $O .
