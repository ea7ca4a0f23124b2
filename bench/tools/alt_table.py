#!/usr/bin/env python3
"""A knob's A/B inside one process, both ways round, as one table.

flashspec_bench --alt VAR=VALUE times each fused op again on a second
context made with the knob (fs_sample@alt, ...); tree_bench does the same
with TREE_BENCH_ALT (tree@alt).  The second context's method comes at the
same place of every round (after the same method), which on an H200 at
the power cap was worth up to 6% a cell at 1000+ rows
(bench/results/2026-12-01-h200-alt-rechecks/), so a knob is measured twice:
once with the knob as the alternative (ALT_RUN) and once with the knob set
for the whole process and the default as the alternative (SWAPPED_RUN).
Each direction's ratio knob / default, and their geometric mean, which a
constant bias of the alternative's place cancels out of:

    alt_table.py ALT_RUN [SWAPPED_RUN ...]    (pairs: ALT SWAPPED ALT SWAPPED ...)

Runs are the text outputs of flashspec_bench or tree_bench; further pairs
(repeats) add their ratios to the same cells.  Below 1: the knob faster.
"""
import math
import sys
from collections import defaultdict

CHAIN = ("sample", "argmax", "verify")


def parse(path):
    """{cell: {"def": ms, "alt": ms}} of one run, cell = (op, shape, rows, requests)."""
    cells = defaultdict(dict)
    with open(path) as f:
        for line in f:
            w = line.split()
            # flashspec_bench: family method V D rows req median ...
            if len(w) > 8 and w[0] in CHAIN and w[1].startswith("fs_") and "_logits" not in w[1]:
                cell = (w[0], w[2] + "x" + w[3], int(w[4]), int(w[5]))
                cells[cell]["alt" if w[1].endswith("@alt") else "def"] = float(w[6])
            # tree_bench: shape requests nodes rows method median ...
            elif len(w) >= 6 and w[4] in ("tree", "tree@alt") and w[1].isdigit():
                cell = ("tree", w[0], int(w[3]), int(w[1]))
                cells[cell]["alt" if w[4] == "tree@alt" else "def"] = float(w[5])
    return {c: v for c, v in cells.items() if "def" in v and "alt" in v}


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 2
    ratios = defaultdict(lambda: ([], []))  # cell -> (knob/default as alt, as swapped)
    for i, path in enumerate(argv[1:]):
        swapped = i % 2 == 1
        for cell, v in parse(path).items():
            # as alt: the knob is the alternative; swapped: the process's own
            r = v["def"] / v["alt"] if swapped else v["alt"] / v["def"]
            ratios[cell][1 if swapped else 0].append(r)
    print("%-7s %-12s %5s %4s  %-15s %-15s %6s" %
          ("op", "shape", "rows", "req", "knob as alt", "knob swapped", "geo"))
    geo_all = []
    for cell in sorted(ratios, key=lambda c: (c[1], c[0], c[2], c[3])):
        a, s = ratios[cell]
        both = a + s
        g = math.exp(sum(math.log(x) for x in both) / len(both))
        if a and s:
            geo_all.append(g)
        print("%-7s %-12s %5d %4d  %-15s %-15s %6.3f%s" %
              (cell[0], cell[1], cell[2], cell[3], " ".join("%.3f" % x for x in a),
               " ".join("%.3f" % x for x in s), g, "" if a and s else "  (one way)"))
    if geo_all:
        print("# %d cells measured both ways: geometric means %.3f-%.3f, mean %.3f" %
              (len(geo_all), min(geo_all), max(geo_all), sum(geo_all) / len(geo_all)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
