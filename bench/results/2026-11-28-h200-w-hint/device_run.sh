#!/usr/bin/env bash
# The commands of this folder, in the order they ran (five device calls on
# one H200 each; the build carried by bench/tools/carry_pack.sh, the build
# before the change kept as /tmp/fsb/{bench,tree,filter}_old).
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
O=/tmp/o; mkdir -p $O/ab
B=/tmp/b-full/bench

# 1. probe_hints.txt (and _reversed: the same list in reverse order)
CF=("tile=128" "tile=128,h=0" "tile=128,cl=2" "tile=128,order=c" "tile=128,pol=none"
    "tile=128,pol=en" "tile=128,promo=256" "tile=128,promo=128" "tile=128,kb=1,st=12"
    "tile=128,kb=4,st=3" "tile=128,st=3" "tile=128,st=4" "tile=128,cw=1" "tile=128,cps=2"
    "tile=64,box=64,kb=1,st=16" "tile=64,box=64,kb=1,st=16,cl=2" "tile=64,box=64,kb=2,st=12"
    "tile=256,box=128,kb=1,st=6" "tile=128,box=64")
$B/w_stream_probe --shapes 151936x4096,128256x8192 --rounds 3 --reps 20 "${CF[@]}" > $O/probe_hints.txt

# 2. probe_nohint.txt
CF=("tile=128" "tile=128,pol=none" "tile=128,pol=none,promo=256" "tile=128,pol=none,promo=128"
    "tile=128,pol=none,h=0" "tile=128,pol=none,kb=1,st=12" "tile=128,pol=none,st=4"
    "tile=128,pol=none,cl=2" "tile=128,pol=none,order=c" "tile=64,box=64,kb=1,st=16,pol=none"
    "tile=128,pol=none,cps=2" "tile=256,box=128,kb=1,st=6,pol=none")
$B/w_stream_probe --shapes 151936x4096,128256x8192,262144x3072 --rounds 3 --reps 20 "${CF[@]}" > $O/probe_nohint.txt

# 3. the library before (evict_first: old) and after (no hint: new)
OUT=$O/ab bash bench/tools/ab_rounds.sh -r 2 small \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 1,16,64,96,128 --requests 1,4,16 --rounds 2 --reps 10" \
  old=/tmp/fsb/bench_old new=$B/flashspec_bench
OUT=$O/ab bash bench/tools/ab_rounds.sh -r 4 mid \
  "--shapes 151936x4096,128256x8192 --rows 132,144,192 --requests 32 --rounds 2 --reps 10" \
  old=/tmp/fsb/bench_old new=$B/flashspec_bench
for r in 1 2 3; do for v in old new; do
  bin=$B/tree_bench; [ $v = old ] && bin=/tmp/fsb/tree_old
  $bin --requests 1,4,16 --nodes 8,16,32 --rounds 2 --reps 10 > $O/tree_${v}_$r.txt
done; done
for r in 1 2; do for v in old new; do
  bin=$B/filter_bench; [ $v = old ] && bin=/tmp/fsb/filter_old
  $bin --shapes 151936x4096,128256x8192 --rows 1,16,64 --logits 1 --rounds 2 --reps 10 > $O/filter_${v}_$r.txt
done; done

# 4. the promoted stream (past 128 rows) without its hint, on the first
#    build (the rows kernel's 192-row and clustered kernels compiled the
#    unhinted load then)
OUT=$O/ab bash bench/tools/ab_rounds.sh -r 2 large \
  "--shapes 151936x4096,128256x8192 --rows 192,256,512 --requests 64 --rounds 2 --reps 10" \
  new=$B/flashspec_bench nohint=$B/flashspec_bench@FLASHSPEC_W_HINT=0

# 5. the H200's earlier rows kernel, asked again with the faster tile kernel
OUT=$O/ab bash bench/tools/ab_rounds.sh -r 3 early \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 64,72,80,88,96 --requests 13,16,19 --rounds 2 --reps 10" \
  auto=$B/flashspec_bench early0=$B/flashspec_bench@FLASHSPEC_HOPPER_ROWS_EARLY=0
for r in 1 2 3; do for v in auto early0; do
  e=""; [ $v = early0 ] && e="FLASHSPEC_HOPPER_ROWS_EARLY=0"
  env $e $B/tree_bench --shapes 151936x4096,128256x8192,262144x3072 --requests 1,2,4 \
    --nodes 16,20,32,40,64 --rounds 2 --reps 10 > $O/early_tree_${v}_$r.txt
done; done

# 7. also asked (not changed): the op tail at 5-8 rows, trees on the rows
#    kernel from 65 rows, sample at 64 rows with and without the single launch
OUT=$O/ab bash bench/tools/ab_rounds.sh -r 3 tail \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 4,5,8 --requests 1,2 --ops sample,verify --rounds 2 --reps 20" \
  def=$B/flashspec_bench tail10=$B/flashspec_bench@FLASHSPEC_TAIL_ROWS_MAX=10
for r in 1 2 3; do for v in def rows65; do
  e=""; [ $v = rows65 ] && e="FLASHSPEC_HOPPER_ROWS_MIN=65"
  env $e $B/tree_bench --shapes 151936x4096,128256x8192 --requests 1,2,4 --nodes 16,19,32,64 \
    --rounds 2 --reps 10 > $O/tree_${v}_$r.txt
done; done
OUT=$O/ab bash bench/tools/ab_rounds.sh -r 3 s64 \
  "--shapes 128256x8192,262144x3072 --rows 32,48,64 --ops sample,argmax --rounds 3 --reps 20" \
  def=$B/flashspec_bench single0=$B/flashspec_bench@FLASHSPEC_SINGLE_LAUNCH=0
FS_TRACE_OUT=$O/trace64.txt CUDA_INJECTION64_PATH=$B/libfs_kernel_trace.so \
  $B/flashspec_bench --shapes 128256x8192,262144x3072 --rows 32,64 --ops sample,argmax --rounds 3 --reps 20
#    (bench/tools/kernel_trace_table.py trace64.txt.gz > trace_32_64_rows_table.txt;
#    LD_LIBRARY_PATH needs /usr/local/cuda/extras/CUPTI/lib64)

# 8. ncu, 151936 x 4096 (the fused launches, then cuBLAS's: -k regex:'nvjet' -c 6)
for rows in 1 16 64; do
  ncu --clock-control none --csv -k regex:'fsh_scan' -c 4 \
    --section SpeedOfLight --metrics dram__bytes_read.sum,gpu__time_duration.sum \
    $B/flashspec_bench --shapes 151936x4096 --rows $rows --ops sample,argmax --rounds 1 --reps 2 \
    --warmup 0 --gemm heuristic > $O/ncu_${rows}rows_fused.csv
done

# 9. the tile kernel's L2 reads at 16-96 rows
for rows in 16 64 80 96; do
  FLASHSPEC_HOPPER_ROWS_EARLY=0 ncu --clock-control none --csv -k regex:'fsh_scan' -c 2 \
    --section SpeedOfLight --metrics dram__bytes_read.sum,gpu__time_duration.sum,lts__t_bytes.sum,lts__t_sectors_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read_lookup_hit.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active \
    $B/flashspec_bench --shapes 151936x4096 --rows $rows --ops sample --rounds 1 --reps 2 --warmup 0 \
    --gemm heuristic > $O/ncu_l2_${rows}rows_tile.csv
done

# 6. tests
(cd /tmp/b-full && ctest -j 4 -R gpu > $O/ctest_gpu.txt)
(cd /tmp/b-full/tests && FS_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck ./test_gpu_agree \
  > $O/san_memcheck_test_gpu_agree.txt)

# tables (off the device, from runs.tar.gz):
#   bench/tools/bench_ab_table.py evict_first='runs/ab/small_old_*.txt' no_hint='runs/ab/small_new_*.txt'
#   (ab_1_128_rows_table.txt; mid_* -> ab_132_192_rows_table.txt; large_* ->
#   ab_192_512_rows_promoted_table.txt; early_* -> ab_rows_early_table.txt)
