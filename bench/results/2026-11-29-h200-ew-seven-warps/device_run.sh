#!/usr/bin/env bash
# Four device calls on one H200; builds made off the device and carried
# (bench/tools/carry_pack.sh /tmp/b-full; carry ["carry-bin", ".deps"]; and
# carry-bin/extra.txz: the kernel committed with the pairs as bench_ew128 /
# tree_ew128, in call 5 the mutant's test_gpu_agree, built with
# mutant_nomerge.patch).  Calls 3-5 ran earlier states of the change
# (README), call 6 the committed one.  Each call began:
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
B=/tmp/b-full X=$B/bench/flashspec_bench TB=$B/bench/tree_bench F=/tmp/fsb
S=compute-sanitizer; command -v $S >/dev/null || S=/usr/local/cuda/bin/compute-sanitizer
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
san() { local out=$1; shift; timeout 250 "$@" > $O/$out 2>&1; echo "rc=$?" >> $O/$out; }
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,dram__bytes_read.sum,lts__t_bytes.sum,smsp__inst_executed.sum,launch__block_size,launch__grid_size

# ---- calls 3 and 4 (O=/tmp/o3, /tmp/o4): EW and pairs tests, sanitizers, A/B, ncu
O=/tmp/o3; mkdir -p $O/ab
(cd $B && timeout 260 ctest -R '^test_gpu_(agree_pairs|tree_pairs|single|single_tail|agree_tile160|tree_tile)$' -j3 --output-on-failure > $O/ctest_3.txt 2>&1) &
(cd $B/tests && export FS_GPU_TEST_SMALL=1
 san san_synccheck_single.txt $S --tool synccheck --error-exitcode 1 ./test_gpu_single
 FLASHSPEC_HOPPER_ROWS_MIN=161 san san_racecheck_ew.txt $S --tool racecheck --racecheck-report all --kernel-name kns=fsh_scan_kernel --error-exitcode 1 \
   $X --shapes 20011x64 --rows 104,144,160 --requests 32 --ops sample,argmax,verify --rounds 1 --reps 1 --warmup 0
 FLASHSPEC_TILE_PAIRS_MIN=161 san san_racecheck_pairs.txt $S --tool racecheck --racecheck-report all --kernel-name kns=fsh_scan_kernel --error-exitcode 1 \
   $X --shapes 20011x64 --rows 200,288,320 --requests 64 --ops sample,argmax,verify --rounds 1 --reps 1 --warmup 0
 FLASHSPEC_HOPPER_ROWS_MIN=161 san san_memcheck_ew.txt $S --tool memcheck --error-exitcode 1 \
   $X --shapes 20011x64 --rows 97,104,136,144,152,160 --requests 20,32 --ops sample,argmax,verify --rounds 1 --reps 1 --warmup 0) &
wait
OUT=$O/ab timeout 240 bash bench/tools/ab_rounds.sh -r 3 ew \
  "--shapes 151936x4096,128256x8192,262144x3072,152064x5120 --rows 104,128,144,160,257,288,320 --requests 20,28,32,52,64 --ops sample,argmax,verify --rounds 2 --reps 10 --warmup 3" \
  old=$F/bench_ew128 new=$X > $O/ab_ew.txt 2>&1
for r in 1 2; do for v in old new; do
  T=$TB; [ $v = old ] && T=$F/tree_ew128
  timeout 60 $T --shapes 128256x8192,152064x5120 --requests 4,8 --nodes 31,39 --rounds 2 --reps 6 > $O/ab/tree_${v}_$r.txt 2>&1
done; done
for v in old new; do
  Y=$X; [ $v = old ] && Y=$F/bench_ew128
  timeout 60 ncu --clock-control none -k regex:'fsh_scan' -c 4 --csv --metrics $M \
    $Y --shapes 151936x4096 --rows 160,320 --ops sample,argmax --rounds 1 --reps 1 --warmup 0 --gemm heuristic > $O/ncu_$v.csv 2>&1
done

# ---- call 5 (O=/tmp/o5): the GPU suite, the mutant, sanitizers, A/B, source counters
O=/tmp/o5; mkdir -p $O/ab
(cd $B && timeout 400 ctest -L gpu -j4 --output-on-failure > $O/ctest_gpu.txt 2>&1) &
(FLASHSPEC_HOPPER_ROWS_MIN=161 san mut_m_nomerge_agree.txt $F/m_nomerge/test_gpu_agree
 cd $B/tests && export FS_GPU_TEST_SMALL=1
 san san_synccheck_single.txt $S --tool synccheck --error-exitcode 1 ./test_gpu_single
 FLASHSPEC_HOPPER_ROWS_MIN=161 san san_racecheck_ew.txt $S --tool racecheck --racecheck-report all --kernel-name kns=fsh_scan_kernel --error-exitcode 1 \
   $X --shapes 20011x64 --rows 104,128,144,160 --requests 28,32 --ops sample,argmax,verify --rounds 1 --reps 1 --warmup 0
 FLASHSPEC_TILE_PAIRS_MIN=161 san san_racecheck_pairs.txt $S --tool racecheck --racecheck-report all --kernel-name kns=fsh_scan_kernel --error-exitcode 1 \
   $X --shapes 20011x64 --rows 200,288,320 --requests 64 --ops sample,argmax,verify --rounds 1 --reps 1 --warmup 0) &
(cd $B/tests && export FS_GPU_TEST_SMALL=1
 FS_GPU_TEST_SMALL_ROWS=160 FLASHSPEC_HOPPER_ROWS_MIN=161 san san_memcheck_agree_tile160.txt $S --tool memcheck --error-exitcode 1 ./test_gpu_agree
 FS_GPU_TEST_SMALL_ROWS=320 FLASHSPEC_TILE_PAIRS_MIN=161 san san_memcheck_agree_pairs.txt $S --tool memcheck --error-exitcode 1 ./test_gpu_agree) &
wait
OUT=$O/ab timeout 240 bash bench/tools/ab_rounds.sh -r 3 ew \
  "--shapes 151936x4096,128256x8192,262144x3072,152064x5120 --rows 104,128,136,144,152,160,257,288,320 --requests 20,28,32,52,64 --ops sample,argmax,verify --rounds 2 --reps 10 --warmup 3" \
  old=$F/bench_ew128 new=$X > $O/ab_ew.txt 2>&1
for op in sample argmax; do
  n=sass_pairs320_$op
  timeout 90 $NCU --clock-control none -k regex:'fsh_scan' -c 1 --section SourceCounters --section WarpStateStats -f -o /tmp/$n \
    $X --shapes 151936x4096 --rows 320 --ops $op --rounds 1 --reps 1 --warmup 0 --gemm heuristic > /dev/null 2>&1
  $NCU -i /tmp/$n.ncu-rep --page source --csv --print-source sass 2>/dev/null | gzip > $O/$n.csv.gz
done

# ---- call 6 (O=/tmp/o6, the committed kernel): the GPU suite, sanitizers, A/B
O=/tmp/o6; mkdir -p $O/ab
(cd $B && timeout 330 ctest -L gpu -j4 --output-on-failure > $O/ctest_gpu.txt 2>&1) &
(cd $B/tests && export FS_GPU_TEST_SMALL=1
 san san_synccheck_single.txt $S --tool synccheck --error-exitcode 1 ./test_gpu_single
 FLASHSPEC_HOPPER_ROWS_MIN=161 san san_racecheck_ew.txt $S --tool racecheck --racecheck-report all --kernel-name kns=fsh_scan_kernel --error-exitcode 1 \
   $X --shapes 20011x64 --rows 104,128,144,160 --requests 20,32 --ops sample,argmax,verify --rounds 1 --reps 1 --warmup 0
 FS_GPU_TEST_SMALL_ROWS=160 FLASHSPEC_HOPPER_ROWS_MIN=161 san san_memcheck_agree_tile160.txt $S --tool memcheck --error-exitcode 1 ./test_gpu_agree) &
wait
OUT=$O/ab timeout 150 bash bench/tools/ab_rounds.sh -r 3 ew \
  "--shapes 151936x4096,128256x8192,262144x3072,152064x5120 --rows 104,120,128,144,160,320 --requests 20,24,32 --ops sample,argmax,verify --rounds 2 --reps 10 --warmup 3" \
  old=$F/bench_ew128 new=$X > $O/ab_ew.txt 2>&1
# off the device: bench_ab_table.py --methods fs_sample,fs_draft_argmax,fs_verify
#   old='runs/callN_ew_old_*.txt' new='runs/callN_ew_new_*.txt' > bench_table_callN.txt;
#   ncu_metrics_table.py ncu_call*.csv > ncu_table.txt; ncu_sass_split.py sass_pairs320_*.csv.gz > sass_split.txt
