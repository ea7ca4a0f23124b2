#!/usr/bin/env python3
"""Per kernel (template arguments kept, parameters dropped) of an
ncu --csv --metrics export: launches, median / p10 / p90 of
gpu__time_duration.sum and the median of sm__inst_executed.sum; the export
is read by ncu_csv.read.
Usage: ncu_kernel_medians.py FILE[.gz] ..."""
import collections
import re
import statistics
import sys

from ncu_csv import read as launches
from ncu_metrics_table import value


def main(names):
    if not names:
        sys.exit(__doc__)
    for name in names:
        print(f"== {name}")
        kernels = collections.OrderedDict()
        for (_, kernel), m in launches(name).items():
            kernels.setdefault(re.sub(r"\(.*", "", kernel), []).append(m)
        if not kernels:
            print("   no launches")
            continue
        for kernel, ms in kernels.items():
            t = sorted(value(m, "gpu__time_duration.sum") for m in ms)  # us
            inst = statistics.median(value(m, "sm__inst_executed.sum") for m in ms)
            print(f"   {kernel[:56]:56s} n={len(t):3d} median {statistics.median(t):8.1f} us"
                  f"  p10-p90 {t[len(t) // 10]:7.1f}-{t[len(t) * 9 // 10]:7.1f}"
                  f"  inst {inst:12.0f}")


if __name__ == "__main__":
    main(sys.argv[1:])
