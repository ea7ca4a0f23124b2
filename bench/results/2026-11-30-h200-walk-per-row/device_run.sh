#!/usr/bin/env bash
# The seven device calls that made this folder (one H200 each; `bash run.sh N`
# for call N), from the repository root with carry ["carry-bin", ".deps"]:
# carry-bin/all.txz packed by bench/tools/carry_pack.sh from a build of the
# code under test in /tmp/b-full (calls 1-4: 374dc9a's kernels; call 5: the
# warm-pass change described in README.md; call 6: 7dc46ca's), carry-bin/extra.txz (unpacked to
# /tmp/fsb) holding the other binaries: base/flashspec_bench (8580008's
# scan_hopper.cu linked into the same library: calls 1, 3, 4),
# mut/test_gpu_single (mutant_walk_last_stop.patch, call 1),
# b8/flashspec_bench (CTA 0's tail loading a row's records in one batch of 8
# a lane, fs_merge_run<8> in fs_op_tail_run: call 2), head/flashspec_bench
# (374dc9a: call 5), probe/flashspec_bench (7dc46ca's library with
# scan_hopper.cu built with -DFS_PROBE_TAIL=1 and probe_steps.patch: call 6),
# sel/flashspec_bench (the same library with scan_hopper.cu built with
# merge_sel.patch and -DFS_MERGE_SEL=1: call 7).
# Tables, off the device (runs/callN.tgz hold the runs):
#   bench/tools/bench_ab_table.py --methods fs_sample,fs_verify,cublas_matmul base='runs/call1/walk_base_*' new='runs/call1/walk_new_*' > walk_ab_table_call1.txt
#   bench/tools/bench_ab_table.py --methods fs_sample,fs_draft_argmax def='runs/call2/tail_rows*_def_*' tail0='runs/call2/tail_rows*_tail0_*' b8='runs/call2/tail_rows*_b8_*' > tail_ab_table_call2.txt  (then fs_verify of tail_req*)
#   bench/tools/issue20_score.py sweep_bench_call2.json > issue20_score_call2.txt
#   bench/tools/bench_ab_table.py --methods fs_sample,fs_draft_argmax,cublas_matmul base='runs/call3/ctl_base_*' new='runs/call3/ctl_new_*' > ctl_ab_table_call3.txt
#   bench/tools/bench_ab_table.py --methods fs_sample,fs_verify def='runs/call3/trm_def_*' tail16='runs/call3/trm_tail16_*' > trm_ab_table_call3.txt
#   bench/tools/bench_ab_table.py --methods fs_sample,fs_verify def='runs/call4/t8_def_*' tail8='runs/call4/t8_tail8_*' def_s0='runs/call4/t8_def_s0_*' tail8_s0='runs/call4/t8_tail8_s0_*' > t8_ab_table_call4.txt  (then t8d_*)
#   bench/tools/bench_ab_table.py --methods fs_sample,fs_draft_argmax,cublas_matmul base='runs/call4/ctl5_base_*' new='runs/call4/ctl5_new_*' > ctl5_ab_table_call4.txt
#   bench/tools/bench_ab_table.py --methods fs_sample,fs_draft_argmax,fs_verify head='runs/call5/warm_head_*' warm='runs/call5/warm_warm_*' > warm_ab_table_call5.txt
#   probe_steps_table_call6.txt: medians of the FS_PROBE_TAIL lines of probe_*_call6.txt.gz
#   (the stamps s0-s4 after sync; README.md)
#   bench/tools/bench_ab_table.py --methods fs_sample,fs_draft_argmax,fs_verify head='runs/call7/sel_head_*' sel='runs/call7/sel_sel_*' > sel_ab_table_call7.txt
set -u
T0=$(date +%s); O=/tmp/o; mkdir -p $O/ab; el() { echo "$1 $(( $(date +%s) - T0 )) s" >> $O/log.txt; }
bash bench/tools/carry_unpack.sh >/dev/null
mkdir -p /tmp/fsb && tar xJf carry-bin/extra.txz -C /tmp/fsb
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
export PATH=/usr/local/cuda/bin:$PATH
B=/tmp/b-full F=/tmp/fsb S=compute-sanitizer
san() { local out=$1; shift; timeout 250 "$@" > $O/$out 2>&1; echo "rc=$?" >> $O/$out; }
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $O/gpu.txt 2>&1
el start
case "${1:-1}" in
1)
# the walk: base (8580008) against new, verify of 1-64 requests (5-320 rows);
# sample of 16 rows (one launch) and 192 / 320 rows (pairs) as controls
OUT=$O/ab timeout 290 bash bench/tools/ab_rounds.sh -r 3 walk \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 16,192,320 --requests 1,2,4,8,16,32,64 --ops sample,verify --rounds 1 --reps 20" \
  base=$F/base/flashspec_bench new=$B/bench/flashspec_bench > $O/ab_walk_summary.txt 2>&1
el walk
(cd $B && ctest -L gpu -j4 --output-on-failure > $O/ctest_gpu.txt 2>&1) &
(cd $B/tests && san mut_walk_last_stop.txt $F/mut/test_gpu_single
 FS_GPU_TEST_SMALL=1 san san_memcheck_single.txt $S --tool memcheck --error-exitcode 9 ./test_gpu_single
 FS_GPU_TEST_SMALL=1 san san_racecheck_single.txt $S --tool racecheck --error-exitcode 9 ./test_gpu_single) &
wait
el tests
;;
2)
# the 1-4-row end of a one launch: CTA 0's warp a row (def), every CTA's
# block merge (tail0), CTA 0's warp loading its records in one batch (b8)
for ops in "--rows 1,2,4 --ops sample,argmax" "--requests 1 --drafts 3 --ops verify" "--requests 1,2 --drafts 1 --ops verify"; do
  tag=tail_$(echo $ops | tr -dc 'a-z0-9' | cut -c1-24)
  OUT=$O/ab timeout 200 bash bench/tools/ab_rounds.sh -r 3 $tag \
    "--shapes 151936x4096,128256x8192,262144x3072 $ops --rounds 1 --reps 20" \
    def=$B/bench/flashspec_bench tail0=$B/bench/flashspec_bench@FLASHSPEC_TAIL_ROWS_MAX=0 \
    b8=$F/b8/flashspec_bench >> $O/ab_tail_summary.txt 2>&1
done
el tail
$B/bench/flashspec_bench --json $O/bench.json > $O/bench.txt 2>&1
el sweep
;;
3)
# base (8580008) against new where the walk change does not reach: sample
# and draft argmax of 64-160 rows (the tile kernel, one launch)
OUT=$O/ab timeout 200 bash bench/tools/ab_rounds.sh -r 3 ctl \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 64,128,160 --ops sample,argmax --rounds 1 --reps 20" \
  base=$F/base/flashspec_bench new=$B/bench/flashspec_bench > $O/ab_ctl_summary.txt 2>&1
el ctl
# where CTA 0 should stop ending one-launch ops: tail_rows_max 4 (default) or 16
OUT=$O/ab timeout 200 bash bench/tools/ab_rounds.sh -r 3 trm \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 5,8,16 --requests 1,2,4 --ops sample,verify --rounds 1 --reps 20" \
  def=$B/bench/flashspec_bench tail16=$B/bench/flashspec_bench@FLASHSPEC_TAIL_ROWS_MAX=16 > $O/ab_trm_summary.txt 2>&1
el trm
;;
4)
# tail_rows_max 4 (default) or 8 (CTA 0's eight consumer warps, a row each),
# one launch and the prep-kernel path (its last CTA)
OUT=$O/ab timeout 200 bash bench/tools/ab_rounds.sh -r 3 t8 \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 5,6,8,10 --requests 1,2 --ops sample,verify --rounds 1 --reps 20" \
  def=$B/bench/flashspec_bench tail8=$B/bench/flashspec_bench@FLASHSPEC_TAIL_ROWS_MAX=8 \
  def_s0=$B/bench/flashspec_bench@FLASHSPEC_SINGLE_LAUNCH=0 \
  tail8_s0=$B/bench/flashspec_bench@FLASHSPEC_TAIL_ROWS_MAX=8,FLASHSPEC_SINGLE_LAUNCH=0 > $O/ab_t8_summary.txt 2>&1
OUT=$O/ab timeout 200 bash bench/tools/ab_rounds.sh -r 3 t8d \
  "--shapes 151936x4096,128256x8192,262144x3072 --requests 1,2 --drafts 3 --ops verify --rounds 1 --reps 20" \
  def=$B/bench/flashspec_bench tail8=$B/bench/flashspec_bench@FLASHSPEC_TAIL_ROWS_MAX=8 >> $O/ab_t8_summary.txt 2>&1
el t8
# base (8580008) against new again at 128 and 160 rows, five rounds
OUT=$O/ab timeout 200 bash bench/tools/ab_rounds.sh -r 5 ctl5 \
  "--shapes 151936x4096,262144x3072 --rows 128,160 --ops sample,argmax --rounds 1 --reps 20" \
  base=$F/base/flashspec_bench new=$B/bench/flashspec_bench > $O/ab_ctl5_summary.txt 2>&1
el ctl5
;;
5)
# the tail CTA's warm pass: HEAD (374dc9a) against the change, 1-4 rows and controls
OUT=$O/ab timeout 200 bash bench/tools/ab_rounds.sh -r 4 warm \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 1,2,4,16 --requests 1 --drafts 3 --ops sample,argmax,verify --rounds 1 --reps 20" \
  head=$F/head/flashspec_bench warm=$B/bench/flashspec_bench > $O/ab_warm_summary.txt 2>&1
el warm
(cd $B && ctest -L gpu -j4 --output-on-failure > $O/ctest_gpu.txt 2>&1) &
(cd $B/tests && FS_GPU_TEST_SMALL=1 san san_memcheck_single.txt $S --tool memcheck --error-exitcode 9 ./test_gpu_single
 FS_GPU_TEST_SMALL=1 san san_racecheck_single.txt $S --tool racecheck --error-exitcode 9 ./test_gpu_single) &
wait
el tests
;;
6)
# where the 1-4-row end's time goes: FS_PROBE_TAIL build with stamps inside
# fs_op_tail_run (probe_steps.patch), CTA 0 ending ops up to 16 rows
for s in 151936x4096 262144x3072; do
  FLASHSPEC_TAIL_ROWS_MAX=16 $F/probe/flashspec_bench --shapes $s --rows 1,4,8,16 --requests 1 --drafts 3 \
    --ops sample,argmax,verify --rounds 2 --reps 20 > $O/probe_$s.txt 2>&1
done
el probe
(cd $B && ctest -L gpu -j4 --output-on-failure > $O/ctest_gpu.txt 2>&1) &
(cd $B/tests && FS_GPU_TEST_SMALL=1 san san_memcheck_single.txt $S --tool memcheck --error-exitcode 9 ./test_gpu_single) &
wait
el tests
;;
7)
# fs_record_merge by selects in the tile kernel's unit (sel) against HEAD
OUT=$O/ab timeout 250 bash bench/tools/ab_rounds.sh -r 4 sel \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 1,2,4,16,64 --requests 1 --drafts 3 --ops sample,argmax,verify --rounds 1 --reps 20" \
  head=$B/bench/flashspec_bench sel=$F/sel/flashspec_bench > $O/ab_sel_summary.txt 2>&1
el sel
;;
esac
tar czf $OUT/out.tgz -C $O .
