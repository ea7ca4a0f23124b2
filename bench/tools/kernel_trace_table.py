#!/usr/bin/env python3
"""Per-call kernel times from a kernel_trace.c timeline of flashspec_bench.

The benchmark flushes the L2 (a memset of 2 x the L2 size) before every
call, so a call is what runs between the end of one flush and the start of
the next.  Consecutive calls with the same kernels form a run (one method's
calls of one round); for each run: its calls, the median span of a call
(its first kernel's start to its last kernel's end; the benchmark's events
time the same interval plus the launch), and each kernel's median start
(from the call's start) and duration, us.  Runs are printed in the order
they ran: read them against the benchmark's method order (with
`--order rotate`, its default, round r of R starts at method (r + 1) n / R
of the configuration's n; the last round runs the list's order).

Usage: kernel_trace_table.py TRACE[.gz] [--min-calls N] [--flush-mib M]
  --flush-mib: the flush's size (default: the most frequent memset of 1 MiB or more)
  --min-calls: leave out runs of fewer calls (warm-up, tuning; default 5)"""
import argparse
import gzip
import re
import shutil
import statistics
import subprocess
import sys


def demangle(names):
    if not names or not shutil.which("c++filt"):
        return {n: n for n in names}
    out = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True,
                         text=True).stdout.split("\n")
    return dict(zip(names, out))


def short(name):
    """fshr::fshr_scan_kernel<2, 1, ...>(CUtensorMap_st, ...) -> fshr_scan_kernel<2, 1, ...>"""
    name = re.sub(r"^void ", "", name)
    name = name.replace("(anonymous namespace)::", "")
    depth, cut = 0, len(name)
    for i, ch in enumerate(name):  # drop the parameter list, keep template arguments
        if ch == "<":
            depth += 1
        elif ch == ">":
            depth -= 1
        elif ch == "(" and depth == 0:
            cut = i
            break
    name = name[:cut]
    head, lt, tail = name.partition("<")
    return head.split("::")[-1] + lt + tail


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("trace")
    ap.add_argument("--min-calls", type=int, default=5)
    ap.add_argument("--flush-mib", type=float, default=0.0)
    o = ap.parse_args()
    acts = []
    opener = gzip.open if o.trace.endswith(".gz") else open
    with opener(o.trace, "rt") as f:
        for line in f:
            p = line.rstrip("\n").split(" ", 4)
            if len(p) == 5 and p[0] in "KSC":
                acts.append((int(p[1]), int(p[2]), p[0], p[4]))
    acts.sort()
    sizes = [int(n.split("_")[1]) for _, _, k, n in acts if k == "S"]
    if not sizes:
        sys.exit("no memsets in the trace: not a flashspec_bench timeline")
    big = [z for z in sizes if z >= 2**20]
    flush = int(o.flush_mib * 2**20) if o.flush_mib else max(set(big), key=big.count)
    names = demangle(sorted({n for _, _, k, n in acts if k == "K"}))
    calls, cur = [], None
    for s, e, k, n in acts:
        if k == "S" and int(n.split("_")[1]) == flush:
            if cur:
                calls.append(cur)
            cur = []
        elif k == "K" and cur is not None:
            cur.append((s, e, short(names[n])))
    if cur:
        calls.append(cur)
    runs = []
    for c in calls:
        if not c:
            continue
        sig = tuple(n for _, _, n in c)
        if runs and runs[-1][0] == sig:
            runs[-1][1].append(c)
        else:
            runs.append((sig, [c]))
    print("run calls span_us | kernel: start_us+duration_us ...")
    for i, (sig, cs) in enumerate(runs):
        if len(cs) < o.min_calls:
            continue
        span = statistics.median(c[-1][1] - c[0][0] for c in cs) / 1e3
        parts = []
        for j, name in enumerate(sig):
            st = statistics.median(c[j][0] - c[0][0] for c in cs) / 1e3
            du = statistics.median(c[j][1] - c[j][0] for c in cs) / 1e3
            parts.append(f"{name}: {st:.1f}+{du:.1f}")
        print(f"{i:3d} {len(cs):4d} {span:9.1f} | " + "  ".join(parts))


if __name__ == "__main__":
    main()
