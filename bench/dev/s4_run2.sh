#!/usr/bin/env bash
# Runs on commit 31c9292 (the multicast; reverted in 1aa1774): FLASHSPEC_HOPPER_NO_MULTICAST exists only there.
# Session 4, run 2: the cluster arrival without .release.cluster (no MEMBAR);
# ncu at 256 rows, then the multicast A/B at 256/320 rows and 160 forced.
source "$(dirname "$0")/common.sh"
build_bench
bash bench/dev/s4_prof1.sh 2>&1 | grep -E "===|gpu__time|lts__t_bytes|tensor|membar|long_score|wait "
S4_SKIP_TESTS=1 bash bench/dev/s4_run1.sh
