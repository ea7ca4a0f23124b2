#!/usr/bin/env bash
# The device call that made this folder (one H200), from the repository root
# with carry ["carry-bin"]: carry-bin/fb.txz holds bench/filter_bench built
# off the device, and for call 2 bench/filter_bench_mut, the same with
# mutant_topk_plus_one.patch applied (`bash run.sh N` ran stage N).
set -u
mkdir -p /tmp/fb /tmp/o && tar xJf carry-bin/fb.txz -C /tmp/fb
F=/tmp/fb/bench/filter_bench
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > /tmp/o/gpu.txt
case "${1:-1}" in
1)
# the sort-based pipeline under memcheck on a small head
timeout 200 /usr/local/cuda/bin/compute-sanitizer --tool memcheck --error-exitcode 1 \
  $F --shapes 30011x64 --rows 1,16,64 --rounds 1 --reps 1 --logits 1,0 > /tmp/o/memcheck_small.txt 2>&1
echo "rc=$?" >> /tmp/o/memcheck_small.txt
# the table: peaked logits on both heads, then the other logit shapes
timeout 200 $F --rows 1,16,48,64 --shapes 151936x4096,128256x8192 --logits 1 --rounds 3 --reps 10 > /tmp/o/filter_bench_peaked.txt 2>&1
echo "rc=$?" >> /tmp/o/filter_bench_peaked.txt
timeout 150 $F --rows 1,64 --shapes 151936x4096 --logits 2,0 --rounds 2 --reps 5 > /tmp/o/filter_bench_moderate_flat.txt 2>&1
echo "rc=$?" >> /tmp/o/filter_bench_moderate_flat.txt
;;
2)
# the check with the pipeline's own rule (position cuts) beside DESIGN's,
# on every logit shape, and the mutant (top-k one too many) against it
for f in filter_bench filter_bench_mut; do
  timeout 150 /tmp/fb/bench/$f --rows 1,16,64 --shapes 151936x4096,30011x64 --logits 1,2,0 --rounds 1 --reps 3 > /tmp/o/check_$f.txt 2>&1
  echo "rc=$?" >> /tmp/o/check_$f.txt
done
;;
3)
# the pipeline's two passes along the sorted row as shared helpers
# (chunk_scan, prefix_mass): the check again on every logit shape
timeout 150 /tmp/fb/bench/filter_bench --rows 1,16,64 --shapes 151936x4096,30011x64 --logits 1,2,0 --rounds 1 --reps 3 > /tmp/o/check_helpers.txt 2>&1
echo "rc=$?" >> /tmp/o/check_helpers.txt
;;
esac
tar czf $OUT/out.tgz -C /tmp/o .
