#!/usr/bin/env bash
# The device calls that made this folder (one H200 each; `bash run.sh N`
# ran stage N), from the repository root with carry ["carry-bin", ".deps"]:
# carry-bin/all.txz packed by bench/tools/carry_pack.sh from the build in
# /tmp/b-full of the stage's code (with bench/libfs_kernel_trace.so).
set -u
source bench/tools/device_env.sh
case "${1:-1}" in
1)
# the GPU subset with trees, the timeout long enough for the rows192 case
(cd $B && timeout 340 ctest -L gpu -j4 -R "agree|stat|single|bad_input|graph|tree" --output-on-failure > $O/ctest_gpu.txt 2>&1; echo "rc=$?" >> $O/ctest_gpu.txt)
el tests
# every kernel of the benchmark's calls as they ran (CUPTI activity records)
for sh in 151936x4096 262144x3072; do
  FS_TRACE_OUT=$O/trace_$sh.txt CUDA_INJECTION64_PATH=$B/bench/libfs_kernel_trace.so \
    timeout 120 $B/bench/flashspec_bench --shapes $sh --rows 256,512,1024 --requests 64,128,200 \
    --ops sample,argmax,verify > $O/bench_$sh.txt 2>&1
  el "trace $sh rc=$?"
done
gzip -f $O/trace_*.txt
;;
2)
# the tile kernel's refactored dispatch (TileBns / PairBns): the tests that
# run its pairs and single CTAs
(cd $B && timeout 200 ctest -L gpu -j4 -R "agree$|agree_pairs|tree_pairs|hopper_policy" --output-on-failure > $O/ctest_gpu2.txt 2>&1; echo "rc=$?" >> $O/ctest_gpu2.txt)
el tests
# 1-4 rows on this chip: the ops against cuBLAS and the floor, and the
# single launch against prep + scan + merge (the bare W stream, which this
# call's probe refused for a bad setting, ran in stage 3)
timeout 60 $B/bench/flashspec_bench --shapes 151936x4096,128256x8192 --rows 1,2,4 --requests 1 > $O/small_rows.txt 2>&1
el small
OUT=$O/ab timeout 120 bash bench/tools/ab_rounds.sh -r 3 sl \
  "--shapes 151936x4096,128256x8192 --rows 1,4 --requests 1 --ops sample,argmax,verify --rounds 1 --reps 20" \
  single=$B/bench/flashspec_bench three=$B/bench/flashspec_bench@FLASHSPEC_SINGLE_LAUNCH=0 > $O/ab_sl_summary.txt 2>&1
el ab
;;
3)
# five 128-row blocks (577-640 rows): where 608 and 640 rows differ
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__bytes_read.sum,lts__t_bytes.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
mkdir -p $O/ncu
for r in 512 608 640; do
  for op in sample argmax; do
    timeout 60 $NCU --clock-control none -k regex:'fshr?_scan' -c 1 --csv --metrics $M $B/bench/flashspec_bench --shapes 151936x4096 --rows $r \
      --ops $op --reps 1 --warmup 0 --gemm heuristic > $O/ncu/ncu_151936x4096_${r}_${op}.csv 2>&1
  done
  timeout 60 $NCU --clock-control none -k regex:'nvjet|gemm|cutlass' -c 1 --csv --metrics $M $B/bench/flashspec_bench --shapes 151936x4096 --rows $r \
    --ops argmax --reps 1 --warmup 0 --gemm heuristic > $O/ncu/ncu_151936x4096_${r}_cublas.csv 2>&1
  el "ncu $r"
done
timeout 120 $B/bench/flashspec_bench --shapes 151936x4096,262144x3072 --rows 512,576,608,640 --requests 116,122,128 > $O/bench_576_640.txt 2>&1
el bench
# the bare W stream (carry-bin/extra.txz: w_stream_probe)
CF=("tile=128,pol=none" "tile=128,pol=none,order=c" "tile=128,box=64,pol=none,order=p" "tile=128,pol=none,cl=2"
    "tile=128,pol=none,kb=1,st=12" "tile=128,pol=none,h=0" "tile=64,box=64,kb=1,st=16,pol=none"
    "tile=256,box=128,kb=1,st=6,pol=none" "tile=128,pol=none,st=8")
timeout 120 /tmp/fsb/w_stream_probe --shapes 151936x4096,128256x8192 --rounds 3 --reps 20 "${CF[@]}" > $O/probe.txt 2>&1
el "probe rc=$?"
;;
4)
# the SM clock and board power each method ran at (flashspec_bench --power),
# and the same run without the sampler (does it move the calls?)
for r in 1 2; do
  timeout 100 $B/bench/flashspec_bench --power --shapes 151936x4096,128256x8192 --rows 256,512,1024 \
    --requests 64,128,200 --json $O/power_$r.json > $O/power_$r.txt 2>&1
  el "power $r rc=$?"
done
timeout 100 $B/bench/flashspec_bench --shapes 151936x4096,128256x8192 --rows 256,512,1024 \
  --requests 64,128,200 > $O/nopower.txt 2>&1
el "nopower rc=$?"
;;
5)
# what the sustained calls' extra cycles are: the dirty L2 (flush clean
# against dirty, alternated) and a lone launch after the dirty flush
# (ncu --cache-control none) against ncu's own clean flush
for r in 1 2; do for f in dirty clean; do
  timeout 100 $B/bench/flashspec_bench --power --flush $f --shapes 151936x4096,128256x8192 --rows 512,1024 \
    --ops sample,argmax > $O/flush_${f}_$r.txt 2>&1
  el "flush $f $r rc=$?"
done; done
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
mkdir -p $O/ncu_dirty
for cc in none all; do
  for op in sample argmax; do
    timeout 60 $NCU --cache-control $cc --clock-control none -k regex:'fshr?_scan' -s 2 -c 1 --csv --metrics $M $B/bench/flashspec_bench --shapes 151936x4096 --rows 1024 \
      --ops $op --reps 2 --warmup 1 --rounds 1 --gemm heuristic > $O/ncu_dirty/ncu_${cc}_${op}.csv 2>&1
  done
  timeout 60 $NCU --cache-control $cc --clock-control none -k regex:'nvjet|gemm|cutlass' -s 2 -c 1 --csv --metrics $M $B/bench/flashspec_bench --shapes 151936x4096 --rows 1024 \
    --ops argmax --reps 2 --warmup 1 --rounds 1 --gemm heuristic > $O/ncu_dirty/ncu_${cc}_cublas.csv 2>&1
  el "ncu $cc"
done
;;
6)
# every GPU test on the final build, and issue 21's tree sweep
(cd $B && timeout 420 ctest -L gpu -j4 --output-on-failure > $O/ctest_gpu_all.txt 2>&1; echo "rc=$?" >> $O/ctest_gpu_all.txt)
el tests
timeout 100 $B/bench/tree_bench --shapes 151936x4096,128256x8192 --requests 1,4,16,64 --nodes 8,16,32,64 \
  --rounds 3 --reps 8 > $O/tree_bench.txt 2>&1; el "tree rc=$?"
;;
7)
# the issue-20 sweep with each method's clock and power
timeout 560 $B/bench/flashspec_bench --power --json $O/bench.json > $O/bench.txt 2>&1; el "sweep rc=$?"
;;
8)
# how much of sampling's epilogue the exponentials are: a build whose rows
# kernel sums max(x, 0) for exp (-DFSHR_PROBE_NO_EX2=1, wrong draws;
# carry-bin/extra.txz: noex2/flashspec_bench) against the real one, under
# ncu (one launch) and in alternated rounds
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
mkdir -p $O/ncu_noex2
for c in 151936x4096:512 151936x4096:1024 262144x3072:512 128256x8192:512; do
  sh=${c%:*}; r=${c#*:}
  for v in real:$B/bench/flashspec_bench noex2:/tmp/fsb/noex2/flashspec_bench; do
    for op in sample argmax; do
      [ ${v%%:*} = noex2 ] && [ $op = argmax ] && continue
      timeout 60 $NCU --clock-control none -k regex:'fshr_scan' -c 1 --csv --metrics $M ${v#*:} --shapes $sh --rows $r \
        --ops $op --reps 1 --warmup 0 --gemm heuristic > $O/ncu_noex2/ncu_${sh}_${r}_${op}_${v%%:*}.csv 2>&1
    done
  done
  el "ncu $c"
done
OUT=$O/ab timeout 200 bash bench/tools/ab_rounds.sh -r 3 ex2 \
  "--shapes 151936x4096,262144x3072,128256x8192 --rows 256,512,1024 --ops sample,argmax --rounds 1 --reps 10" \
  real=$B/bench/flashspec_bench noex2=/tmp/fsb/noex2/flashspec_bench > $O/ab_ex2_summary.txt 2>&1
el ab
;;
9)
# 641-768 rows, where six 128-row blocks and four 192-row blocks pad as
# many rows and both pair every block (the rule: 128, measured on an H100)
OUT=$O/ab timeout 300 bash bench/tools/ab_rounds.sh -r 3 rb \
  "--shapes 151936x4096,262144x3072,128256x8192 --rows 704,768 --requests 141,153 --ops sample,argmax,verify --rounds 1 --reps 10" \
  auto=$B/bench/flashspec_bench rb192=$B/bench/flashspec_bench@FLASHSPEC_HOPPER_ROW_BLOCK=192 > $O/ab_rb_summary.txt 2>&1
el ab
;;
esac
tar czf $OUT/out.tgz -C $O .
