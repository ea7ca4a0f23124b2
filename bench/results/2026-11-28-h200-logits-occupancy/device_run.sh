#!/bin/bash
# One device call (an H200).  Three builds of kernels/scan_logits.cu's
# PLAIN kernel, carried as /tmp/fsb/flashspec_bench_{base,b1c4,b1c5}
# (carry-bin/extra.txz): base = two noise blocks a thread, __launch_bounds__
# (256, 2) (117 registers); b1c4 = one block, (256, 4) (64 registers, 28
# bytes of spills; kept); b1c5 = one block, (256, 5) (48, 128 bytes).  The
# GPU suite, memcheck and initcheck ran on the b1c4 build (/tmp/b-full).
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
O=/tmp/o; mkdir -p $O
for r in 1 2; do
  for v in base b1c4 b1c5; do
    FS_TRACE_OUT=$O/tr_${v}_$r.txt CUDA_INJECTION64_PATH=/tmp/b-full/bench/libfs_kernel_trace.so /tmp/fsb/flashspec_bench_$v \
      --shapes 151936x4096,128256x8192 --ops sample,verify --rows 1,16,64,256,1024 --requests 1,16,200 --rounds 2 --reps 10 > $O/bench_${v}_$r.txt
    python3 bench/tools/kernel_trace_table.py $O/tr_${v}_$r.txt > $O/tt_${v}_$r.txt
  done
done
( cd /tmp/b-full && ctest -j 4 -R gpu --output-on-failure > $O/ctest_gpu.txt 2>&1 )
for tool in memcheck initcheck; do
  FS_GPU_TEST_SMALL=1 compute-sanitizer --tool $tool --error-exitcode 1 /tmp/b-full/tests/test_gpu_agree > $O/san_${tool}_agree.txt 2>&1
done
tar czf $OUT/out.tgz -C $O .
# second call: FULL mode, builds filter_bench_{base,f13,f14} (two blocks and
# two CTAs; one block and three CTAs, kept; one block and four CTAs)
for r in 1 2; do
  for v in base f13 f14; do
    FS_TRACE_OUT=$O/tr_${v}_$r.txt CUDA_INJECTION64_PATH=/tmp/b-full/bench/libfs_kernel_trace.so /tmp/fsb/filter_bench_$v \
      --shapes 151936x4096 --rows 1,16,64 --logits 1 --rounds 2 --reps 10 > $O/fb_${v}_$r.txt
  done
done
( cd /tmp/b-full && ctest -j 4 -R "test_gpu_(filter|agree|tree|stat|graph|bad_input)$" --output-on-failure > $O/ctest_gpu_full.txt 2>&1 )
# full_scan.txt: the FULL kernel's durations from tr_*.txt, thirds of each
# run's calls (1, 16, 64 rows)
