#!/usr/bin/env python3
"""Scores a flashspec_bench --csv sweep against the large-batch targets:
each fused op within LIMIT x bound (bound = max(HBM floor, cuBLAS matmul
alone), default 1.03), never slower than the leanest unfused pipeline doing
the same job -- the fastest measured of cuBLAS's logits and then one pass
over them (the benchmark's Gumbel or argmax pass, or flashspec's own
*_logits op) and, for verify, the materialised verify -- and at 1 row
within ONE_ROW x the HBM floor (default 1.02).  One line per (shape, op):
the misses with their x bound, the row counts slower than the leanest
unfused pipeline (fused / unfused), and the 1-row x floor.
Usage: issue20_score.py bench.csv|bench.json|bench.txt [--limit 1.03] [--one-row 1.02]
(flashspec_bench --csv or --json, or its printed table)"""
import argparse
import csv
import collections
import json

FUSED = {"sample": "fs_sample", "argmax": "fs_draft_argmax", "verify": "fs_verify"}
UNFUSED = {
    "sample": ("cublas+gumbel", "cublas+fs_sample_logits"),
    "argmax": ("cublas+argmax", "cublas+fs_draft_argmax_logits"),
    "verify": ("materialised_verify", "cublas+fs_verify_logits"),
}


def text_rows(path):
    """The printed table's rows, with the csv's names for what the score
    reads (floor_ms from each shape's "# V=... floor X ms" line)."""
    rows, floor = [], None
    for line in open(path):
        f = line.split()
        if line.startswith("# V=") and "floor" in f:
            floor = f[f.index("floor") + 1]
        elif len(f) >= 10 and f[0] in FUSED and f[2].isdigit() and floor:
            rows.append({"family": f[0], "method": f[1], "V": f[2], "D": f[3], "rows": f[4],
                         "median_ms": f[6], "ratio_bound": f[9], "floor_ms": floor})
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--limit", type=float, default=1.03)
    ap.add_argument("--one-row", type=float, default=1.02)
    args = ap.parse_args()
    if args.csv.endswith(".json"):
        rows = [{k: str(v) for k, v in r.items()} for r in json.load(open(args.csv))["results"]]
    elif args.csv.endswith(".txt"):
        rows = text_rows(args.csv)
    else:
        rows = list(csv.DictReader(open(args.csv)))
    med = {}
    for r in rows:
        med[(r["V"], r["D"], r["family"], r["method"], int(r["rows"]))] = r
    shapes = list(collections.OrderedDict.fromkeys((r["V"], r["D"]) for r in rows))
    print(f"| shape | op | over {args.limit} x bound | slower than the unfused pipeline | 1 row, x floor |")
    print("|---|---|---|---|---|")
    for V, D in shapes:
        for op in ("sample", "argmax", "verify"):
            counts = sorted(n for (v, d, f, m, n) in med if (v, d, f, m) == (V, D, op, FUSED[op]))
            if not counts:
                continue
            miss, slow, one = [], [], ""
            for n in counts:
                f = med[(V, D, op, FUSED[op], n)]
                xb = float(f["ratio_bound"])
                if xb > args.limit:
                    miss.append(f"{n} ({xb:.3f})")
                u = [float(med[k]["median_ms"]) for k in ((V, D, op, m, n) for m in UNFUSED[op])
                     if k in med]
                if u and float(f["median_ms"]) > min(u):
                    slow.append(f"{n} ({float(f['median_ms']) / min(u):.3f})")
                if n == 1:
                    xf = float(f["median_ms"]) / float(f["floor_ms"])
                    one = f"{xf:.3f}" + (" (miss)" if xf > args.one_row else "")
            print(f"| {V} x {D} | {op} | {', '.join(miss) or '-'} | {', '.join(slow) or '-'} | {one} |")


if __name__ == "__main__":
    main()
