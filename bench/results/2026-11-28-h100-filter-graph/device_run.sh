#!/bin/bash
# Device call: test_gpu_graph with its filtered cases, and the mutant whose
# filtered merge launcher synchronises its stream (breaks capture).
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/test_gpu_graph.txt
timeout 60 /tmp/fsb/test_gpu_graph >> $OUT/test_gpu_graph.txt 2>&1; echo "test_gpu_graph rc=$?" | tee -a $OUT/test_gpu_graph.txt
grep -E 'captured|PASSED|FAILED|ERROR' $OUT/test_gpu_graph.txt
m=mutant_merge_launch_syncs
timeout 60 /tmp/fsb/test_gpu_graph_$m > $OUT/$m.txt 2>&1; echo "$m rc=$? (nonzero = caught)" | tee -a $OUT/$m.txt
grep -E 'captured|PASSED|FAILED|ERROR|error' $OUT/$m.txt | head -5
