#!/usr/bin/env python3
"""Split an ncu per-instruction export (ncu -i REP --page source --csv
--print-source sass, gzipped) of a Hopper scan kernel into mainloop
(instructions run once per k-block, >= 90% of the HGMMA count), epilogue (run
once per tile) and once-per-warp code: share of warp stall samples, the
full-barrier wait's share, the top stall reasons per region, and the share
of the samples at each named barrier (BAR.SYNC id: the tile kernel's
epilogue warps wait at BAR_FULL, 3, its MMA warps at BAR_FREE, 2).
Usage: ncu_sass_split.py FILE.csv.gz ..."""
import collections
import csv
import gzip
import sys

for name in sys.argv[1:]:
    rows = list(csv.reader(gzip.open(name, "rt")))
    # the header: the first row naming the samples (ncu may print notes above it)
    h = next(i for i, r in enumerate(rows) if "Warp Stall Sampling (All Samples)" in r)
    hdr, data = rows[h], rows[h + 1:]
    i_s = hdr.index("Warp Stall Sampling (All Samples)")
    i_e = hdr.index("Instructions Executed")
    stall_cols = [i for i, h in enumerate(hdr) if h.startswith("stall_") and "Not Issued" not in h]
    ml = max(int(r[i_e] or 0) for r in data if "HGMMA" in r[1])
    share, reasons = collections.Counter(), collections.defaultdict(collections.Counter)
    wait = 0
    for k, r in enumerate(data):
        e, s = int(r[i_e] or 0), int(r[i_s] or 0)
        region = "mainloop" if e >= 0.9 * ml else "once" if e < 2000 else "epilogue"
        share[region] += s
        for i in stall_cols:
            reasons[region][hdr[i][6:]] += int(r[i] or 0)
        if "TRYWAIT" in r[1] and e >= 0.9 * ml and not wait:
            wait = s + int(data[k + 1][i_s] or 0)  # the wait and its retry branch
    bars = collections.Counter()
    for r in data:
        f = r[1].replace(",", " ").split()
        if f and f[0].startswith("BAR.SYNC") and len(f) > 1:
            bars[f[1]] += int(r[i_s] or 0)  # an id, or the register holding it
    tot = sum(share.values())
    print(name.split("/")[-1], {k: f"{100 * v / tot:.1f}%" for k, v in share.items()},
          f"full-barrier wait {100 * wait / tot:.1f}%",
          "named barriers", {b: f"{100 * v / tot:.1f}%" for b, v in sorted(bars.items())})
    for region in ("mainloop", "epilogue"):
        t = sum(reasons[region].values()) or 1
        print("   ", region, [(k, f"{100 * v / t:.0f}%") for k, v in reasons[region].most_common(6)])
