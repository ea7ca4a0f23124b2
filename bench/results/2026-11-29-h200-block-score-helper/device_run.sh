#!/usr/bin/env bash
# One device call on one H200.  Builds made off the device and carried by
# bench/tools/carry_pack.sh: HEAD in /tmp/b-full, the patched build's
# benchmarks as /tmp/fsb/{bench,filter,tree}_helper (carry-bin/extra.txz).
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
O=/tmp/o; mkdir -p $O/ab
B=/tmp/b-full/bench F=/tmp/fsb
OUT=$O/ab bash bench/tools/ab_rounds.sh -r 3 small \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 1,16,32,64 --requests 1,4,16 --rounds 2 --reps 10" \
  old=$B/flashspec_bench new=$F/bench_helper
for r in 1 2; do for v in old new; do
  bin=$B/filter_bench; [ $v = new ] && bin=$F/filter_helper
  $bin --shapes 151936x4096 --rows 1,16,64 --logits 1 --rounds 2 --reps 10 > $O/ab/filter_${v}_$r.txt
  bin=$B/tree_bench; [ $v = new ] && bin=$F/tree_helper
  $bin --requests 1,4,16 --nodes 8,16,32 --rounds 2 --reps 10 > $O/ab/tree_${v}_$r.txt
done; done
# tables off the device:
#   bench/tools/bench_ab_table.py old='ab/small_old_[0-9].txt' new='ab/small_new_[0-9].txt'
#   bench/tools/filter_ab_table.py old='ab/filter_old_[0-9].txt' new='ab/filter_new_[0-9].txt'
