#!/usr/bin/env bash
# Session 5, run 3: where the ~35 us between the rows kernel's ncu duration
# and the op's event time at 128 rows go -- the GPU timeline of a few timed
# calls (nsys), fs_draft_argmax vs cuBLAS, 128 and 256 rows.
source "$(dirname "$0")/common.sh"
build_bench build-a
B=build-a/bench/flashspec_bench
NSYS=$(command -v nsys || ls /usr/local/cuda/bin/nsys /opt/nvidia/nsight-systems/*/bin/nsys 2>/dev/null | head -1)
echo "nsys: $NSYS"
for r in 128 256; do
  $NSYS profile -o /tmp/tl$r --force-overwrite true --trace=cuda $B --shapes 151936x4096 --rows $r --ops argmax \
    --reps 6 --warmup 1 --gemm heuristic > $OUT/tl_bench_$r.txt 2>&1
  $NSYS stats --report cuda_gpu_trace --format csv -o $OUT/tl$r /tmp/tl$r.nsys-rep > /dev/null 2>&1
  ls $OUT
done
