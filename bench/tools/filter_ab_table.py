#!/usr/bin/env python3
"""Side by side: filter_bench runs of several builds or settings, one column
each, the mean over a label's runs of the median (ms) and of the ratio to the
unfiltered fused op of the same run, with the second-pass share.
Usage: filter_ab_table.py LABEL=GLOB [LABEL=GLOB ...]
  e.g. filter_ab_table.py head='filter_bench_e068b50_*.txt' new='filter_bench_lists_*.txt'"""
import collections
import re
import statistics
import sys

from ab_labels import labelled_files

LINE = re.compile(r"^\s*(\S+)\s+(\S+)\s+(\d+)\s+(.*?)\s+(\d+\.\d+)\s+\S+\s+(\S+)\s+\S+\s*(\S*)\s*$")


def main(argv):
    cols = labelled_files(argv[1:], __doc__)
    rows = collections.OrderedDict()
    for label, files in cols:
        for name in files:
            for line in open(name):
                m = LINE.match(line)
                if not m or line.startswith(("#", "shape")):
                    continue
                shape, logits, nrows, method, med, rel, second = m.groups()
                if method.startswith("cublas+"):
                    continue
                key = (shape, logits, int(nrows), method)
                rows.setdefault(key, {}).setdefault(label, []).append(
                    (float(med), float(rel), second))
    print(f"{'shape':12s} {'logits':6s} {'rows':>4s} {'method':16s} " +
          " ".join(f"{label:>22s}" for label, _ in cols))
    for key, by in rows.items():
        cells = []
        for label, _ in cols:
            v = by.get(label)
            if not v:
                cells.append(f"{'-':>22s}")
                continue
            med = statistics.mean(x[0] for x in v)
            rel = statistics.mean(x[1] for x in v)
            cells.append(f"{med:8.4f} ({rel:6.3f}) {v[0][2][:5]:>5s}")
        print(f"{key[0]:12s} {key[1]:6s} {key[2]:4d} {key[3]:16s} " + " ".join(cells))


if __name__ == "__main__":
    main(sys.argv)
