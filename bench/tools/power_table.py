#!/usr/bin/env python3
"""Clock and cycles of each fused op against cuBLAS's matmul alone, from
`flashspec_bench --power` outputs (the "power" lines after each
configuration; bench/power.h).

At the power cap a call's time is clock x cycles.  For every fused op
(fs_sample, fs_draft_argmax, fs_verify) and row count this prints, per
run, the ratio of its mean SM clock to the matmul's in the same
configuration and the ratio of its cycles a call (median time x mean
clock): a call that loses to the matmul on clock draws more power a
cycle, one that loses on cycles does more work (or waits longer) at the
same clock -- set the cycle ratio beside ncu's for a lone launch.

Usage: power_table.py BENCH_OUTPUT.txt ...
"""
import re
import sys

FUSED = ("fs_sample", "fs_draft_argmax", "fs_verify")


def parse(path):
    """{(V, D, rows, method): (MHz, M cycles)} from one benchmark output."""
    shape, out = None, {}
    for line in open(path):
        m = re.match(r"# V=(\d+) D=(\d+)", line)
        if m:
            shape = (int(m.group(1)), int(m.group(2)))
            continue
        m = re.match(r"\s+power (\S+)\s+(\d+) rows:\s+(\d+) MHz.*?([\d.]+) M cycles a call", line)
        if m and shape:
            out[shape + (int(m.group(2)), m.group(1))] = (int(m.group(3)), float(m.group(4)))
    return out


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip())
        return 2
    runs = [(p, parse(p)) for p in sys.argv[1:]]
    keys = sorted({k for _, d in runs for k in d if k[3] in FUSED})
    names = [p.rsplit("/", 1)[-1] for p, _ in runs]
    print("clock / cycles a call, x cuBLAS's matmul alone in the same configuration")
    print("%-13s %5s %-16s %s" % ("shape", "rows", "op", "  ".join("%-13s" % n[:13] for n in names)))
    for v, d, rows, meth in keys:
        cells = []
        for _, run in runs:
            f, c = run.get((v, d, rows, meth)), run.get((v, d, rows, "cublas_matmul"))
            cells.append("%.3f / %.3f" % (f[0] / c[0], f[1] / c[1]) if f and c else "-")
        print("%-13s %5d %-16s %s" % ("%dx%d" % (v, d), rows, meth,
                                      "  ".join("%-13s" % x for x in cells)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
