#!/usr/bin/env bash
# Sourced by a results folder's device script (bench/results/*/device_run.sh)
# on the device, from the repository root with carry ["carry-bin", ".deps"]:
# unpacks the carried builds (carry_unpack.sh), puts the test dependencies,
# CUDA's libraries and its tools on the paths, writes the GPU's name, clock
# and power limit to $O/gpu.txt, and defines
#   O      the folder the call's outputs go to (/tmp/o; a script ends with
#          tar czf $OUT/out.tgz -C $O .)
#   B      the carried build tree ($FS_BUILD_DIR, default /tmp/b-full: where
#          carry_pack.sh packed it from)
#   el NAME
#          appends "NAME <seconds since the start>" to $O/log.txt
#   san TOOL FILE SECONDS COMMAND...
#          compute-sanitizer's TOOL over COMMAND (racecheck reporting every
#          hazard), output and exit status in $O/FILE; assignments before
#          `san` reach COMMAND's environment, e.g.
#          FS_GPU_TEST_SMALL=1 san memcheck m.txt 100 $B/tests/test_gpu_agree
#   ncu_csv FILE SECONDS NCU_ARGS... COMMAND...
#          Nsight Compute's CSV export of COMMAND in $O/FILE (with its
#          errors), e.g. one launch of the scan with some metrics:
#          ncu_csv ncu/a.csv 60 --clock-control base -k regex:fshr_scan -c 1 \
#            --metrics gpu__time_duration.sum $B/bench/flashspec_bench --rows 512
#   ktrace NAME SECONDS COMMAND...
#          a kernel timeline of COMMAND (bench/tools/kernel_trace.c, built in
#          $B) in $O/trace/NAME.txt.gz, COMMAND's own output in
#          $O/trace/NAME.bench.txt; bench/tools/kernel_trace_table.py reads it
#   ktrace_rounds ROUNDS "ARGS" NAME=BINARY ...
#          ktrace of each BINARY with ARGS in turn (NAME_R, 150 s each),
#          ROUNDS times: builds alternated inside one call
T0=$(date +%s)
O=/tmp/o
# shellcheck disable=SC2034  # B is read by the sourcing script
B=${FS_BUILD_DIR:-/tmp/b-full}
mkdir -p "$O"
el() { echo "$1 $(($(date +%s) - T0)) s" >>"$O/log.txt"; }
san() {
    local tool=$1 file=$2 secs=$3 x=()
    shift 3
    [ "$tool" = racecheck ] && x=(--racecheck-report all)
    local s
    s=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
    timeout "$secs" "$s" --tool "$tool" "${x[@]}" --error-exitcode 1 "$@" >"$O/$file" 2>&1
    echo "rc=$?" >>"$O/$file"
}
ncu_csv() {
    local file=$1 secs=$2 n
    shift 2
    n=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
    mkdir -p "$(dirname "$O/$file")"
    timeout "$secs" "$n" --csv "$@" >"$O/$file" 2>&1
}
ktrace() {
    local name=$1 secs=$2 lib
    shift 2
    lib=$(ls "$B/bench/libfs_kernel_trace.so" 2>/dev/null || ls "$B/libfs_kernel_trace.so")
    mkdir -p "$O/trace"
    FS_TRACE_OUT="$O/trace/$name.txt" CUDA_INJECTION64_PATH="$lib" timeout "$secs" "$@" \
        >"$O/trace/$name.bench.txt" 2>&1
    gzip -f "$O/trace/$name.txt"
}
ktrace_rounds() {
    local rounds=$1 args=$2 r v
    shift 2
    for ((r = 1; r <= rounds; ++r)); do
        for v in "$@"; do
            # shellcheck disable=SC2086  # args are the benchmark's flags, split on purpose
            ktrace "${v%%=*}_$r" 150 "${v#*=}" $args
        done
    done
}
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
export PATH=/usr/local/cuda/bin:$PATH
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv >"$O/gpu.txt" 2>&1
el start
