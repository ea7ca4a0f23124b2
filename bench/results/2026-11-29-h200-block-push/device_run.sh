#!/usr/bin/env bash
# The commands of this folder, in the order they ran (four device calls on
# one H200 each; builds carried by bench/tools/carry_pack.sh, the build
# before the change kept as /tmp/fsb/{bench,tree,filter}_old).
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
O=/tmp/o; mkdir -p $O/ab
B=/tmp/b-full/bench/flashspec_bench
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)

# 1. ncu_64_rows/: the tile kernel at 32 / 64 rows, sample and draft argmax,
#    the build before the change and (ncu_new_*) the one after
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__bytes_read.sum,lts__t_bytes.sum,l1tex__m_xbar2l1tex_read_bytes.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__cycles_active.avg,sm__warps_active.avg.pct_of_peak_sustained_active
for sh in 262144x3072 151936x4096; do for op in sample argmax; do for r in 32 64; do
  $NCU --clock-control none -k regex:'fsh_scan' -c 1 --csv --metrics $M $B --shapes $sh --rows $r \
    --ops $op --reps 1 --warmup 0 --gemm heuristic > $O/ncu_${sh}_${op}_${r}.csv 2>&1
done; done; done
for op in sample argmax; do
  n=sass_64_$op
  $NCU --clock-control none -k regex:'fsh_scan' -c 1 --section SourceCounters --section WarpStateStats \
    -f -o /tmp/$n $B --shapes 262144x3072 --rows 64 --ops $op --reps 1 --warmup 0 --gemm heuristic
  $NCU -i /tmp/$n.ncu-rep --page source --csv --print-source sass > $O/$n.csv
done
$B --shapes 262144x3072,151936x4096 --rows 16,32,48,64,80 --ops sample,argmax > $O/bench.txt

# 2. before (old) and after (new), alternated; filter_bench and tree_bench
#    likewise (ab_local_memory_table.txt: the same A/B on the first build,
#    whose pick read the scores at a run-time index)
OUT=$O/ab bash bench/tools/ab_rounds.sh -r 3 small \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 1,16,32,64 --requests 1,4,16 --rounds 2 --reps 10" \
  old=/tmp/fsb/bench_old new=$B
OUT=$O/ab bash bench/tools/ab_rounds.sh -r 2 large \
  "--shapes 151936x4096,128256x8192 --rows 256,1024 --requests 64 --rounds 2 --reps 10" \
  old=/tmp/fsb/bench_old new=$B
for r in 1 2; do for v in old new; do
  bin=/tmp/b-full/bench/filter_bench; [ $v = old ] && bin=/tmp/fsb/filter_old
  $bin --shapes 151936x4096,128256x8192 --rows 1,16,64 --logits 1 --rounds 2 --reps 10 > $O/filter_${v}_$r.txt
  bin=/tmp/b-full/bench/tree_bench; [ $v = old ] && bin=/tmp/fsb/tree_old
  $bin --requests 1,4,16 --nodes 8,16,32 --rounds 2 --reps 10 > $O/tree_${v}_$r.txt
done; done
(cd /tmp/b-full && ctest -L gpu -j4 --timeout 320 > $O/ctest_gpu.txt 2>&1)

# 3. memcheck of the agreement and filter tests
cd /tmp/b-full/tests
FS_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck --error-exitcode 9 ./test_gpu_agree > $O/san_memcheck_test_gpu_agree.txt 2>&1
FS_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck --error-exitcode 9 ./test_gpu_filter > $O/san_memcheck_test_gpu_filter.txt 2>&1
# tables off the device:
#   bench/tools/bench_ab_table.py old='ab/small_old_[0-9].txt' new='ab/small_new_[0-9].txt'
#   bench/tools/filter_ab_table.py old='filter_old_[0-9].txt' new='filter_new_[0-9].txt'
