#!/usr/bin/env bash
# The device call that made this folder (one H200; `bash run.sh 1`), from
# the repository root with carry ["carry-bin", ".deps"]: carry-bin/all.txz
# packed by bench/tools/carry_pack.sh from the build in /tmp/b-full of
# fine_jobs.patch applied to c05343d, carry-bin/extra.txz holding
# base/flashspec_bench built from c05343d itself.
set -u
source bench/tools/device_env.sh
case "${1:-1}" in
1)
# several jobs a CTA in fine units (FINE MULTI): the rows kernel's tests, then
# the new build against the previous one (/tmp/fsb/base) in alternated rounds
(cd $B && timeout 200 ctest -L gpu -j4 -R "agree$|agree_rowsjobs|agree_rowsm|stat$|stat_rowsm$|tree_rowsjobs|single$" --output-on-failure > $O/ctest_gpu_call1.txt 2>&1; echo "rc=$?" >> $O/ctest_gpu_call1.txt)
el tests
OUT=$O/ab timeout 400 bash bench/tools/ab_rounds.sh -r 3 fj \
  "--shapes 151936x4096,128256x8192,262144x3072 --rows 512,1024,1792,2560 --requests 200 --ops sample,argmax,verify --rounds 1 --reps 12" \
  base=/tmp/fsb/base/flashspec_bench fine=$B/bench/flashspec_bench > $O/ab_summary_call1.txt 2>&1
el ab
;;
esac
tar czf $OUT/out.tgz -C $O .
