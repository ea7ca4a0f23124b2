#!/usr/bin/env python3
"""The small kernels of a call (prep, merge, filtered merge, finalize) of an
ncu --csv --metrics gpu__time_duration.sum export, grouped by the scan
launch before them, so that e.g. the filtered merge of 1-row calls and of
64-row calls get medians of their own (ncu_kernel_medians.py pools every
launch of a kernel).  The scan is named by its kernel and template
arguments (the Hopper tile kernel's <BN, BF16, FILT>: its row block and
whether the op filters).  A kernel launched before any scan (a prep) is
grouped under the scan that follows it instead.
Usage: ncu_call_breakdown.py FILE[.csv|.csv.gz] ..."""
import collections
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ncu_launch_ab import launches as ncu_launches  # noqa: E402

SCAN = re.compile(r"(fsh_scan_kernel|fshr_scan_kernel|fs_scan_\w+_kernel)(<[^>]*>)?")


def launches(name):
    """[(kernel, us)] in launch order, kernels without "<unnamed>::"."""
    return [(kernel.replace("<unnamed>::", ""), float(m["gpu__time_duration.sum"]) / 1000.0)
            for kernel, m in ncu_launches(name) if "gpu__time_duration.sum" in m]


def main(names):
    if not names:
        sys.exit(__doc__)
    for name in names:
        seq = launches(name)
        groups = collections.OrderedDict()
        pending = []
        scan = None
        for kernel, us in seq:
            m = SCAN.search(kernel)
            if m:
                scan = m.group(0)
                groups.setdefault((scan, "(scan)"), []).append(us)
                for k, t in pending:
                    groups.setdefault((scan, k), []).append(t)
                pending = []
            elif scan is None or "prep" in kernel:
                pending.append((kernel, us))  # belongs to the next scan
            else:
                groups.setdefault((scan, kernel), []).append(us)
        print(f"== {name}")
        for (scan, kernel), ts in groups.items():
            ts.sort()
            print(f"   {scan[:40]:40s} {kernel[:36]:36s} n={len(ts):3d} median {statistics.median(ts):8.1f} us"
                  f"  min {ts[0]:7.1f}  p90 {ts[len(ts) * 9 // 10]:8.1f}")


if __name__ == "__main__":
    main(sys.argv[1:])
