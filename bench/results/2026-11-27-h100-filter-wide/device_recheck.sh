#!/bin/bash
# Device call after factoring the wide resolve's ranks and the top-k prefix
# into shared helpers: test_gpu_filter and test_gpu_tree again, memcheck of
# test_gpu_filter, and filter_bench on 151936 x 4096 (head / new alternated
# twice, 1 and 64 rows).
set -u
bash bench/tools/carry_unpack.sh >/dev/null
python3 -c "import lzma,tarfile; tarfile.open(fileobj=lzma.open('carry-bin/extra.txz')).extractall('/tmp/fsb')"
mkdir -p /tmp/fs_deps; for f in .deps/*.deb; do dpkg -x "$f" /tmp/fs_deps; done
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
ROOT=$PWD
mkdir -p /tmp/o
(cd /tmp/b-full && timeout 100 ctest -R '^test_gpu_(filter|tree)$' --output-on-failure) > /tmp/o/recheck_ctest.txt 2>&1
echo "ctest rc=$?" | tee -a /tmp/o/recheck_ctest.txt; grep -E 'Test +#|tests passed' /tmp/o/recheck_ctest.txt
/tmp/b-full/tests/test_gpu_filter > /tmp/o/recheck_test_gpu_filter.txt 2>&1; echo "test_gpu_filter rc=$?"
grep -E 'law|long prefix.*(default|WIDE)' /tmp/o/recheck_test_gpu_filter.txt
FS_GPU_TEST_SMALL=1 timeout 60 /usr/local/cuda/bin/compute-sanitizer --tool memcheck --error-exitcode 1 \
  /tmp/b-full/tests/test_gpu_filter > /tmp/o/recheck_memcheck.txt 2>&1; echo "memcheck rc=$?" | tee -a /tmp/o/recheck_memcheck.txt
ARGS="--rounds 2 --reps 10 --rows 1,64 --shapes 151936,4096"
for r in 1 2; do for b in head new; do
  timeout 60 /tmp/fsb/filter_bench_$b $ARGS > /tmp/o/recheck_bench_${b}_$r.txt 2>&1
done; done
python3 $ROOT/bench/tools/filter_ab_table.py head='/tmp/o/recheck_bench_head_*.txt' new='/tmp/o/recheck_bench_new_*.txt' > /tmp/o/recheck_ab_table.txt
grep -E 'sample|verify' /tmp/o/recheck_ab_table.txt | grep -vE 'cublas' | head -60
tar czf $OUT/recheck.tgz -C /tmp/o .
