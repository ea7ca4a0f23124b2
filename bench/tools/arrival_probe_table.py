#!/usr/bin/env python3
"""Medians of the filtered merge kernel's arrival probe (kernels/probe_resolve.cuh,
FS_PROBE_ARRIVE / FS_PROBE_STEPS lines of a FS_PROBE_RESOLVE build; build with
FS_PROBE_RESOLVE_BLOCK past the grid so that no row block prints): per file,
when the warm-up slots, row 0, the latest row block and the blocks without a
slot reach the grid barrier (us after the kernel's first block starts), how
often each block arrived last, and each reported block's resolve stamps t0-t8
(us; '-' where the block skips the step).
Usage: arrival_probe_table.py FILE...   (filter_bench output, one row count a file)"""
import collections
import statistics
import sys


def main(argv):
    if len(argv) < 2:
        sys.exit(__doc__)
    for name in argv[1:]:
        # by the launch's slot count (one file holds sample and verify launches)
        arrs = collections.defaultdict(lambda: collections.defaultdict(list))
        lasts = collections.defaultdict(collections.Counter)
        stepss = collections.defaultdict(lambda: collections.defaultdict(list))
        slots = None
        for line in open(name):
            if line.startswith("FS_PROBE_ARRIVE "):
                f = dict(kv.split("=", 1) for kv in line.split()[1:])
                slots = int(f["slots"])
                for k, v in f.items():
                    if k not in ("slots", "last"):
                        arrs[slots][k].append(int(v))
                lasts[slots][f["last"]] += 1
            elif line.startswith("FS_PROBE_STEPS ") and slots is not None:
                parts = line.split()
                block = int(parts[1].split("=")[1])
                t = [int(x) for x in parts[2].split("=")[1].split(",")]
                stepss[slots]["block %d" % block if block <= 3 else "last row"].append(t)
        if not arrs:
            print(f"{name}: no FS_PROBE_ARRIVE lines")
        for n_slots in sorted(arrs):
            report(name, n_slots, arrs[n_slots], lasts[n_slots], stepss[n_slots])


def report(name, n_slots, arr, last, steps):
    print(f"== {name}: {n_slots} slots, {len(arr['row0_arrive'])} launches")
    print("  " + "  ".join(f"{k}={statistics.median(v) / 1000:.1f}" if statistics.median(v) >= 0
                           else f"{k}=-" for k, v in arr.items()))
    print("  last to arrive (block: launches): " +
          ", ".join(f"{b}: {c}" for b, c in last.most_common(4)))
    for b, ts in steps.items():
        cols = []
        for c in zip(*ts):
            m = statistics.median(c)
            cols.append(f"{m / 1000:5.1f}" if m > 0 else "    -")
        print(f"  {b:>8}: " + " ".join(cols))


if __name__ == "__main__":
    main(sys.argv)
