#!/usr/bin/env python3
"""One line per kernel launch from an ncu --csv --metrics export (gzipped or
not): time, SM clock, grid / cluster, DRAM / L2 / L2->SM bytes, tensor-pipe
activity, and the stall-sample shares when the export has them.
Usage: ncu_metrics_table.py [--match REGEX] FILE ..."""
import re
import sys

from ncu_csv import read as launches

SCALE = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3, "byte": 1e-9, "Kbyte": 1e-6,
         "Mbyte": 1e-3, "Gbyte": 1.0, "hz": 1e-6, "cycle/second": 1e-6, "cycle/nsecond": 1e3}
STALLS = ["selected", "long_scoreboard", "barrier", "wait", "math_pipe_throttle",
          "short_scoreboard", "no_instructions", "dispatch_stall", "mio_throttle"]


def value(m, key):
    unit, v = m.get(key, ("", ""))
    try:
        return float(v.replace(",", "")) * SCALE.get(unit, 1.0)
    except ValueError:
        return float("nan")


def main(argv):
    match = None
    if argv[:1] == ["--match"]:
        match, argv = re.compile(argv[1]), argv[2:]
    for name in argv:
        print("==", name)
        print("  id kernel                                      us    MHz grid cl DRAM_GB L2_GB L2SM_GB tensor%  stalls%")
        for (i, kname), m in launches(name).items():
            if match and not match.search(kname):
                continue
            short = re.sub(r"^void |\(.*$", "", kname)[:40]
            samples = value(m, "smsp__pcsamp_sample_count")
            st = ""
            if samples == samples and samples > 0:
                st = " ".join("%s=%.0f" % (s[:6], 100 * value(m, "smsp__pcsamp_warps_issue_stalled_" + s) / samples)
                              for s in STALLS)
            print("%4d %-40s %7.1f %6.0f %4.0f %2s %7.2f %5.2f %7.2f %7.1f  %s" % (
                i, short, value(m, "gpu__time_duration.sum"), value(m, "sm__cycles_elapsed.avg.per_second"),
                value(m, "launch__grid_size"), m.get("launch__cluster_dim_x", ("", "-"))[1],
                value(m, "dram__bytes_read.sum"), value(m, "lts__t_bytes.sum"),
                value(m, "l1tex__m_xbar2l1tex_read_bytes.sum"),
                value(m, "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"), st))


if __name__ == "__main__":
    main(sys.argv[1:])
