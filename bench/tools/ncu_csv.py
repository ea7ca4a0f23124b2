#!/usr/bin/env python3
"""The reader of `ncu --csv --metrics` exports (gzipped or not) that the
ncu_*.py tools share: ncu's own lines before the CSV header are skipped,
and so is a truncated last row."""
import collections
import csv
import gzip


def read(name):
    """(launch ID, kernel name as exported) -> {metric: (unit, value text)},
    in the export's order; empty when the export holds no launch."""
    opener = gzip.open if name.endswith(".gz") else open
    with opener(name, "rt") as f:
        rows = list(csv.reader(f))
    out = collections.OrderedDict()
    hi = next((i for i, r in enumerate(rows) if r and r[0] == "ID"), None)
    if hi is None:
        return out
    col = {k: i for i, k in enumerate(rows[hi])}
    for r in rows[hi + 1:]:
        if len(r) < len(col):
            continue
        key = (int(r[0]), r[col["Kernel Name"]])
        out.setdefault(key, {})[r[col["Metric Name"]]] = (r[col["Metric Unit"]],
                                                          r[col["Metric Value"]])
    return out
