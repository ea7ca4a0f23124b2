#!/usr/bin/env python3
"""Side by side: ncu --csv exports of one benchmark command run under several
builds or settings (LABEL=GLOB, one column each), launch by launch.  The
same command launches the same kernels in the same order, so launch i of
every file is the same call; the files of a label are its rounds.  Per
launch: kernel (template arguments kept), each label's grid and the median
over its rounds of gpu__time_duration.sum (us) and sm__cycles_elapsed.max
(M cycles, which the power cap's clock changes move far less than time),
and each label's cycles over the first label's.  --reps N pools each N
consecutive launches (a benchmark's repetitions of one call) into one row.
Usage: ncu_launch_ab.py [--reps N] LABEL=GLOB [LABEL=GLOB ...]
Needs the metrics gpu__time_duration.sum, sm__cycles_elapsed.max and
launch__grid_size in the export."""
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ab_labels import labelled_files  # noqa: E402
from ncu_csv import read  # noqa: E402


def launches(name):
    """[(kernel, {metric: value})] in launch order (kernel without its
    parameters and "void ", values without thousands separators)."""
    return [(re.sub(r"\(.*$", "", kernel).replace("void ", ""),
             {k: v.replace(",", "") for k, (_, v) in m.items()})
            for (_, kernel), m in sorted(read(name).items(), key=lambda kv: kv[0][0])]


def main(args):
    reps = 1
    if len(args) > 1 and args[0] == "--reps":
        reps = int(args[1])
        args = args[2:]
    groups = [(label, [launches(f) for f in files])
              for label, files in labelled_files(args, __doc__)]
    counts = {len(run) for _, runs in groups for run in runs}
    if len(counts) != 1:
        sys.exit(f"the files hold different launch counts: {sorted(counts)}")
    n = counts.pop()
    if reps < 1 or n % reps:
        sys.exit(f"{n} launches are not groups of --reps {reps}")
    print("launch kernel" + "".join(f" | {label}: us, Mcycles (range), grid"
                                    for label, _ in groups) + " | cycles / first")
    for i in range(n // reps):
        at = range(i * reps, (i + 1) * reps)
        kernel = groups[0][1][0][at[0]][0]
        cells, cyc = [], []
        for label, runs in groups:
            us = [float(r[k][1]["gpu__time_duration.sum"]) / 1e3 for r in runs for k in at]
            mc = [float(r[k][1]["sm__cycles_elapsed.max"]) / 1e6 for r in runs for k in at]
            grid = runs[0][at[0]][1].get("launch__grid_size", "?")
            cyc.append(statistics.median(mc))
            cells.append(f"{statistics.median(us):8.1f} {cyc[-1]:7.3f}"
                         f" ({min(mc):.3f}-{max(mc):.3f}) g{grid}")
        ratios = " ".join(f"{c / cyc[0]:.3f}" for c in cyc[1:])
        print(f"{i:3d} {kernel} | " + " | ".join(cells) + f" | {ratios}")


if __name__ == "__main__":
    main(sys.argv[1:])
