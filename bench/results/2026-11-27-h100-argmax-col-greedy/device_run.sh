#!/usr/bin/env bash
# The device call that made this folder: GPU ctest of the new build, the
# mutant (column never searched) through test_gpu_agree, memcheck, then base
# (1d8c513) and new alternated in three rounds, then ncu at base clocks.
set -u
O=/tmp/o; mkdir -p $O
T0=$(date +%s); el() { echo "$1 $(( $(date +%s) - T0 )) s" >> $O/log.txt; }
bash bench/tools/carry_unpack.sh; python3 -c "import lzma, shutil, sys; shutil.copyfileobj(lzma.open('carry-bin/mut.txz'), sys.stdout.buffer)" | tar xPf -; ls -la /tmp/b-mut/tests
mkdir -p /tmp/fs_deps; for f in .deps/*.deb; do dpkg -x "$f" /tmp/fs_deps; done
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $O/gpu.txt
N=/tmp/b-full; B=/tmp/b-base; M=/tmp/b-mut
( cd $N && ctest -L gpu -j3 --output-on-failure ) > $O/ctest.txt 2>&1; echo "ctest rc=$?" >> $O/log.txt; el ctest
env FS_GPU_TEST_SMALL=1 FLASHSPEC_HOPPER_ROWS_MIN=1 $M/tests/test_gpu_agree > $O/mutant_agree.txt 2>&1
echo "mutant (col never computed) test_gpu_agree rc=$? (must fail)" >> $O/log.txt; el mutant
env FS_GPU_TEST_SMALL=1 FLASHSPEC_HOPPER_ROWS_MIN=1 compute-sanitizer --tool memcheck --error-exitcode 1 $N/tests/test_gpu_agree > $O/san_memcheck.txt 2>&1
echo "memcheck rc=$? $(grep -h 'SUMMARY' $O/san_memcheck.txt | tail -1)" >> $O/log.txt; el memcheck
for r in 1 2 3; do for v in base new; do
  d=$B; [ $v = new ] && d=$N
  $d/bench/flashspec_bench --shapes 151936x4096,128256x8192 --rows 160,256,512,768,1024 \
    --requests 40,64,200 --ops sample,verify --rounds 2 --reps 10 --warmup 3 > $O/b_${v}_$r.txt 2>&1
  $d/bench/tree_bench --shapes 151936x4096,128256x8192 --requests 16,32 --nodes 32 --rounds 2 --reps 6 > $O/t_${v}_$r.txt 2>&1
  el "ab $v $r"
done; done
for v in base new; do d=$B; [ $v = new ] && d=$N
  ncu --clock-control base --csv -k regex:'fshr_scan' --launch-skip 2 --launch-count 3 \
    --metrics gpu__time_duration.sum,sm__cycles_elapsed.max,smsp__inst_executed.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active \
    $d/bench/flashspec_bench --shapes 151936x4096 --rows 1024 --ops sample --rounds 1 --reps 3 --warmup 1 > $O/ncu_$v.csv 2>&1
  el "ncu $v"
done
tar czf $OUT/out.tgz -C $O .
cat $O/log.txt
