#!/usr/bin/env bash
# Session 10, run 5 (review): the rows kernel filling an out-of-range row's
# descriptor with fs_row_desc_skip() (this tree) instead of four hand stores
# (ab_base.tar = 153304b).  Its SASS moves by register names and alignment
# NOPs (earlier code-placement changes in this kernel cost up to 18%), so:
# agreement and the quick GPU tests, then two alternating rounds at row
# counts with out-of-range rows (136, 200, 320) and without (256).
source "$(dirname "$0")/common.sh"
exec > >(tee $OUT/run5.txt) 2>&1
mkdir -p /tmp/base && tar -xf ab_base.tar -C /tmp/base
( build_bench /tmp/base-build /tmp/base ) > $OUT/build_base.txt 2>&1 &
bpid=$!
build_tests_bench
wait $bpid; cat $OUT/build_base.txt
A=build-sm90a/bench/flashspec_bench B=/tmp/base-build/bench/flashspec_bench
ls -la $A $B >/dev/null || exit 1
timeout 30 $A --shapes 151936x4096 --rows 136,320 --requests 28 --reps 3 --warmup 1 > /dev/null 2>&1 \
  || { echo "smoke failed"; exit 1; }
run_tests '^test_gpu_agree$|^test_gpu_agree_rows192$|^test_gpu_bad_input$|^test_gpu_graph$|^test_gpu_stat_rowsm$' 260
ab_rounds ab "--shapes 151936x4096,128256x8192 --rows 136,200,256,320 --requests 28,64 --reps 25 --warmup 3" \
  new=$A base=$B
