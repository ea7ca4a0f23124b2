#!/bin/bash
# The twins' A/B (the last of the device calls; builds made off the device
# and carried with bench/tools/carry_pack.sh /tmp/b-full; P: the same
# build's benchmark with -DFSHR_PROBE_NO_TWIN=1 for scan_hopper_rows.cu).
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
O=/tmp/o; mkdir -p $O
B=/tmp/b-full/bench/flashspec_bench
P=/tmp/fsb/flashspec_bench_pairsonly
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
M=gpu__time_duration.sum,dram__bytes_read.sum,lts__t_bytes.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
for v in twin notwin pairsonly; do
  e=""; [ $v = notwin ] && e="FLASHSPEC_HOPPER_TWIN=0"
  b=$B; [ $v = pairsonly ] && b=$P
  env $e timeout 120 $NCU --cache-control none --clock-control none --kernel-name regex:fshr_scan \
    --csv --metrics $M $b --shapes 151936x4096 --rows 320 --ops sample,argmax --reps 1 --warmup 0 \
    --rounds 1 > $O/ncu_$v.csv 2>&1
done
OUT2=$O/ab
OUT=$OUT2 timeout 260 bash bench/tools/ab_rounds.sh -r 2 tw \
  "--shapes 151936x4096,128256x8192 --rows 272,300,320 --requests 52,64 --rounds 2 --reps 10" \
  twin=$B notwin=$B@FLASHSPEC_HOPPER_TWIN=0 pairsonly=$P > $O/ab_twin.txt 2>&1
python3 bench/tools/bench_ab_table.py --methods cublas_matmul,cublas+argmax,fs_sample,fs_draft_argmax,fs_verify \
  twin="$OUT2/tw_twin_*.txt" notwin="$OUT2/tw_notwin_*.txt" pairsonly="$OUT2/tw_pairsonly_*.txt" > $O/ab_table.txt
(cd /tmp/b-full && timeout 150 ctest -j 4 -R gpu --output-on-failure) > $O/ctest.txt 2>&1
tar czf $OUT/out.tgz -C $O .
