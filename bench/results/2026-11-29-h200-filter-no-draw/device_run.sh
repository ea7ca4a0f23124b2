#!/usr/bin/env bash
# Five device calls on one H200.  Builds made off the device and carried
# (bench/tools/carry_pack.sh /tmp/b-full; carry ["carry-bin", ".deps"]);
# carry-bin/extra.txz (unpacked to /tmp/fsb): fafba76's filter_bench and
# flashspec_bench (filter_base, bench_base), and the mutant's test_gpu_filter
# (m_nodraw_all/, built from kernels/scan_hopper.cu with
# mutant_nodraw_all.patch).  Each call began:
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
B=/tmp/b-full F=/tmp/fsb
S=compute-sanitizer; command -v $S >/dev/null || S=/usr/local/cuda/bin/compute-sanitizer
san() { local out=$1; shift; timeout 150 "$@" > $O/$out 2>&1; echo "rc=$?" >> $O/$out; }

# ---- call 1 (fafba76): the GPU suite (ctest_gpu_fafba76_call1.txt)
O=/tmp/o1; mkdir -p $O
(cd $B && ctest -L gpu -j4 --output-on-failure > $O/ctest_gpu.txt 2>&1)

# ---- call 2: no draw for filtered rows (first form, chain rows only) against fafba76
O=/tmp/o2; mkdir -p $O/ab
(cd $B && ctest -R 'test_gpu_(filter|rows_lists|realistic)$' -j3 --output-on-failure > $O/ctest_filter.txt 2>&1)
OUT=$O/ab bash bench/tools/ab_rounds.sh -r 3 nodraw \
  "--shapes 151936x4096,128256x8192 --rows 1,16,48,64,256 --logits 1 --rounds 1 --reps 10" \
  base=$F/filter_base new=$B/bench/filter_bench
# filter_table_call2.txt: bench/tools/filter_ab_table.py base='ab/nodraw_base_*' new='ab/nodraw_new_*'

# ---- call 3: the filters' lists in epilogue warps (filter_ew.patch, measured and dropped)
O=/tmp/o3; mkdir -p $O/ab
(cd $B && ctest -R 'test_gpu_(filter|filter_ew_small|filter_plain|agree_ew_small|tree_ew_small)$' -j4 \
   --output-on-failure > $O/ctest.txt 2>&1) &
(cd $B/tests && FS_GPU_TEST_SMALL=1 san san_memcheck_filter.txt $S --tool memcheck --error-exitcode 9 ./test_gpu_filter) &
wait
OUT=$O/ab bash bench/tools/ab_rounds.sh -r 3 fe \
  "--shapes 151936x4096,128256x8192 --rows 16,40,48,64 --logits 1 --rounds 1 --reps 10" \
  base=$F/filter_base new=$B/bench/filter_bench noew=$B/bench/filter_bench@FLASHSPEC_FILTER_EW=0 \
  ew48=$B/bench/filter_bench@FLASHSPEC_TILE_EW_MIN_ROWS=48
# filter_ew_table_call3.txt: filter_ab_table.py base=... new=... noew=... ew48=...

# ---- call 4: the committed no-draw and one-row-a-thread EW builds against fafba76
O=/tmp/o4; mkdir -p $O/ab
(cd $B && ctest -L gpu -j4 --output-on-failure > $O/ctest_gpu.txt 2>&1) &
(cd $B/tests
 RC="$S --tool racecheck --racecheck-report all --kernel-name kns=fsh_scan_kernel --error-exitcode 9"
 A="--shapes 20011x64 --logits 1 --rounds 1 --reps 1"
 san san_racecheck_base_40.txt $RC $F/filter_base $A --rows 40
 san san_racecheck_new_40.txt $RC $B/bench/filter_bench $A --rows 40
 san san_racecheck_new_64.txt $RC $B/bench/filter_bench $A --rows 64
 san san_racecheck_bench_200.txt $RC $B/bench/flashspec_bench --shapes 20011x64 --rows 48 --requests 40,64 --ops sample,verify --rounds 1 --reps 1 --warmup 0
 san san_memcheck_fb.txt $S --tool memcheck --error-exitcode 9 $B/bench/filter_bench $A --rows 40,64,200
 FS_GPU_TEST_SMALL=1 san san_memcheck_rows_lists.txt $S --tool memcheck --error-exitcode 9 ./test_gpu_rows_lists) &
wait
OUT=$O/ab bash bench/tools/ab_rounds.sh -r 3 nd \
  "--shapes 151936x4096,128256x8192 --rows 1,16,48,64,128,256,512 --logits 1 --rounds 1 --reps 10" \
  base=$F/filter_base new=$B/bench/filter_bench
OUT=$O/ab bash bench/tools/ab_rounds.sh -r 3 ns1 \
  "--shapes 151936x4096,262144x3072 --rows 33,40,48,56,64 --requests 8,10,12 --ops sample,argmax,verify --rounds 2 --reps 10 --warmup 3" \
  base=$F/bench_base new=$B/bench/flashspec_bench
# filter_table_call4.txt: filter_ab_table.py base='ab/nd_base_*' new='ab/nd_new_*'
# ew48_ns1_table_call4.txt: bench/tools/bench_ab_table.py --methods fs_sample,fs_draft_argmax,fs_verify,cublas_matmul \
#   base='ab/ns1_base_*' new='ab/ns1_new_*'

# ---- call 5: the final build (tree rows without the draw too): GPU suite, mutant, racecheck's internal error located
O=/tmp/o5; mkdir -p $O
(cd $B && ctest -L gpu -j4 --output-on-failure > $O/ctest_gpu.txt 2>&1) &
(cd $B/tests
 RC="$S --tool racecheck --racecheck-report all --error-exitcode 9"
 X=$B/bench/flashspec_bench; A="--shapes 20011x64 --rounds 1 --reps 1 --warmup 0"
 san rc_verify200.txt $RC --kernel-name kns=fsh_scan_kernel $X $A --requests 40 --ops verify
 FLASHSPEC_HOPPER_NO_MULTICAST=1 san rc_verify200_nomc.txt $RC --kernel-name kns=fsh_scan_kernel $X $A --requests 40 --ops verify
 san rc_verify200_all.txt $RC $X $A --requests 40 --ops verify
 san rc_sample200.txt $RC --kernel-name kns=fsh_scan_kernel $X $A --rows 200 --ops sample
 san rc_verify320.txt $RC --kernel-name kns=fsh_scan_kernel $X $A --requests 64 --ops verify
 san rc_sample48.txt $RC --kernel-name kns=fsh_scan_kernel $X $A --rows 48 --ops sample
 san mut_nodraw_all_test_gpu_filter.txt $F/m_nodraw_all/test_gpu_filter) &
wait

# ---- call 6: trees of 40-128 rows on the final build against fafba76 (tree_ab_call6.txt;
# /tmp/fsb/tree_base: fafba76's tree_bench)
O=/tmp/o6; mkdir -p $O/ab
for r in 1 2 3; do for v in base new; do
  Y=$B/bench/tree_bench; [ $v = base ] && Y=$F/tree_base
  $Y --shapes 151936x4096,262144x3072 --requests 4,8 --nodes 9,11,13,15 --rounds 2 --reps 6 > $O/ab/tree_${v}_$r.txt 2>&1
done; done
