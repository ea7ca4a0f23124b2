#!/usr/bin/env bash
# The device calls behind this folder (one H200 each, in this order), with
# builds made off the device and carried (bench/tools/carry_pack.sh
# /tmp/b-full; variants linked as /tmp/mkvar.sh-style swaps of one kernel
# object into the static library, compiled with the macros of
# variants.patch: FS_EXP_KS / FS_EXP_KS_BN k-boxes a stage, FS_EXP_CONS=1
# consumers that only release stages, FS_EXP_CONS=2 no epilogue,
# FS_EXP_PROMO the W and H maps' L2 promotion, FS_EXP_EF W evict_first,
# FS_EXP_CONTIG a CTA's tiles contiguous; FS_EXP_RPLAIN, not in the patch,
# the rows kernel's W evict_first without promotion, as landed for <= 128
# rows).
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
C=/tmp/fsb; N=/tmp/b-full/bench; O=/tmp/o; mkdir -p $O/runs
ab() { OUT=$O/runs bash bench/tools/ab_rounds.sh -r 2 "$@" > /dev/null; }
# 1. sweep_promoted.txt: the sweep with the stream every chip had (163aaa2's kernels)
$N/flashspec_bench > $O/sweep_promoted.txt
# 2. kboxes_promoted_ab.txt: 2 (base), 4 (blocks <= 32 rows) or 1 k-boxes a stage, promoted
ab ks "--shapes 151936x4096,128256x8192 --rows 1,16,64,128 --requests 1,16,32 --ops sample,argmax,verify --rounds 2 --reps 10" \
  base=$N/flashspec_bench ks4=$C/flashspec_bench_ks4 ks1=$C/flashspec_bench_ks1
#    ncu_16rows_vs_cublas.csv.gz: the 16-row tile kernel and cuBLAS's kernels
ncu --clock-control none -k regex:'fsh_scan|nvjet|gemv|gemm' --section SpeedOfLight --section MemoryWorkloadAnalysis \
  --section WarpStateStats --section LaunchStats --csv --page details $N/flashspec_bench --shapes 151936x4096 \
  --rows 1,16 --ops sample --rounds 1 --reps 1 --warmup 0 > $O/ncu_16rows_vs_cublas.csv
# 3. consumers_promotion_ab.txt: consumers that only release stages, no epilogue, 128-byte / no promotion
ab v "--shapes 151936x4096 --rows 1,16,64 --ops sample --rounds 2 --reps 10" base=$N/flashspec_bench \
  nocons=$C/flashspec_bench_nocons noepi=$C/flashspec_bench_noepi p128=$C/flashspec_bench_p128 pnone=$C/flashspec_bench_pnone
for v in nocons base; do  # ncu_16rows_no_consumers / _promoted
  ncu --clock-control none -k regex:'fsh_scan' --section SpeedOfLight --section MemoryWorkloadAnalysis \
    --section WarpStateStats --metrics dram__bytes_read.sum,lts__t_sectors_srcunit_tex_op_read.sum \
    --csv --page details $C/flashspec_bench_$v --shapes 151936x4096 --rows 16 --ops sample --rounds 1 --reps 1 --warmup 0
done
# 4. no_promotion_ab.txt (pnall: both kernels unpromoted; pks1 / pks4: and 1 / 4 k-boxes),
#    rows_kernel_no_promotion_ab.txt (192-1024 rows)
ab t "--shapes 151936x4096,128256x8192 --rows 1,16,64,128 --requests 1,16,32 --ops sample,argmax,verify --rounds 2 --reps 10" \
  base=$N/flashspec_bench pnall=$C/flashspec_bench_pnall pks1=$C/flashspec_bench_pks1 pks4=$C/flashspec_bench_pks4
ab r "--shapes 151936x4096,128256x8192 --rows 192,256,512,1024 --requests 64,200 --ops sample,argmax,verify --rounds 2 --reps 10" \
  base=$N/flashspec_bench pnall=$C/flashspec_bench_pnall
# 5. evict_first_ab.txt: unpromoted with W evict_first (pef, pks1ef), contiguous tiles (pcontig)
ab t "--shapes 151936x4096,128256x8192 --rows 1,16,64 --requests 1,16 --ops sample,verify --rounds 2 --reps 10" \
  pnall=$C/flashspec_bench_pnall pks1=$C/flashspec_bench_pks1 pef=$C/flashspec_bench_pef \
  pks1ef=$C/flashspec_bench_pks1ef pcontig=$C/flashspec_bench_pcontig
# 6. tile_stream_ab.txt: the landed switch (tile kernel only), promoted forced against the H200 default
ab ws "--shapes 151936x4096,128256x8192,262144x3072 --rows 1,4,16,64,128,160 --requests 1,4,16,32 --rounds 2 --reps 10" \
  promoted=$N/flashspec_bench@FLASHSPEC_W_STREAM=0 plain=$N/flashspec_bench
FS_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck --error-exitcode 1 /tmp/b-full/tests/test_gpu_agree  # san_*.txt
FS_GPU_TEST_SMALL=1 compute-sanitizer --tool initcheck --error-exitcode 1 /tmp/b-full/tests/test_gpu_bad_input
FS_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck --error-exitcode 1 /tmp/b-full/tests/test_gpu_filter
# 7. rows_kernel_stream_ab.txt: the rows kernel unpromoted with evict_first at every row count;
#    kboxes2_80_96_rows_ab.txt: 2 k-boxes a stage up to 96-row blocks
ab rp "--shapes 151936x4096,128256x8192,262144x3072 --rows 128,192,256,512,1024 --requests 32,64,200 --rounds 2 --reps 10" \
  base=$N/flashspec_bench rplain=$C/flashspec_bench_rplain
ab ks "--shapes 151936x4096,128256x8192,262144x3072 --rows 64,80,96 --requests 16 --rounds 2 --reps 10" \
  base=$N/flashspec_bench tks2=$C/flashspec_bench_tks2
# 8. the final build: GPU tests (ctest_gpu.txt), then final_stream_ab.txt (runs/)
(cd /tmp/b-full && ctest -j 4 -R gpu --output-on-failure)
ab ws "--shapes 151936x4096,128256x8192,262144x3072 --rows 1,16,64,100,128,192 --requests 1,16,20 --rounds 2 --reps 10" \
  promoted=$N/flashspec_bench@FLASHSPEC_W_STREAM=0 plain=$N/flashspec_bench
# each table: python3 bench/tools/bench_ab_table.py [--methods ...] NAME="$O/runs/TAG_NAME_*.txt" ...
# 9. after the final build: w_box_64_rows_ab.txt (FS_EXP_BOX64: W loaded as two 64-row boxes a
#    k-box, the map's box 64 rows) and tile_kernel_to_160_rows_ab.txt
ab box "--shapes 151936x4096,128256x8192,262144x3072 --rows 1,16,64 --requests 1,16 --rounds 2 --reps 10" \
  base=$N/flashspec_bench box64=$C/flashspec_bench_box64
ab rmin "--shapes 151936x4096,128256x8192,262144x3072 --rows 100,128,160 --requests 20,32 --rounds 2 --reps 10" \
  rows97=$N/flashspec_bench tile160=$N/flashspec_bench@FLASHSPEC_HOPPER_ROWS_MIN=161
# 10. tp_test.log, tp_tree_test.log: the final build on nvidia-h200-x2
#     (NCCL_NVLS_ENABLE=0; libnccl from the image's python nvidia-nccl package)
/tmp/b-full/tests/test_gpu_tp > $O/tp_test.log; /tmp/b-full/tests/test_gpu_tp_tree > $O/tp_tree_test.log
# 11. ctest_wstream.txt and mutant_*.txt (the W maps' box rows halved on the plain path only)
(cd /tmp/b-full && ctest -j 4 -R wstream --output-on-failure)
for env in "FLASHSPEC_W_STREAM=0" "FLASHSPEC_W_STREAM=1" "FLASHSPEC_HOPPER_ROWS_MIN=1 FLASHSPEC_W_STREAM=1"; do
  env $env timeout 60 $C/test_gpu_stat_wsmut
done
