#!/usr/bin/env bash
# The five device calls that made this folder (one H200 each), from the
# repository root with carry ["carry-bin", ".deps"]: carry-bin/all.txz packed
# by bench/tools/carry_pack.sh from a build of the code under test
# (/tmp/b-full: 0db1b53 in call 1, ba0f2b5's prep change in call 2, the
# tile-kernel change in call 5), carry-bin/extra.txz (unpacked to /tmp/fsb)
# holding 0db1b53's flashspec_bench / filter_bench / tree_bench (base/), the
# mutants' tests (mut/: kernels/scan_hopper.cu built with
# mutant_prep_search.patch, call 2, or mutant_except_keeps.patch, call 5)
# and, calls 3-4, flashspec_bench linked with a FS_PROBE_TAIL=1 build of
# scan_hopper.cu with probe_prep_tile1.patch / probe_xblk.patch (probe/).
# Each call began:
set -u
T0=$(date +%s); O=/tmp/o; mkdir -p $O/ab; el() { echo "$1 $(( $(date +%s) - T0 )) s" >> $O/log.txt; }
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
export PATH=/usr/local/cuda/bin:$PATH
B=/tmp/b-full F=/tmp/fsb S=compute-sanitizer
san() { local out=$1; shift; timeout 250 "$@" > $O/$out 2>&1; echo "rc=$?" >> $O/$out; }
# ---- call 1 (0db1b53): verify of 1-8 requests against sample of 4-20 rows;
# the one-launch end by CTA 0 up to 40 rows; the prep-kernel path
OUT=$O/ab bash bench/tools/ab_rounds.sh -r 2 small \
  "--shapes 151936x4096,262144x3072 --rows 4,5,8,10,16,20 --requests 1,2,4,8 --ops sample,verify --rounds 2 --reps 20" \
  def=$B/bench/flashspec_bench tail40=$B/bench/flashspec_bench@FLASHSPEC_TAIL_ROWS_MAX=40 \
  single0=$B/bench/flashspec_bench@FLASHSPEC_SINGLE_LAUNCH=0 > $O/ab_summary.txt 2>&1
for v in def single0; do
  E=""; [ $v = single0 ] && E="FLASHSPEC_SINGLE_LAUNCH=0"
  env $E FS_TRACE_OUT=$O/trace_$v.txt CUDA_INJECTION64_PATH=$B/bench/libfs_kernel_trace.so \
    $B/bench/flashspec_bench --shapes 151936x4096 --rows 5,10,20 --requests 1,2,4 --ops sample,verify --rounds 2 --reps 20
done
# ---- call 2 (ba0f2b5 against 0db1b53)
OUT=$O/ab bash bench/tools/ab_rounds.sh -r 3 prep \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 4,8,16,32 --requests 1,2,4,8,16 --ops sample,verify --rounds 1 --reps 20" \
  base=$F/base/flashspec_bench new=$B/bench/flashspec_bench
OUT=$O/ab bash bench/tools/ab_rounds.sh -r 3 filt \
  "--shapes 151936x4096,128256x8192 --rows 1,16,48,64 --logits 1 --rounds 1 --reps 10" \
  base=$F/base/filter_bench new=$B/bench/filter_bench
for v in base new; do
  BIN=$F/base/flashspec_bench; [ $v = new ] && BIN=$B/bench/flashspec_bench
  FLASHSPEC_SINGLE_LAUNCH=0 FS_TRACE_OUT=$O/trace_single0_$v.txt CUDA_INJECTION64_PATH=$B/bench/libfs_kernel_trace.so \
    $BIN --shapes 151936x4096 --rows 16 --requests 1,4,16 --ops verify --rounds 2 --reps 20 > /dev/null
done
(cd $B && ctest -L gpu -j4 --output-on-failure > $O/ctest_gpu.txt 2>&1) &
(cd $B/tests && san mut_prep_search_single.txt $F/mut/test_gpu_single
 FS_GPU_TEST_SMALL=1 san san_memcheck_single.txt $S --tool memcheck --error-exitcode 9 ./test_gpu_single
 FS_GPU_TEST_SMALL=1 san san_racecheck_single.txt $S --tool racecheck --error-exitcode 9 ./test_gpu_single) &
wait
# ---- calls 3 and 4: the probes (probe_table.txt)
for s in 151936x4096 262144x3072; do
  FLASHSPEC_TAIL_ROWS_MAX=40 $F/probe/flashspec_bench --shapes $s --rows 4,5,10,20 --requests 1,2,4 \
    --ops sample,verify --rounds 2 --reps 20 > $O/probe_$s.txt 2>&1
done
# ---- call 5 (the tile kernel's draft / child / last blocks plain, against 0db1b53)
OUT=$O/ab bash bench/tools/ab_rounds.sh -r 3 xb \
  "--shapes 151936x4096,128256x8192,262144x3072,151930x4096 --rows 4,16,64,128 --requests 1,2,4,8,16,32 --ops sample,verify --rounds 1 --reps 20" \
  base=$F/base/flashspec_bench new=$B/bench/flashspec_bench
for r in 1 2 3; do
  for v in base new; do
    BIN=$F/base/tree_bench; [ $v = new ] && BIN=$B/bench/tree_bench
    $BIN --shapes 151936x4096,128256x8192 --requests 1,4,16 --nodes 8,16,32 --rounds 1 --reps 10 > $O/ab/tree_${v}_$r.txt 2>&1
  done
done
$B/bench/flashspec_bench --json $O/bench.json > $O/bench.txt 2>&1
$B/bench/tree_bench --shapes 151936x4096,128256x8192 --requests 1,4,16,64 --nodes 8,16,32,64 --rounds 3 --reps 8 > $O/tree_bench.txt 2>&1
(cd $B && ctest -L gpu -j4 --output-on-failure > $O/ctest_gpu.txt 2>&1) &
(cd $B/tests && san mut_except_keeps_agree.txt $F/mut/test_gpu_agree
 san mut_except_keeps_tree.txt $F/mut/test_gpu_tree
 FS_GPU_TEST_SMALL=1 san san_memcheck_tree.txt $S --tool memcheck --error-exitcode 9 ./test_gpu_tree
 FS_GPU_TEST_SMALL=1 san san_memcheck_single.txt $S --tool memcheck --error-exitcode 9 ./test_gpu_single) &
wait
tar czf $OUT/out.tgz -C $O .
# Tables, off the device:
#   bench/tools/bench_ab_table.py --methods fs_sample,fs_verify,cublas_matmul base='runs/call2/prep_base_*' new='runs/call2/prep_new_*' > prep_ab_table_call2.txt
#   bench/tools/filter_ab_table.py base='runs/call2/filt_base_*' new='runs/call2/filt_new_*' > filter_ab_table_call2.txt
#   bench/tools/bench_ab_table.py --methods fs_sample,fs_verify,cublas_matmul base='runs/call5/xb_base_*' new='runs/call5/xb_new_*' > except_ab_table_call5.txt
#   bench/tools/kernel_trace_table.py trace_*.txt > trace_*_call*.txt
#   gunzip -k sweep_bench_call5.json.gz; bench/tools/issue20_score.py sweep_bench_call5.json > issue20_score_call5.txt
#   probe_table.txt and tree_ab_table_call5.txt: medians of the probe lines and of runs/call5/tree_* (README)
