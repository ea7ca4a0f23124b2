#!/usr/bin/env bash
# The commands of this folder (one device call on one H200; w_stream_probe
# built off the device and carried in carry-bin/).
set -u
O=/tmp/o; mkdir -p $O
P=carry-bin/w_stream_probe
CFGS="tile=128,kb=2,st=6,h=0,pol=none tile=128,kb=2,st=4,hr=48,pol=none tile=256,box=128,kb=1,st=4,hr=48,pol=none,order=p tile=128,kb=2,st=4,hr=64,pol=none tile=256,box=128,kb=1,st=4,hr=64,pol=none,order=p tile=128,kb=1,st=7,hr=80,pol=none tile=256,box=128,kb=1,st=3,hr=80,pol=none,order=p tile=128,kb=1,st=6,hr=96,pol=none tile=256,box=128,kb=1,st=2,hr=96,pol=none,order=p"
$P --shapes 151936x4096,128256x8192,262144x3072 --rounds 3 --reps 20 --gemm-rows 1,16,64,80 $CFGS > $O/probe_h_rows.txt 2>&1
# the same configurations in reverse order
REV=$(echo $CFGS | tr ' ' '\n' | tac | tr '\n' ' ')
$P --shapes 151936x4096,128256x8192 --rounds 3 --reps 20 --gemm-rows 64,80 $REV > $O/probe_h_rows_rev.txt 2>&1
