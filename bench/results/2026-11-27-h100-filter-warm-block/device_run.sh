#!/bin/bash
set -u
cd "$(dirname "$0")/.."
bash bench/tools/carry_unpack.sh
python3 -c "import lzma,tarfile; tarfile.open(fileobj=lzma.open('carry-bin/extra.txz')).extractall('/tmp/fsb')"
rm -rf /tmp/o; mkdir -p /tmp/o
nvidia-smi --query-gpu=name,power.limit --format=csv > /tmp/o/gpu.txt
OUT_ALL=$OUT
OUT=/tmp/o FS_PREBUILT=1 FS_BUILD_DIR=/tmp/b-full FS_SAN_TESTS=test_gpu_filter FS_SAN_LARGE=0 bash bench/tools/run_gpu_tests.sh > /tmp/o/run_gpu_tests.out 2>&1
tail -30 /tmp/o/gpu_tests_summary.txt
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
ls /tmp/fs_deps >/dev/null 2>&1 || for f in .deps/*.deb; do dpkg -x "$f" /tmp/fs_deps; done
B=/tmp/fsb
$B/tests/test_gpu_filter_mut > /tmp/o/mutant_warm_hands_over.txt 2>&1; echo "mutant rc=$? (nonzero = caught)" | tee -a /tmp/o/mutant_warm_hands_over.txt
for v in 0 1; do
  FLASHSPEC_FILTER_WARM=$v $B/bench/filter_bench_probe --rounds 1 --reps 10 --rows 1,4,64 > /tmp/o/probe_w${v}.txt 2>&1
done
for r in 1 2 3; do
  for v in 0 1; do
    FLASHSPEC_FILTER_WARM=$v $B/bench/filter_bench --rounds 2 --reps 10 > /tmp/o/filter_bench_warm${v}_$r.txt 2>&1
  done
done
tar czf $OUT_ALL/out.tgz -C /tmp/o .
