#!/usr/bin/env bash
# Five device calls on one H200; builds made off the device and carried
# (bench/tools/carry_pack.sh /tmp/b-full; carry ["carry-bin", ".deps"]; in
# call 4 also carry-bin/extra.txz: the mutants' test executables, built with
# mutant_*.patch, and call 3's bench as bench_barred).  Calls 1-3 ran
# earlier states of the change: calls 1 and 2 with a bar.arrive at
# BAR_FULL, call 3 with bar.sync there and verify's layout OR taken by a
# bar.red in the epilogue warpgroup (bench_barred); call 4 the kernel
# without the 144-row block (its bench carried to call 5 as bench_160),
# call 5 the committed kernel.  Each call began:
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
B=/tmp/b-full X=$B/bench/flashspec_bench TB=$B/bench/tree_bench F=/tmp/fsb
S=compute-sanitizer; command -v $S >/dev/null || S=/usr/local/cuda/bin/compute-sanitizer

# ---- call 1: the EW tests, then the rows kernel (default) against the EW
# tile kernel (forced) at 104-160 rows, single launch on
O=/tmp/o; mkdir -p $O/ab
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,memory.total --format=csv > $O/gpu.txt 2>&1
(cd $B && timeout 200 ctest -R '^test_gpu_(single|single_tail|tree_tile)$' -j2 --output-on-failure > $O/ctest_ew.txt 2>&1)
(cd $B/tests && FLASHSPEC_HOPPER_ROWS_MIN=161 timeout 100 ./test_gpu_agree > $O/agree_tile160.txt 2>&1)
OUT=$O/ab timeout 330 bash bench/tools/ab_rounds.sh -r 2 ew \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 104,128,144,160 --requests 21,26,32 --ops sample,argmax,verify --rounds 2 --reps 10 --warmup 3" \
  rows=$X ew=$X@FLASHSPEC_HOPPER_ROWS_MIN=161 > $O/ab_ew.txt 2>&1

# ---- call 2: 97-128 rows with D = 8192 / 5120, each kernel forced; tree
# verify, the old rule against the EW tile kernel at 97-160 rows; memcheck,
# synccheck and racecheck of test_gpu_single (small shapes)
O=/tmp/o2; mkdir -p $O/ab
OUT=$O/ab timeout 200 bash bench/tools/ab_rounds.sh -r 2 d8 \
  "--shapes 128256x8192,152064x5120 --rows 97,112,120,128 --requests 20,24 --ops sample,argmax,verify --rounds 2 --reps 10 --warmup 3" \
  rows=$X@FLASHSPEC_HOPPER_ROWS_MIN=1 ew=$X@FLASHSPEC_HOPPER_ROWS_MIN=161 > $O/ab_d8.txt 2>&1
for r in 1 2; do for v in old new; do
  w=1; [ $v = old ] && w=0
  FLASHSPEC_TILE_EPI_WG=$w timeout 60 $TB --shapes 151936x4096,128256x8192,262144x3072 \
    --requests 4 --nodes 31,39 --rounds 2 --reps 6 > $O/ab/tree_${v}_$r.txt 2>&1
  FLASHSPEC_TILE_EPI_WG=$w timeout 60 $TB --shapes 151936x4096,128256x8192,262144x3072 \
    --requests 12,16 --nodes 8 --rounds 2 --reps 6 > $O/ab/tree8_${v}_$r.txt 2>&1
done; done
(cd $B/tests && export FS_GPU_TEST_SMALL=1
 timeout 100 $S --tool memcheck --error-exitcode 1 ./test_gpu_single > $O/san_memcheck_single.txt 2>&1
 timeout 70 $S --tool synccheck --error-exitcode 1 ./test_gpu_single > $O/san_synccheck_single.txt 2>&1
 timeout 500 $S --tool racecheck --racecheck-report all --kernel-name kns=fsh_scan_kernel --error-exitcode 1 ./test_gpu_single > $O/san_racecheck_single.txt 2>&1)

# ---- call 3: the GPU suite with the new kernel choice; racecheck of the EW
# kernels through the bench (104 and 160 rows, scan kernels only); memcheck
# of the agreement test on the tile kernel up to 160 rows
O=/tmp/o3; mkdir -p $O
(cd $B && timeout 320 ctest -L gpu -j4 --output-on-failure > $O/ctest_gpu.txt 2>&1)
FLASHSPEC_HOPPER_ROWS_MIN=161 timeout 150 $S --tool racecheck --racecheck-report all --kernel-name kns=fsh_scan_kernel --error-exitcode 1 \
  $X --shapes 20011x64 --rows 104,160 --requests 32 --ops sample,argmax,verify --rounds 1 --reps 1 --warmup 0 > $O/san_racecheck_ew.txt 2>&1 &
(cd $B/tests && FS_GPU_TEST_SMALL=1 FS_GPU_TEST_SMALL_ROWS=160 FLASHSPEC_HOPPER_ROWS_MIN=161 timeout 150 $S --tool memcheck --error-exitcode 1 ./test_gpu_agree > $O/san_memcheck_agree_tile160.txt 2>&1) &
wait

# ---- call 4 (the committed kernel)
O=/tmp/o4; mkdir -p $O/ab
B=/tmp/b-full X=$B/bench/flashspec_bench F=/tmp/fsb
S=compute-sanitizer; command -v $S >/dev/null || S=/usr/local/cuda/bin/compute-sanitizer
RC="--tool racecheck --racecheck-report all --kernel-name kns=fsh_scan_kernel --error-exitcode 1"
SM="--shapes 20011x64 --rounds 1 --reps 1 --warmup 0"
san() { local out=$1; shift; timeout 150 "$@" > $O/$out 2>&1; echo "rc=$?" >> $O/$out; }
export FLASHSPEC_HOPPER_ROWS_MIN=161
san rc_ew.txt $S $RC $X $SM --rows 104,160 --requests 21,32 --ops sample,argmax,verify &
san rc_barred.txt $S $RC $F/bench_barred $SM --rows 160 --requests 32 --ops verify &
san rc_plain.txt env FLASHSPEC_TILE_EPI_WG=0 $S $RC $X $SM --rows 160 --requests 32 --ops verify &
for m in m_x0 m_merge; do san mut_${m}_agree.txt $F/$m/test_gpu_agree & done
san mut_m_store_single.txt $F/m_store/test_gpu_single &
wait
unset FLASHSPEC_HOPPER_ROWS_MIN
(cd $B && timeout 150 ctest -R '^test_gpu_(single|single_tail|agree_tile160|tree_tile|agree|tree)$' -j3 --output-on-failure > $O/ctest_ew.txt 2>&1; echo "rc=$?" >> $O/ctest_ew.txt)
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,smsp__inst_executed.sum,launch__block_size
for S2 in 151936x4096 128256x8192; do for v in ew plain; do
  w=1; [ $v = plain ] && w=0
  FLASHSPEC_HOPPER_ROWS_MIN=161 FLASHSPEC_TILE_EPI_WG=$w timeout 40 ncu --clock-control none -k regex:'fsh_scan' -c 2 --csv --metrics $M \
    $X --shapes $S2 --rows 160 --ops sample,argmax --rounds 1 --reps 1 --warmup 0 --gemm heuristic > $O/ncu_160_${S2}_$v.csv 2>&1
done; done
OUT=$O/ab timeout 200 bash bench/tools/ab_rounds.sh -r 3 def \
  "--shapes 151936x4096,128256x8192,262144x3072,152064x5120 --rows 97,104,112,120,128,136,144,152,160 --requests 20,24,28,32 --ops sample,argmax,verify --rounds 2 --reps 10 --warmup 3" \
  old=$X@FLASHSPEC_TILE_EPI_WG=0 new=$X > $O/ab_def.txt 2>&1
for r in 1 2; do for v in old new; do
  w=1; [ $v = old ] && w=0
  FLASHSPEC_TILE_EPI_WG=$w timeout 60 $B/bench/tree_bench --shapes 151936x4096,128256x8192,262144x3072 \
    --requests 4,16 --nodes 8,31,39 --rounds 2 --reps 6 > $O/ab/tree_${v}_$r.txt 2>&1
done; done

# ---- call 5 (the committed kernel: the 144-row block added)
O=/tmp/o5; mkdir -p $O/ab
B=/tmp/b-full X=$B/bench/flashspec_bench F=/tmp/fsb
S=compute-sanitizer; command -v $S >/dev/null || S=/usr/local/cuda/bin/compute-sanitizer
san() { local out=$1; shift; timeout 200 "$@" > $O/$out 2>&1; echo "rc=$?" >> $O/$out; }
(cd $B && timeout 300 ctest -L gpu -j4 --output-on-failure > $O/ctest_gpu.txt 2>&1; echo "rc=$?" >> $O/ctest_gpu.txt) &
(cd $B/tests && export FS_GPU_TEST_SMALL=1
 san san_memcheck_single.txt $S --tool memcheck --error-exitcode 1 ./test_gpu_single
 san san_synccheck_single.txt $S --tool synccheck --error-exitcode 1 ./test_gpu_single
 san san_initcheck_single.txt $S --tool initcheck --error-exitcode 1 ./test_gpu_single
 FS_GPU_TEST_SMALL_ROWS=160 FLASHSPEC_HOPPER_ROWS_MIN=161 san san_memcheck_agree_tile160.txt $S --tool memcheck --error-exitcode 1 ./test_gpu_agree
 FLASHSPEC_HOPPER_ROWS_MIN=161 san san_racecheck_ew.txt $S --tool racecheck --racecheck-report all --kernel-name kns=fsh_scan_kernel --error-exitcode 1 \
   $X --shapes 20011x64 --rows 104,136,144,160 --requests 28,32 --ops sample,argmax,verify --rounds 1 --reps 1 --warmup 0) &
wait
OUT=$O/ab timeout 150 bash bench/tools/ab_rounds.sh -r 2 bn \
  "--shapes 151936x4096,128256x8192,262144x3072,152064x5120 --rows 129,136,140,144,152,160 --requests 26,28 --ops sample,argmax,verify --rounds 2 --reps 10 --warmup 3" \
  b160=$F/bench_160 b144=$X > $O/ab_bn.txt 2>&1
for r in 1 2; do for v in 160 144; do
  T=$B/bench/tree_bench; [ $v = 160 ] && T=$F/tree_160
  timeout 40 $T --shapes 128256x8192,152064x5120 --requests 16 --nodes 8 --rounds 2 --reps 6 > $O/ab/tree_${v}_$r.txt 2>&1
done; done
