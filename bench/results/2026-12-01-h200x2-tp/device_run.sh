#!/usr/bin/env bash
# The device call that made this folder (kind nvidia-h200-x2), from the
# repository root with carry ["carry-bin", ".deps"]: carry-bin/tp.txz holds
# test_gpu_tp, test_gpu_tp_tree and tp_bench built off the device
# (tar cf - -C BUILD tests/test_gpu_tp tests/test_gpu_tp_tree bench/tp_bench
#  | xz > carry-bin/tp.txz); bench/tools/run_tp.sh runs them.
set -u
mkdir -p /tmp/tpb /tmp/o && tar xJf carry-bin/tp.txz -C /tmp/tpb
mkdir -p /tmp/tpb/bin && cp /tmp/tpb/tests/test_gpu_tp /tmp/tpb/tests/test_gpu_tp_tree /tmp/tpb/bench/tp_bench /tmp/tpb/bin/
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
OUT=/tmp/o FS_TP_BIN=/tmp/tpb/bin timeout 500 bash bench/tools/run_tp.sh --rows 1,64,256,1024 --reps 10
echo "rc=$?" >> /tmp/o/tp_test.log
tar czf $OUT/out.tgz -C /tmp/o .
