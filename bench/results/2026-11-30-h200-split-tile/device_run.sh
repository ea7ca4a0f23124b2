#!/usr/bin/env bash
# The device calls that made this folder (one H200 each; `bash run.sh N`
# ran stage N), from the repository root with carry ["carry-bin", ".deps"]:
# carry-bin/all.txz packed by bench/tools/carry_pack.sh from the build in
# /tmp/b-full of split_tile.patch applied to a946500
# (FLASHSPEC_ROWS_SPLIT=1 takes the split kernels; unset, the 128-row ones).
# Stage 3: carry-bin/all.txz from the commit adding FSHR_PROBE_NO_NOISE (default
# off), carry-bin/extra.txz holding nonoise/flashspec_bench, the same build
# with the rows kernel's translation unit compiled with
# -DFSHR_PROBE_NO_NOISE=1.
set -u
source bench/tools/device_env.sh
case "${1:-1}" in
1)
# where the split kernels spill (producer or consumer region)
for f in '_ZN4fshr16fshr_scan_kernelILi4ELb1ELi1ELb0ELb0ELb0ELb0ELb0EEEv14CUtensorMap_stS1_S1_S1_NS_4ArgsE' \
         '_ZN4fshr16fshr_scan_kernelILi4ELb1ELi2ELb1ELb0ELb0ELb0ELb0EEEv14CUtensorMap_stS1_S1_S1_NS_4ArgsE'; do
  cuobjdump -sass -fun "$f" $B/tests/test_gpu_agree > $O/sass_${f:29:20}.txt 2>&1
done
cuobjdump --dump-resource-usage $B/tests/test_gpu_agree 2>&1 | grep -A1 "fshr_scan_kernelILi4" > $O/resource_usage_split_call1.txt
el sass
export FLASHSPEC_ROWS_SPLIT=1
mkdir -p $O/tests
(FLASHSPEC_HOPPER_ROWS_MIN=1 timeout 200 $B/tests/test_gpu_agree > $O/tests/agree_rowsm_split.txt 2>&1; echo "rc=$?" >> $O/tests/agree_rowsm_split.txt) &
(FLASHSPEC_HOPPER_ROWS_MIN=1 FLASHSPEC_HOPPER_ROWS_JOBS=3 timeout 200 $B/tests/test_gpu_agree > $O/tests/agree_rowsjobs_split.txt 2>&1; echo "rc=$?" >> $O/tests/agree_rowsjobs_split.txt) &
(FLASHSPEC_HOPPER_ROWS_MIN=1 timeout 200 $B/tests/test_gpu_stat > $O/tests/stat_rowsm_split.txt 2>&1; echo "rc=$?" >> $O/tests/stat_rowsm_split.txt; timeout 200 $B/tests/test_gpu_stat > $O/tests/stat_split.txt 2>&1; echo "rc=$?" >> $O/tests/stat_split.txt) &
wait
unset FLASHSPEC_ROWS_SPLIT
el tests
OUT=$O/ab timeout 300 bash bench/tools/ab_rounds.sh -r 3 sp \
  "--shapes 151936x4096,128256x8192 --rows 256,512,640,768,1024 --requests 128,200 --ops sample,argmax,verify --rounds 1 --reps 20" \
  base=$B/bench/flashspec_bench split=$B/bench/flashspec_bench@FLASHSPEC_ROWS_SPLIT=1 > $O/ab_summary_call1.txt 2>&1
el ab
;;
2)
# ncu, one launch each: the split kernels against the 128-row ones at 512
# and 1024 rows (tensor pipe, instructions, local memory, shared wavefronts)
M=gpu__time_duration.sum,sm__cycles_elapsed.max,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,smsp__sass_inst_executed_op_local_ld.sum,smsp__sass_inst_executed_op_local_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,dram__bytes_read.sum
for sh in 151936x4096 128256x8192; do for r in 512 1024; do for op in sample argmax; do
  for v in base split; do
    if [ $v = split ]; then export FLASHSPEC_ROWS_SPLIT=1; else unset FLASHSPEC_ROWS_SPLIT; fi
    ncu_csv ncu/ncu_${sh}_${r}_${op}_$v.csv 60 --clock-control base -k regex:fshr_scan -c 1 --metrics $M \
      $B/bench/flashspec_bench --shapes $sh --rows $r --ops $op --reps 1 --warmup 0
  done
done; done; done
unset FLASHSPEC_ROWS_SPLIT
el ncu
;;
3)
# the sampling epilogue's stages under ncu: sample against the rows kernel
# built with FSHR_PROBE_NO_NOISE=1 (/tmp/fsb/nonoise: the block sums and the
# log-sum-exp, no reduce-scatter, keys or pick) and draft argmax
M=gpu__time_duration.sum,sm__cycles_elapsed.max,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
for sh in 151936x4096 128256x8192 262144x3072; do for r in 512 1024; do
  for v in sample argmax nonoise; do
    BIN=$B/bench/flashspec_bench op=$v
    if [ $v = nonoise ]; then BIN=/tmp/fsb/nonoise/flashspec_bench op=sample; fi
    ncu_csv ncu_stages/ncu_${sh}_${r}_$v.csv 60 --clock-control base -k regex:fshr_scan -c 1 --metrics $M \
      $BIN --shapes $sh --rows $r --ops $op --reps 1 --warmup 0
  done
done; done
el ncu
# every GPU test on this build
(cd $B && timeout 330 ctest -L gpu -j4 --output-on-failure > $O/ctest_gpu_all_call3.txt 2>&1; echo "rc=$?" >> $O/ctest_gpu_all_call3.txt)
el tests
;;
esac
tar czf $OUT/out.tgz -C $O .
