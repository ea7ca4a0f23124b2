#!/usr/bin/env bash
set -u
T0=$(date +%s); el() { echo "$1 $(( $(date +%s) - T0 )) s" >> /tmp/o/log.txt; }
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu
ROOT=$PWD; OUT_ALL=$OUT; O=/tmp/o; mkdir -p $O
nvidia-smi --query-gpu=name,power.limit --format=csv > $O/gpu.txt
(cd /tmp/b-full && timeout 200 ctest -R '^test_gpu_(single|agree|graph|stat|bad_input)$' --output-on-failure) > $O/ctest_gpu.txt 2>&1; el ctest
for tool in memcheck initcheck; do
  FS_GPU_TEST_SMALL=1 timeout 60 /usr/local/cuda/bin/compute-sanitizer --tool $tool --error-exitcode 1 /tmp/b-full/tests/test_gpu_single > $O/san_${tool}_test_gpu_single.txt 2>&1; el "san $tool $?"
done
for r in 1 2; do for v in base C; do for S in 151936x4096 128256x8192 262144x3072; do
  timeout 60 /tmp/fsb/flashspec_bench_probe$v --shapes $S --rows 1,4 --ops sample,argmax --rounds 2 --reps 10 > $O/probe_${v}_${r}_$S.txt 2>&1
done; done; done; el probe
for v in base C; do python3 bench/tools/tail_probe_table.py $O/probe_${v}_*.txt > $O/tail_probe_$v.txt; done
OUT=$O bash bench/tools/ab_rounds.sh -r 3 calls "--shapes 151936x4096,128256x8192,262144x3072 --rows 1,2,4,16 --requests 1,2 --ops sample,argmax,verify --reps 20" \
  base=/tmp/fsb/flashspec_bench_base R=/tmp/fsb/flashspec_bench_new A=/tmp/fsb/flashspec_bench_A C=/tmp/fsb/flashspec_bench_C > $O/ab_log.txt 2>&1; el ab
python3 bench/tools/bench_ab_table.py base="$O/calls_base_*.txt" R="$O/calls_R_*.txt" A="$O/calls_A_*.txt" C="$O/calls_C_*.txt" > $O/ab_table.txt 2>&1
cp $O/log.txt $O/ab_table.txt $O/tail_probe_*.txt $OUT_ALL/ 2>/dev/null; tail -5 $O/ctest_gpu.txt
tar czf $OUT_ALL/out.tgz -C $O .
cat $O/log.txt
