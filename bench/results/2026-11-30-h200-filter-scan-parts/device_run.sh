#!/usr/bin/env bash
# The device call that made this folder (one H200; `bash run.sh 1`), from
# the repository root with carry ["carry-bin", ".deps"]: carry-bin/all.txz
# packed by bench/tools/carry_pack.sh from the build in /tmp/b-full of
# the commit that adds FSH_PROBE_NO_LISTS, carry-bin/extra.txz holding
# nolists/filter_bench: that build with kernels/scan_hopper.cu compiled
# with -DFSH_PROBE_NO_LISTS=1.  Tables: bench/tools/kernel_trace_table.py
# over trace/*.txt.gz.
set -u
source bench/tools/device_env.sh
case "${1:-1}" in
1)
# where a filtered scan's time goes at 1-64 rows: the filtered tile kernel
# against the unfiltered one with and without its epilogue warps
# (FLASHSPEC_TILE_EPI_WG=0), and without the lists' pushes (the probe)
ARGS="--shapes 151936x4096,128256x8192 --rows 1,16,48,64 --logits 1 --rounds 1 --reps 10"
for r in 1 2 3; do
  ktrace head_$r 150 $B/bench/filter_bench $ARGS
  ktrace noew_$r 150 env FLASHSPEC_TILE_EPI_WG=0 $B/bench/filter_bench $ARGS
  ktrace nolists_$r 150 /tmp/fsb/nolists/filter_bench $ARGS
done
el trace
;;
2)
# the unfiltered op through the prep kernel (FLASHSPEC_SINGLE_LAUNCH=0):
# its scan waits for the descriptors as the filtered one does
ARGS="--shapes 151936x4096,128256x8192 --rows 1,16,48,64 --logits 1 --rounds 1 --reps 10"
for r in 1 2 3; do
  ktrace head2_$r 150 $B/bench/filter_bench $ARGS
  ktrace prep_$r 150 env FLASHSPEC_SINGLE_LAUNCH=0 $B/bench/filter_bench $ARGS
done
el trace2
;;
esac
tar czf $OUT/out.tgz -C $O .
