#!/usr/bin/env bash
# The device calls behind this folder: builds made off the device and
# carried (bench/tools/carry_pack.sh /tmp/b-full; base = 676ac91's
# flashspec_bench, mutants m1-m4 linked with tools like /tmp/mkvar.sh's
# steps into /tmp/fsb, in carry-bin/extra.txz).
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu
O=$OUT
(cd /tmp/b-full && ctest -R '^test_gpu_(agree|bad_input|filter|tree|stat|graph|realistic)$' --output-on-failure) > $O/ctest_gpu.txt 2>&1
for tool in memcheck initcheck; do
  FS_GPU_TEST_SMALL=1 compute-sanitizer --tool $tool --error-exitcode 1 /tmp/b-full/tests/test_gpu_bad_input > $O/san_${tool}_bad_input.txt 2>&1
done
FS_GPU_TEST_SMALL=1 compute-sanitizer --tool memcheck --error-exitcode 1 /tmp/b-full/tests/test_gpu_agree > $O/san_memcheck_agree.txt 2>&1
/tmp/fsb/test_gpu_bad_input_m1 > $O/mutant_m1.txt 2>&1
for m in m2 m3 m4; do /tmp/fsb/test_gpu_agree_$m > $O/mutant_$m.txt 2>&1; done
OUT=$O/runs bash bench/tools/ab_rounds.sh -r 2 logits "--shapes 151936x4096,128256x8192 --rows 1,16,64,256,1024 --requests 1,16,64,200 --ops sample,argmax,verify --rounds 2 --reps 10" \
  base=/tmp/fsb/flashspec_bench_base new=/tmp/fsb/flashspec_bench_new
python3 bench/tools/bench_ab_table.py --methods cublas+fs_sample_logits,cublas+fs_draft_argmax_logits,cublas+fs_verify_logits,cublas+gumbel,cublas+argmax,cublas_matmul \
  base="$O/runs/logits_base_*.txt" new="$O/runs/logits_new_*.txt" > $O/ab_table.txt
for v in base new; do   # ncu_before (base) and ncu_after (new, metrics only)
  ncu --clock-control none -k regex:'scan_logits|k_gumbel' --section SpeedOfLight --section Occupancy \
    --section WarpStateStats --section LaunchStats --section InstructionStats --csv --page details \
    /tmp/fsb/flashspec_bench_$v --shapes 151936x4096 --rows 64,1024 --ops sample,argmax --rounds 1 --reps 1 \
    --warmup 0 --gemm heuristic > $O/ncu_$v.csv
done
/tmp/b-full/tests/test_gpu_agree > $O/test_gpu_agree_with_ties.txt 2>&1   # after the ties test was added
