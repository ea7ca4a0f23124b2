#!/bin/bash
# The single launch's end priced (kernels/probe_tail.cuh): flashspec_bench
# linked against a library whose scan_hopper.cu was built with
# -DFS_PROBE_TAIL=1 (/tmp/fsb/flashspec_bench_probe, carried in
# carry-bin/extra.txz; bench/tools/carry_pack.sh for the rest), at 1 and 4
# rows on three shapes.  The probe's printf slows every call: read only the
# stamps.
set -u
bash bench/tools/carry_unpack.sh >/dev/null
ROOT=$PWD; O=/tmp/o; mkdir -p $O
nvidia-smi --query-gpu=name,power.limit --format=csv > $O/gpu.txt
for S in 151936x4096 128256x8192 262144x3072; do
  timeout 60 /tmp/fsb/flashspec_bench_probe --shapes $S --rows 1,4 --requests 1 \
    --ops sample,argmax,verify --rounds 2 --reps 10 > $O/probe_$S.txt 2>&1
done
python3 $ROOT/bench/tools/tail_probe_table.py $O/probe_*.txt > $O/tail_probe_table.txt
gzip $O/probe_*.txt
