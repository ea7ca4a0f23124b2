#!/usr/bin/env bash
# The commands of this folder (three device calls on one H200 each).  Builds
# carried by bench/tools/carry_pack.sh; the probe build of the benchmark
# (cmake ... -DCMAKE_CUDA_FLAGS=-DFSHR_PROBE_NO_EPI=1, target flashspec_bench)
# as /tmp/fsb/bench_noepi; the prefetch build with epi_prefetch.patch applied.
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
O=/tmp/o; mkdir -p $O/ab
B=/tmp/b-full/bench/flashspec_bench; BN=/tmp/fsb/bench_noepi
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)

# 1. probe_rows_kernel.txt: the rows kernel's streams alone
bench/w_stream_probe --shapes 151936x4096,128256x8192,262144x3072 --rounds 3 --reps 20 \
  --gemm-rows 128,160,192 tile=256,box=128,kb=1,st=4,h=0,pol=none,order=p \
  tile=256,box=128,kb=1,st=4,hr=128,pol=none,order=p tile=256,box=128,kb=1,st=4,hr=128,pol=none \
  tile=128,kb=1,st=5,hr=192,pol=none tile=128,kb=1,st=5,h=0,pol=none tile=128,kb=1,st=6,hr=160,pol=none \
  > $O/probe_rows_kernel.txt

# 2. noepi/: one launch each, the rows kernel with and without its epilogue, cuBLAS's kernel
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__bytes_read.sum,lts__t_bytes.sum,l1tex__m_xbar2l1tex_read_bytes.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,smsp__cycles_active.avg
for r in 128 256; do
  for op in sample argmax; do
    $NCU --clock-control none -k regex:'fshr_scan' -c 1 --csv --metrics $M $B --shapes 151936x4096 --rows $r --ops $op --reps 1 --warmup 0 --gemm heuristic > $O/ncu_rows${r}_${op}.csv
    $NCU --clock-control none -k regex:'fshr_scan' -c 1 --csv --metrics $M $BN --shapes 151936x4096 --rows $r --ops $op --reps 1 --warmup 0 --gemm heuristic > $O/ncu_rows${r}_${op}_noepi.csv
  done
  $NCU --clock-control none -k regex:'nvjet|gemm|cutlass' -c 1 --csv --metrics $M $B --shapes 151936x4096 --rows $r --ops argmax --reps 1 --warmup 0 --gemm heuristic > $O/ncu_rows${r}_cublas.csv
done
$NCU --clock-control none -k regex:'fshr_scan' -c 1 --section SourceCounters --section WarpStateStats -f -o /tmp/s128 $B --shapes 151936x4096 --rows 128 --ops sample --reps 1 --warmup 0 --gemm heuristic
$NCU -i /tmp/s128.ncu-rep --page source --csv --print-source sass > $O/sass_rows128_sample.csv
OUT=$O/ab bash bench/tools/ab_rounds.sh -r 2 noepi \
  "--shapes 151936x4096,128256x8192 --rows 128,192,256 --requests 32 --ops sample,argmax --rounds 2 --reps 10" \
  base=$B noepi=$BN

# 3. ab_pf_table.txt: the prefetch build, one binary under three settings
OUT=$O/ab bash bench/tools/ab_rounds.sh -r 2 pf \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 100,128 --requests 20,25 --rounds 2 --reps 10" \
  base=$B pf4=$B@FLASHSPEC_HOPPER_EPI_PREFETCH=4 pf8=$B@FLASHSPEC_HOPPER_EPI_PREFETCH=8
(cd /tmp/b-full && FLASHSPEC_HOPPER_EPI_PREFETCH=8 ctest -R "test_gpu_agree$|test_gpu_stat$" -j2 > $O/ctest_pf8.txt 2>&1)
