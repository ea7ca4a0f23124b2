#!/usr/bin/env bash
# The two device calls that made this folder (one H200 each; `bash run.sh N`
# for call N), from the repository root with carry ["carry-bin", ".deps"]:
# carry-bin/all.txz packed by bench/tools/carry_pack.sh from a build in
# /tmp/b-full of 70f8563 with split_epilogue.patch applied (new),
# carry-bin/extra.txz (unpacked to /tmp/fsb) holding base/flashspec_bench
# (70f8563's scan_hopper_rows.cu linked into the same library) and
# p0/flashspec_bench (the patch with `const int P = 0` in the split loop:
# the halves at N = 128 and the split epilogue, no k-blocks issued under it).
# Tables, off the device (runs/call1.tgz holds the runs; unpacked into runs/call1/):
#   bench/tools/bench_ab_table.py --methods fs_sample,fs_draft_argmax,fs_verify,cublas_matmul base='runs/call1/ab/split_base_*' p0='runs/call1/ab/split_p0_*' new='runs/call1/ab/split_new_*' > split_ab_table_call1.txt
#   ncu/*.csv: call 2's raw output (two launches each, the second after one warm-up)
set -u
T0=$(date +%s); O=/tmp/o; mkdir -p $O/ab; el() { echo "$1 $(( $(date +%s) - T0 )) s" >> $O/log.txt; }
bash bench/tools/carry_unpack.sh >/dev/null
mkdir -p /tmp/fsb && tar xJf carry-bin/extra.txz -C /tmp/fsb
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
export PATH=/usr/local/cuda/bin:$PATH
B=/tmp/b-full F=/tmp/fsb S=compute-sanitizer
san() { local out=$1; shift; timeout 250 "$@" > $O/$out 2>&1; echo "rc=$?" >> $O/$out; }
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $O/gpu.txt 2>&1
el start
case "${1:-1}" in
1)
timeout 60 $B/bench/flashspec_bench --shapes 151936x4096 --rows 512 --requests 200 --ops sample,argmax,verify --rounds 1 --reps 3 > $O/smoke.txt 2>&1; echo "rc=$?" >> $O/smoke.txt
el smoke
OUT=$O/ab timeout 280 bash bench/tools/ab_rounds.sh -r 3 split \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 256,512,1024 --requests 200 --ops sample,argmax,verify --rounds 1 --reps 8" \
  base=$F/base/flashspec_bench p0=$F/p0/flashspec_bench new=$B/bench/flashspec_bench > $O/ab_split_summary.txt 2>&1
el ab
(cd $B && timeout 200 ctest -L gpu -j4 -R "agree|stat|single|realistic|bad_input|graph" --output-on-failure > $O/ctest_gpu.txt 2>&1)
el tests
;;
2)
# the scan kernel alone under ncu (clean L2, clocks as they run): base, the
# halves at N = 128 without the overlap (p0), and with it (new)
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
for v in base p0 new; do
  BIN=$F/$v/flashspec_bench; [ $v = new ] && BIN=$B/bench/flashspec_bench
  for sh in 151936x4096 262144x3072; do for op in sample argmax; do
    timeout 60 $NCU --clock-control none -k regex:'fshr_scan' -c 2 --csv --metrics $M $BIN --shapes $sh --rows 512 --ops $op --reps 1 --warmup 1 --gemm heuristic > $O/ncu_${v}_${sh}_512_${op}.csv 2>&1
  done; done
done
el ncu
;;
esac
tar czf $OUT/out.tgz -C $O .
