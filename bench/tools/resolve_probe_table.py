#!/usr/bin/env python3
"""Medians of the filters' resolve steps from a FS_PROBE_RESOLVE build's
output (kernels/probe_resolve.cuh): one line per launch grid size ("rows":
the filtered merge kernel's co-resident grid, so run one row count a file)
and prefix length G, SM cycles per step, with the number of launches.
Usage: resolve_probe_table.py FILE...   (filter_bench output, probe lines mixed in)"""
import collections
import statistics
import sys

STEPS = ["merge", "bounds", "stage", "radix", "rank", "decide", "kept"]


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    runs = collections.defaultdict(lambda: collections.defaultdict(list))
    for name in argv[1:]:
        for line in open(name):
            if not line.startswith("FS_PROBE_RESOLVE "):
                continue
            f = dict(kv.split("=", 1) for kv in line.split()[1:])
            key = (int(f["rows"]), int(f["G"]))
            for s in STEPS:
                runs[key][s].append(int(f[s]))
    if not runs:
        sys.exit("no FS_PROBE_RESOLVE lines: was the library built with -DFS_PROBE_RESOLVE=1?")
    print(f"{'rows':>5} {'G':>6} {'n':>4} " + " ".join(f"{s:>7}" for s in STEPS) + f" {'sum':>7}")
    for (rows, g), steps in sorted(runs.items()):
        med = [statistics.median(steps[s]) for s in STEPS]
        print(f"{rows:5d} {g:6d} {len(steps['merge']):4d} "
              + " ".join(f"{m:7.0f}" for m in med) + f" {sum(med):7.0f}")


if __name__ == "__main__":
    main(sys.argv)
