#!/usr/bin/env python3
"""Per kernel (template arguments kept, parameters dropped) of an
ncu --csv --metrics export: launches, median / p10 / p90 of
gpu__time_duration.sum and the median of sm__inst_executed.sum.
Usage: ncu_kernel_medians.py FILE[.gz] ..."""
import collections
import csv
import gzip
import re
import statistics
import sys


def main(names):
    if not names:
        sys.exit(__doc__)
    for name in names:
        opener = gzip.open if name.endswith(".gz") else open
        rows = list(csv.reader(opener(name, "rt")))
        head = next((i for i, r in enumerate(rows) if r and r[0] == "ID"), None)
        print(f"== {name}")
        if head is None:
            print("   no launches")
            continue
        col = {k: i for i, k in enumerate(rows[head])}
        launches = collections.OrderedDict()
        for r in rows[head + 1:]:
            if len(r) < len(col):
                continue
            key = (int(r[0]), r[col["Kernel Name"]])
            value = float(r[col["Metric Value"]].replace(",", ""))
            launches.setdefault(key, {})[r[col["Metric Name"]]] = value
        kernels = collections.OrderedDict()
        for (_, kernel), m in launches.items():
            kernels.setdefault(re.sub(r"\(.*", "", kernel), []).append(m)
        for kernel, ms in kernels.items():
            t = sorted(m.get("gpu__time_duration.sum", 0.0) / 1000.0 for m in ms)
            inst = statistics.median(m.get("sm__inst_executed.sum", 0.0) for m in ms)
            print(f"   {kernel[:56]:56s} n={len(t):3d} median {statistics.median(t):8.1f} us"
                  f"  p10-p90 {t[len(t) // 10]:7.1f}-{t[len(t) * 9 // 10]:7.1f}"
                  f"  inst {inst:12.0f}")


if __name__ == "__main__":
    main(sys.argv[1:])
