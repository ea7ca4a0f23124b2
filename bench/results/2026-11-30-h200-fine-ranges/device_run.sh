#!/usr/bin/env bash
# The nine device calls that made this folder (one H200 each; `bash run.sh N`
# ran stage N: calls 1-9 = stages 1, 2, 3, 4, 5, 7, 8, 9, 10), from the
# repository root with carry ["carry-bin", ".deps"]: carry-bin/all.txz
# packed by bench/tools/carry_pack.sh from the build in /tmp/b-full of the
# stage's code, carry-bin/extra.txz (unpacked to /tmp/fsb) holding
# base/flashspec_bench (000fc3d's scan_hopper_rows.cu linked into the same
# library) and the stage's variants, each the build's scan_hopper_rows.cu
# compiled with one temporary switch: FSX_FINE_GRAN (environment: the
# units' tokens, stages 2 and 4), nonarrow (no narrow-tile code), p40 (the
# producer at 40 registers for argmax too), nosh (no fine units in the
# 192-row lone pairs: the committed form), mut (mutant_narrow_short.patch,
# test_gpu_agree relinked).
set -u
source bench/tools/device_env.sh # carry_unpack.sh unpacks extra.txz into /tmp/fsb
mkdir -p $O/ab
F=/tmp/fsb
case "${1:-1}" in
1)
timeout 60 $B/bench/flashspec_bench --shapes 128256x8192 --rows 192 --requests 40 --ops sample,argmax,verify --rounds 1 --reps 3 > $O/smoke.txt 2>&1; echo "rc=$?" >> $O/smoke.txt
el smoke
OUT=$O/ab timeout 300 bash bench/tools/ab_rounds.sh -r 3 fine \
  "--shapes 128256x8192,262144x3072,151936x4096 --rows 100,128,160,192,256,320 --requests 40 --ops sample,argmax,verify --rounds 1 --reps 8" \
  base=$F/base/flashspec_bench new=$B/bench/flashspec_bench > $O/ab_fine_summary.txt 2>&1
el ab
(cd $B && timeout 220 ctest -L gpu -j4 -R "agree|stat|single|realistic|bad_input|graph" --output-on-failure > $O/ctest_gpu.txt 2>&1)
el tests
;;
2)
OUT=$O/ab timeout 300 bash bench/tools/ab_rounds.sh -r 3 gran \
  "--shapes 128256x8192,262144x3072,151936x4096 --rows 100,128,192,256 --requests 40 --ops sample,argmax,verify --rounds 1 --reps 8" \
  base=$F/base/flashspec_bench g32=$B/bench/flashspec_bench g64=$B/bench/flashspec_bench@FSX_FINE_GRAN=64 g128=$B/bench/flashspec_bench@FSX_FINE_GRAN=128 > $O/ab_gran_summary.txt 2>&1
el ab
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
M=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,dram__bytes_read.sum
for v in base g32 g128; do
  BIN=$B/bench/flashspec_bench; [ $v = base ] && BIN=$F/base/flashspec_bench
  G=32; [ $v = g128 ] && G=128
  for sh in 151936x4096 128256x8192; do for r in 192 128; do
    FSX_FINE_GRAN=$G timeout 60 $NCU --clock-control none -k regex:'fshr_scan' -c 2 --csv --metrics $M $BIN --shapes $sh --rows $r --ops argmax --reps 1 --warmup 1 --gemm heuristic > $O/ncu_${v}_${sh}_${r}_argmax.csv 2>&1
  done; done
done
el ncu
;;
3)
CO=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
for v in base new; do
  BIN=$B/bench/flashspec_bench; [ $v = base ] && BIN=$F/base/flashspec_bench
  $CO -sass $BIN > /tmp/sass_$v.txt 2>&1
  awk '/Function : _ZN4fshr16fshr_scan_kernelILi3ELb1ELi2ELb0ELb0ELb0ELb1ELb0E/{p=1} p&&/Function : /&&!/ILi3ELb1ELi2ELb0ELb0ELb0ELb1ELb0E/{p=0} p' /tmp/sass_$v.txt > $O/sass_${v}_3sh_argmax.txt
  awk '/Function : _ZN4fshr16fshr_scan_kernelILi2ELb1ELi1ELb0ELb0ELb0ELb0ELb0E/{p=1} p&&/Function : /&&!/ILi2ELb1ELi1ELb0ELb0ELb0ELb0ELb0E/{p=0} p' /tmp/sass_$v.txt > $O/sass_${v}_2cl1_argmax.txt
  grep "Function : _ZN4fshr" /tmp/sass_$v.txt > $O/funcs_$v.txt
done
gzip $O/sass_*
el sass
;;
4)
OUT=$O/ab timeout 300 bash bench/tools/ab_rounds.sh -r 3 nn \
  "--shapes 128256x8192,262144x3072,151936x4096 --rows 128,192,256 --ops sample,argmax --rounds 1 --reps 8" \
  base=$F/base/flashspec_bench g128=$B/bench/flashspec_bench@FSX_FINE_GRAN=128 nn128=$F/nonarrow/flashspec_bench@FSX_FINE_GRAN=128 g32=$B/bench/flashspec_bench > $O/ab_nn_summary.txt 2>&1
el ab
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
M=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,dram__bytes_read.sum
for v in base nn128 g128; do
  BIN=$B/bench/flashspec_bench; [ $v = base ] && BIN=$F/base/flashspec_bench; [ $v = nn128 ] && BIN=$F/nonarrow/flashspec_bench
  FSX_FINE_GRAN=128 timeout 60 $NCU --clock-control none -k regex:'fshr_scan' -c 2 --csv --metrics $M $BIN --shapes 151936x4096 --rows 192 --ops argmax --reps 1 --warmup 1 --gemm heuristic > $O/ncu_${v}_192.csv 2>&1
done
el ncu
;;
5)
OUT=$O/ab timeout 300 bash bench/tools/ab_rounds.sh -r 3 fine \
  "--shapes 128256x8192,262144x3072,151936x4096 --rows 128,192,200,256,320,384,512 --requests 40,64 --ops sample,argmax,verify --rounds 1 --reps 8" \
  base=$F/base/flashspec_bench new=$B/bench/flashspec_bench > $O/ab_fine_summary.txt 2>&1
el ab
(FLASHSPEC_HOPPER_ROWS_MIN=1 timeout 150 $F/mut/test_gpu_agree > $O/mut_narrow_short.txt 2>&1; echo "rc=$?" >> $O/mut_narrow_short.txt)
el mutant
(cd $B && timeout 240 ctest -L gpu -j4 -R "agree|stat|single|realistic|bad_input|graph" --output-on-failure > $O/ctest_gpu.txt 2>&1)
el tests
;;
6)
for tool in memcheck racecheck; do
  FS_GPU_TEST_SMALL=1 FS_GPU_TEST_SMALL_ROWS=460 FLASHSPEC_HOPPER_ROWS_MIN=1 \
    san $tool san_${tool}_agree460.txt 250 $B/tests/test_gpu_agree
  el $tool
done
;;
7)
OUT=$O/ab timeout 300 bash bench/tools/ab_rounds.sh -r 3 prod \
  "--shapes 128256x8192,262144x3072,151936x4096 --rows 128,192,256,320,512 --requests 40 --ops sample,argmax,verify --rounds 1 --reps 8" \
  base=$F/base/flashspec_bench new=$B/bench/flashspec_bench p40=$F/p40/flashspec_bench > $O/ab_prod_summary.txt 2>&1
el ab
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
M=gpu__time_duration.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
for v in base p40; do
  BIN=$F/$v/flashspec_bench
  for sh in 151936x4096 128256x8192; do
  timeout 60 $NCU --clock-control none -k regex:'fshr_scan' -c 2 --csv --metrics $M $BIN --shapes $sh --rows 192 --ops argmax --reps 1 --warmup 1 --gemm heuristic > $O/ncu_${v}_${sh}_192.csv 2>&1
  done
done
el ncu
;;
8)
OUT=$O/ab timeout 300 bash bench/tools/ab_rounds.sh -r 3 fin \
  "--shapes 128256x8192,262144x3072,151936x4096 --rows 128,160,192,200,256,320,384,512,1024 --requests 40,64 --ops sample,argmax,verify --rounds 1 --reps 6" \
  base=$F/base/flashspec_bench new=$B/bench/flashspec_bench nosh=$F/nosh/flashspec_bench > $O/ab_fin_summary.txt 2>&1
el ab
(cd $B && timeout 260 ctest -L gpu -j4 -R "agree|stat|single|realistic|bad_input|graph|tree_rowsm|tree_pairs" --output-on-failure > $O/ctest_gpu.txt 2>&1)
el tests
;;
9)
(cd $B && timeout 200 ctest -L gpu -j4 -R "agree|stat|single|bad_input|graph" --output-on-failure > $O/ctest_gpu_final.txt 2>&1)
el tests
for tool in memcheck racecheck; do
  FS_GPU_TEST_SMALL=1 FS_GPU_TEST_SMALL_ROWS=460 FLASHSPEC_HOPPER_ROWS_MIN=1 \
    san $tool san_${tool}_agree460.txt 150 $B/tests/test_gpu_agree
  el $tool
done
;;
10)
timeout 200 $B/bench/flashspec_bench --shapes 151936x4096,128256x8192,262144x3072 --rows 128,192,256,320,512,768,1024 --requests 40,64,200 --ops sample,argmax,verify --json $O/bench.json > $O/bench.txt 2>&1; echo "rc=$?" >> $O/bench.txt
el sweep
;;
esac
tar czf $OUT/out.tgz -C $O .
