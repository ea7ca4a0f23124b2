#!/usr/bin/env python3
"""Medians of the single launch's end from FS_PROBE_TAIL lines (a build with
-DFS_PROBE_TAIL=1, kernels/probe_tail.cuh), per file and (rows, op): the
first / last CTA to write its records, CTA 0's, the grid barrier's release
in CTA 0 and the end of its merge and finalize, in us after CTA 0's start;
then the barrier (sync - last) and the tail (tail - sync).

Usage: tail_probe_table.py FILE ...   (one benchmark's output a file)"""
import re
import statistics
import sys

OPS = {0: "sample", 1: "argmax", 2: "verify"}
LINE = re.compile(r"FS_PROBE_TAIL rows=(\d+) op=(\d+) first=(\d+) cta0=(\d+) last=(\d+) "
                  r"sync=(\d+) tail=(\d+)")


def med(v):
    s = sorted(v)
    return statistics.median(s), s[len(s) // 10], s[(len(s) * 9) // 10]


def main(paths):
    if not paths:
        print(__doc__)
        return 2
    print("%-28s %5s %-7s %5s %9s %9s %9s %9s %9s %14s %14s" %
          ("file", "rows", "op", "n", "first", "cta0", "last", "sync", "tail",
           "barrier p50", "tail p50 p10-90"))
    for p in paths:
        groups = {}
        with open(p, errors="replace") as f:
            for line in f:
                m = LINE.search(line)
                if m:
                    v = [int(x) for x in m.groups()]
                    groups.setdefault((v[0], v[1]), []).append(v[2:])
        for (rows, op), vals in sorted(groups.items()):
            cols = list(zip(*vals))
            p50 = [med(c)[0] / 1000.0 for c in cols]
            bar = med([r[3] - r[2] for r in vals])
            tail = med([r[4] - r[3] for r in vals])
            print("%-28s %5d %-7s %5d %9.2f %9.2f %9.2f %9.2f %9.2f %14.2f %6.2f %3.2f-%.2f" %
                  (p.split("/")[-1][:28], rows, OPS.get(op, str(op)), len(vals), *p50,
                   bar[0] / 1000.0, tail[0] / 1000.0, tail[1] / 1000.0, tail[2] / 1000.0))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
