#!/usr/bin/env bash
# The device calls that made this folder, from the repository root with
# carry ["carry-bin", ".deps"] (builds packed off the device by
# bench/tools/carry_pack.sh /tmp/b-full).  Each began:
set -u
T0=$(date +%s); O=/tmp/o; mkdir -p $O; el() { echo "$1 $(( $(date +%s) - T0 )) s" >> $O/log.txt; }
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
B=/tmp/b-full
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit,memory.total --format=csv > $O/gpu.txt
# ---- call 1 (ef66af1, kind nvidia-h200) and call 4 (455144a, kind
# nvidia-h200-x2: first the tensor-parallel tests on both GPUs, then the
# sweeps on GPU 0)
if [ "$(nvidia-smi -L | wc -l)" -ge 2 ]; then
  export NCCL_NVLS_ENABLE=0
  (cd $B && timeout 240 ctest -R '^test_gpu_tp' --output-on-failure) > $O/tp_tests.txt 2>&1; el "tp rc=$?"
  export CUDA_VISIBLE_DEVICES=0
fi
timeout 360 $B/bench/flashspec_bench --json $O/bench.json > $O/bench.txt 2>&1; el "sweep rc=$?"
timeout 150 $B/bench/tree_bench --shapes 151936x4096,128256x8192 --requests 1,4,16,64 --nodes 8,16,32,64 \
  --rounds 3 --reps 8 > $O/tree_bench.txt 2>&1; el "tree rc=$?"
tar czf $OUT/out.tgz -C $O .
# off the device: bench/tools/issue20_score.py bench.json > issue20_score.txt
# ---- call 6 (455144a's build, kind nvidia-h200): ncu_large/, one launch each
B=$B/bench/flashspec_bench
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__bytes_read.sum,lts__t_bytes.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
for c in 128256x8192:256 128256x8192:512 262144x3072:256 262144x3072:512 262144x3072:1024; do
  sh=${c%:*}; r=${c#*:}
  for op in sample argmax; do
    timeout 60 ncu --clock-control none -k regex:'fshr?_scan' -c 1 --csv --metrics $M $B --shapes $sh --rows $r \
      --ops $op --reps 1 --warmup 0 --gemm heuristic > $O/ncu_${sh}_${r}_${op}.csv 2>&1
  done
  timeout 60 ncu --clock-control none -k regex:'nvjet|gemm|cutlass' -c 1 --csv --metrics $M $B --shapes $sh --rows $r \
    --ops argmax --reps 1 --warmup 0 --gemm heuristic > $O/ncu_${sh}_${r}_cublas.csv 2>&1
done
# off the device: bench/tools/ncu_metrics_table.py ncu_*.csv.gz > ncu_table.txt
