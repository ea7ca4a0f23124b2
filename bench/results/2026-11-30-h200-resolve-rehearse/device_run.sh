#!/usr/bin/env bash
# The device call that made this folder (two H200s, device kind
# nvidia-h200-x2; `bash run.sh 1`), from the repository root with carry
# ["carry-bin", ".deps"]: carry-bin/all.txz packed by
# bench/tools/carry_pack.sh from the build in /tmp/b-full of 9ca60bd,
# carry-bin/extra.txz holding probe/filter_bench and rehearse/filter_bench:
# that build with kernels/filter_fallback.cu from rehearse.patch's tree
# compiled with -DFS_PROBE_RESOLVE=1 -DFS_PROBE_RESOLVE_BLOCK=100000, and
# -DFS_PROBE_REHEARSE=0 / 1.  Tables:
#   bench/tools/arrival_probe_table.py runs/arrive_{probe,rehearse}_rows*.txt
set -u
source bench/tools/device_env.sh
case "${1:-1}" in
1)
# every GPU test on 9ca60bd, the tensor-parallel ones on two GPUs
(cd $B && timeout 300 ctest -L gpu -j4 --output-on-failure > $O/ctest_gpu_x2.txt 2>&1; echo "rc=$?" >> $O/ctest_gpu_x2.txt)
el tests
# the filtered merge kernel's steps with and without the row block's own
# run of the three warm-up parts first (FS_PROBE_REHEARSE), alternated
mkdir -p $O/runs
for round in 1 2; do for v in probe rehearse; do for r in 1 16 64; do
  CUDA_VISIBLE_DEVICES=0 timeout 60 /tmp/fsb/$v/filter_bench --rows $r --shapes 151936x4096 --logits 1 --rounds 1 --reps 5 \
    > $O/runs/arrive_${v}_rows${r}_$round.txt 2>&1
done; done; done
el arrive
;;
esac
tar czf $OUT/out.tgz -C $O .
