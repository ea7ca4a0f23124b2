#!/usr/bin/env bash
# The commands of this folder (five device calls on one H200 each).  Builds
# carried by bench/tools/carry_pack.sh; e9d9d76's benchmarks kept as
# /tmp/fsb/{bench,tree}_old for calls 3 and 5 (carry-bin/extra.txz), with
# rb_probe (the rule's choices, kernels/rows_plan.h, linked to the static
# library) for call 4.
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
O=/tmp/o; mkdir -p $O/ab
B=/tmp/b-full/bench F=/tmp/fsb
# 1. (build e9d9d76)
OUT=$O/ab bash bench/tools/ab_rounds.sh -r 2 rb \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 144,192,264,288,320,384 --requests 32,64 --rounds 2 --reps 10" \
  auto=$B/flashspec_bench rb128=$B/flashspec_bench@FLASHSPEC_HOPPER_ROW_BLOCK=128 \
  rb192=$B/flashspec_bench@FLASHSPEC_HOPPER_ROW_BLOCK=192 \
  rb128j1=$B/flashspec_bench@FLASHSPEC_HOPPER_ROW_BLOCK=128,FLASHSPEC_HOPPER_ROWS_JOBS=1
# 2. (build e9d9d76)
OUT=$O/ab bash bench/tools/ab_rounds.sh -r 3 tie \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 288,320,384,544,1100 --requests 64,220 --rounds 2 --reps 10" \
  auto=$B/flashspec_bench rb128=$B/flashspec_bench@FLASHSPEC_HOPPER_ROW_BLOCK=128
for r in 1 2 3; do
  $B/tree_bench --requests 16,20 --nodes 16 --rounds 2 --reps 10 > $O/ab/tree_auto_$r.txt
  FLASHSPEC_HOPPER_ROW_BLOCK=128 $B/tree_bench --requests 16,20 --nodes 16 --rounds 2 --reps 10 > $O/ab/tree_rb128_$r.txt
done
# 3. (every tie to 128) and 5. (the kept rule; tags bal / treebal): the new
#    build in /tmp/b-full against e9d9d76's
OUT=$O/ab bash bench/tools/ab_rounds.sh -r 3 tie \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 264,320,384,1100,1152 --requests 64,220 --rounds 2 --reps 10" \
  old=$F/bench_old new=$B/flashspec_bench
for r in 1 2; do for v in old new; do
  bin=$B/tree_bench; [ $v = old ] && bin=$F/tree_old
  $bin --shapes 151936x4096,128256x8192,262144x3072 --requests 16,20,64 --nodes 16 --rounds 2 --reps 10 > $O/ab/tree_${v}_$r.txt
done; done
(cd /tmp/b-full && ctest -L gpu -j4 --timeout 400 > $O/ctest_gpu.txt 2>&1)
# 4.
$F/rb_probe > $O/rb_probe.txt
# 6. (the kept build)
OUT=$O/ab bash bench/tools/ab_rounds.sh -r 2 knobs \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 512,640,768,896,1024 --requests 128,200 --ops sample,argmax,verify --rounds 2 --reps 10" \
  auto=$B/flashspec_bench jobs1=$B/flashspec_bench@FLASHSPEC_HOPPER_ROWS_JOBS=1 \
  rb192=$B/flashspec_bench@FLASHSPEC_HOPPER_ROW_BLOCK=192 noodd=$B/flashspec_bench@FLASHSPEC_HOPPER_ODD_PAIRS=0
# tables off the device: bench/tools/bench_ab_table.py NAME='ab/TAG_NAME_[0-9].txt' ...
