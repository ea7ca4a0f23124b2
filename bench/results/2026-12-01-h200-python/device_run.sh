#!/usr/bin/env bash
# The device call that made this folder (one H200), from the repository
# root, nothing carried: the image's torch, pytest, scipy and
# scikit-build-core build the CUDA wheel (sm_90a) and run python/tests,
# the example and the Python benchmark (python/bench/gpu_check.sh, the C
# benchmark skipped).
set -u
D=$OUT
mkdir -p /tmp/o
OUT=/tmp/o SKIP_C_BENCH=1 ARCH=90a-real timeout 560 bash python/bench/gpu_check.sh > /tmp/o/gpu_check.txt 2>&1
echo "rc=$?" >> /tmp/o/gpu_check.txt
tar czf "$D/out.tgz" -C /tmp/o .
