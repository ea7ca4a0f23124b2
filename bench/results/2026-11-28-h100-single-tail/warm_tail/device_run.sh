#!/bin/bash
# The single launch's tail warmed by CTA 0's producer warp (warm_tail.patch
# on b7722db: /tmp/b-full and /tmp/fsb/flashspec_bench_new) against
# b7722db's kernels (/tmp/fsb/flashspec_bench_base); builds made off the
# device and carried (bench/tools/carry_pack.sh, carry-bin/extra.txz).
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
ROOT=$PWD; O=/tmp/o; mkdir -p $O
(cd /tmp/b-full && timeout 100 ctest -R '^test_gpu_(single|graph|bad_input|stat)$' --output-on-failure) > $O/ctest_gpu.txt 2>&1
for tool in memcheck initcheck; do
  FS_GPU_TEST_SMALL=1 timeout 60 /usr/local/cuda/bin/compute-sanitizer --tool $tool \
    --error-exitcode 1 /tmp/b-full/tests/test_gpu_single > $O/san_${tool}_test_gpu_single.txt 2>&1
done
OUT=$O bash bench/tools/ab_rounds.sh -r 3 tail "--shapes 151936x4096,128256x8192,262144x3072 --rows 1,2,4 --requests 1 --ops sample,argmax,verify --reps 20" \
  base=/tmp/fsb/flashspec_bench_base new=/tmp/fsb/flashspec_bench_new
python3 $ROOT/bench/tools/bench_ab_table.py base="$O/tail_base_*.txt" new="$O/tail_new_*.txt" > $O/ab_table.txt
(cd /tmp/b-full && timeout 120 ctest -R '^test_gpu_agree$' --output-on-failure) > $O/ctest_agree.txt 2>&1
