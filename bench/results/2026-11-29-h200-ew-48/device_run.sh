#!/usr/bin/env bash
# Two device calls on one H200 (calls 5 and 6 of the session; 1-4 in
# ../2026-11-29-h200-plain-block/); builds made off the device and carried
# (bench/tools/carry_pack.sh /tmp/b-full; carry ["carry-bin", ".deps"]).
# Call 5 ran the build with the 48- and 64-row EW kernels behind
# FLASHSPEC_TILE_EW_MIN_ROWS (default still 80), call 6 the committed
# default (48 where D <= 5120) against f0518e1 (carry-bin/extra.txz:
# bench_f0518).  Each call began:
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
B=/tmp/b-full X=$B/bench/flashspec_bench TB=$B/bench/tree_bench F=/tmp/fsb
S=compute-sanitizer; command -v $S >/dev/null || S=/usr/local/cuda/bin/compute-sanitizer
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
san() { local out=$1; shift; timeout 250 "$@" > $O/$out 2>&1; echo "rc=$?" >> $O/$out; }
M=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,launch__block_size,launch__grid_size

# ---- call 5 (O=/tmp/o5): EW from 80 (then the default), 64 and 48; trees; ncu; tests and sanitizers under 48
O=/tmp/o5; mkdir -p $O/ab
OUT=$O/ab timeout 300 bash bench/tools/ab_rounds.sh -r 3 ew \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 16,33,40,48,56,64,72 --requests 7,8,10,12 --ops sample,argmax,verify --rounds 2 --reps 10 --warmup 3" \
  dflt=$X ew64=$X@FLASHSPEC_TILE_EW_MIN_ROWS=64 ew48=$X@FLASHSPEC_TILE_EW_MIN_ROWS=48 > $O/ab_ew.txt 2>&1
for r in 1 2; do for v in dflt ew64 ew48; do
  E=""; [ $v = ew64 ] && E="FLASHSPEC_TILE_EW_MIN_ROWS=64"; [ $v = ew48 ] && E="FLASHSPEC_TILE_EW_MIN_ROWS=48"
  env $E timeout 60 $TB --shapes 151936x4096,128256x8192,262144x3072 --requests 1,4,8 --nodes 7,11,15 --rounds 2 --reps 6 > $O/ab/tree_${v}_$r.txt 2>&1
done; done
for v in dflt ew48; do
  E=""; [ $v = ew48 ] && E="FLASHSPEC_TILE_EW_MIN_ROWS=48"
  env $E timeout 40 $NCU --clock-control none -k regex:'fsh_scan' -c 4 --csv --metrics $M \
    $X --shapes 151936x4096 --rows 48,64 --ops sample,argmax --rounds 1 --reps 1 --warmup 0 --gemm heuristic > $O/ncu_$v.csv 2>&1
done
(cd $B && FLASHSPEC_TILE_EW_MIN_ROWS=48 FLASHSPEC_HOPPER_ROWS_MIN=161 timeout 200 ctest -R '^test_gpu_(agree|tree|stat|single|bad_input)$' -j4 --output-on-failure > $O/ctest_ew48.txt 2>&1) &
(cd $B/tests && export FS_GPU_TEST_SMALL=1 FLASHSPEC_TILE_EW_MIN_ROWS=48 FLASHSPEC_HOPPER_ROWS_MIN=161
 san san_memcheck_ew48.txt $S --tool memcheck --error-exitcode 1 $X --shapes 20011x64 --rows 1,12,40,48,60,64 --requests 8,12 --ops sample,argmax,verify --rounds 1 --reps 1 --warmup 0
 san san_racecheck_ew48.txt $S --tool racecheck --racecheck-report all --kernel-name kns=fsh_scan_kernel --error-exitcode 1 $X --shapes 20011x64 --rows 40,64 --requests 12 --ops sample,verify --rounds 1 --reps 1 --warmup 0
 san san_synccheck_ew48.txt $S --tool synccheck --kernel-name kns=fsh_scan_kernel --error-exitcode 1 $X --shapes 20011x64 --rows 40,64 --requests 12 --ops sample,verify --rounds 1 --reps 1 --warmup 0) &
wait
# bench_table_call5.txt: bench/tools/bench_ab_table.py --methods fs_sample,fs_draft_argmax,fs_verify,cublas_matmul \
#   dflt='ab/ew_dflt_*.txt' ew64='ab/ew_ew64_*.txt' ew48='ab/ew_ew48_*.txt'

# ---- call 6 (O=/tmp/o6): the committed default: GPU suite, A/B against f0518e1, sweep, trees
O=/tmp/o6; mkdir -p $O/ab
(cd $B && timeout 330 ctest -L gpu -j4 --output-on-failure > $O/ctest_gpu.txt 2>&1)
OUT=$O/ab timeout 200 bash bench/tools/ab_rounds.sh -r 3 ew \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 33,48,56,64 --requests 7,10,12 --ops sample,argmax,verify --rounds 2 --reps 10 --warmup 3" \
  prev=$F/bench_f0518 new=$X > $O/ab_ew.txt 2>&1
timeout 100 $X --shapes 151936x4096,128256x8192,262144x3072 > $O/sweep.txt 2>&1
timeout 60 $TB > $O/tree_bench.txt 2>&1
# issue20_score.txt: bench/tools/issue20_score.py sweep.txt

# ---- call 7 (O=/tmp/o7): the filters' cost against the unfiltered op now (cedda1f)
O=/tmp/o7; mkdir -p $O
for r in 1 2; do timeout 150 $B/bench/filter_bench --shapes 151936x4096,128256x8192 --rows 1,16,48,64 --logits 1 --rounds 2 --reps 10 > $O/filter_$r.txt 2>&1; done
# filter_table_call7.txt: bench/tools/filter_ab_table.py now='filter_[12].txt'
