#!/usr/bin/env bash
# Session 8, run 3: why fs_verify's scan takes ~20% longer than fs_sample's at
# 320 rows (run 2, ncu: 1.00-1.02 ms vs 0.83 ms, same kernel and grid): a
# probe build whose rows kernel drops the rows' excluded / selected token
# (FSHR_PROBE_NO_EXCL; verify results wrong) against the normal build, ncu
# kernel durations and benchmark times of verify 320 rows (64 requests) and
# sample 320 rows, 151936 x 4096.
source "$(dirname "$0")/common.sh"
( [ -f build-px/CMakeCache.txt ] || cmake -S . -B build-px -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES=90a-real -DFLASHSPEC_TESTS=OFF -DFLASHSPEC_BENCH=ON \
    -DCMAKE_CUDA_FLAGS=-DFSHR_PROBE_NO_EXCL=1 >/dev/null
  cmake --build build-px -j8 --target flashspec_bench >/dev/null 2>&1 || echo "BUILD FAILED (px)" ) > $OUT/build_px.txt 2>&1 &
build_bench build-sm90a
wait; cat $OUT/build_px.txt
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
for b in sm90a px; do
  A=build-$b/bench/flashspec_bench
  for op in sample verify; do
    timeout 60 "$NCU" --clock-control none -k regex:'^fshr_' -c 2 --metrics gpu__time_duration.sum \
      $A --shapes 151936x4096 --rows 320 --requests 64 --ops $op --reps 1 --warmup 1 > $OUT/ncu_${b}_$op.txt 2>&1
    echo "== ncu $b $op: $(grep -E 'gpu__time_duration' $OUT/ncu_${b}_$op.txt | awk '{print $(NF-1), $NF}' | paste -sd' ')"
  done
done
summ() { grep -E '^(sample|argmax|verify) +(fs_|cublas_matmul)' $1 | awk '{print $1,$2,$3,$5,$7,$9}' | paste -sd' '; }
for round in 1 2; do
  for b in sm90a px; do
    timeout 60 build-$b/bench/flashspec_bench --shapes 151936x4096,128256x8192 --rows 320 --requests 64 --ops sample,verify --reps 30 --warmup 3 > $OUT/t_${b}_$round.txt 2>&1
    echo "== $b $round: $(summ $OUT/t_${b}_$round.txt)"
  done
done
