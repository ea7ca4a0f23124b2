#!/usr/bin/env python3
"""Side by side: flashspec_bench runs of several builds or settings (e.g.
--flush dirty / clean), one column each: per shape, method and rows, the
range over a label's runs of the median (ms) and of the median over the HBM
floor of the same run.
Usage: bench_ab_table.py [--methods a,b,..] LABEL=GLOB [LABEL=GLOB ...]
  e.g. bench_ab_table.py dirty='flush_dirty_*.txt' clean='flush_clean_*.txt'
Methods default to the fused ops and cuBLAS's matmul alone."""
import collections
import sys

from ab_labels import labelled_files

DEFAULT = ("cublas_matmul", "fs_sample", "fs_draft_argmax", "fs_verify")


def parse(name, methods):
    """(shape, method, rows) -> (median ms, x floor) from one output file."""
    out = {}
    for line in open(name):
        f = line.split()
        if len(f) < 10 or f[0] not in ("sample", "argmax", "verify") or f[1] not in methods:
            continue
        if f[1] == "cublas_matmul" and f[0] != "sample" and f[0] != "verify":
            continue
        try:
            # %floor: the first field ending in '%' (a rounds column may precede it)
            med = float(f[6])
            floor_pct = float(next(x for x in f[7:] if x.endswith("%")).rstrip("%"))
        except (ValueError, StopIteration):
            continue
        out.setdefault((f"{f[2]}x{f[3]}", f[1], int(f[4])), (med, 100.0 / floor_pct))
    return out


def cell(vals):
    if not vals:
        return "-"
    ms = [v[0] for v in vals]
    xf = [v[1] for v in vals]
    return f"{min(ms):.4f}-{max(ms):.4f} ({min(xf):.3f}-{max(xf):.3f})"


def main(argv):
    args = argv[1:]
    methods = DEFAULT
    if args and args[0] == "--methods":
        methods = tuple(args[1].split(","))
        args = args[2:]
    cols = labelled_files(args, __doc__)
    table = collections.OrderedDict()
    for label, files in cols:
        for name in files:
            for key, v in parse(name, methods).items():
                table.setdefault(key, {}).setdefault(label, []).append(v)
    print(f"{'shape':12s} {'method':16s} {'rows':>5s} " +
          " ".join(f"{label + ': ms (x floor)':>32s}" for label, _ in cols))
    for key in sorted(table, key=lambda k: (k[0], k[1], k[2])):
        print(f"{key[0]:12s} {key[1]:16s} {key[2]:5d} " +
              " ".join(f"{cell(table[key].get(label, [])):>32s}" for label, _ in cols))


if __name__ == "__main__":
    main(sys.argv)
