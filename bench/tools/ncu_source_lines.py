#!/usr/bin/env python3
"""Warp stall samples of one kernel per CUDA source line, summed over every
launch of it in an ncu per-instruction export.

ncu's SASS export (ncu -i REP --page source --csv --print-source sass) gives
runtime addresses and no source lines; the line table comes from the binary
the run used, disassembled here with line info (nvdisasm -g -c on the cubin
that holds the kernel: cuobjdump -xelf NAME.sm_90a.cubin BINARY extracts it).
An instruction's offset is its address minus the first address of its
launch.  Prints the kernel's SASS size, the distinct instructions a launch
executes (code that runs once per launch pays an instruction-cache miss per
128-byte line: stall_no_inst), the stall reasons overall, the samples per
file and the top lines with their three main reasons.

Usage: ncu_source_lines.py EXPORT.csv.gz KERNEL.sass MANGLED_SUBSTRING
                           [LAUNCH_NAME_SUBSTRING] [TOP]
  e.g. ncu_source_lines.py merge_source.csv.gz merge.sass fs_merge_kernelILb1E '<(bool)1>'"""
import collections
import csv
import gzip
import re
import sys


def line_table(sass_path, fn_sub):
    """offset -> 'file:line' of the first function whose name holds fn_sub."""
    table, func, loc = None, None, "?"
    for text in open(sass_path):
        m = re.match(r"\s*\.text\.(\S+):", text)
        if m:
            if table is not None:
                break
            func = m.group(1)
            table = {} if fn_sub in func else None
            loc = "?"
            continue
        if table is None:
            continue
        m = re.search(r'//## File "([^"]+)", line (\d+)', text)
        if m:
            loc = m.group(1).split("/")[-1] + ":" + m.group(2)
            continue
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/", text)
        if m:
            table[int(m.group(1), 16)] = loc
    if not table:
        sys.exit(f"no function with {fn_sub!r} in {sass_path}")
    return table


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    export, sass, fn_sub = sys.argv[1:4]
    launch_sub = sys.argv[4] if len(sys.argv) > 4 else ""
    top = int(sys.argv[5]) if len(sys.argv) > 5 else 30
    table = line_table(sass, fn_sub)
    per_line = collections.Counter()
    per_file = collections.Counter()
    reasons = collections.Counter()
    line_reasons = collections.defaultdict(collections.Counter)
    executed = 0  # instructions with a nonzero execution count, summed over launches
    launches, take, base, hdr = 0, False, None, None
    for row in csv.reader(gzip.open(export, "rt")):
        if not row:
            continue
        if row[0] == "Kernel Name":
            take = launch_sub in row[1]
            launches += take
            base = None
            continue
        if row[0] == "Address":
            hdr = {h: i for i, h in enumerate(row)}
            stall_cols = [h for h in row if h.startswith("stall_") and "Not Issued" not in h]
            continue
        if not take:
            continue
        addr = int(row[0], 16)
        base = addr if base is None else base
        loc = table.get(addr - base, "?")
        s = int(row[hdr["Warp Stall Sampling (All Samples)"]] or 0)
        per_line[loc] += s
        per_file[loc.split(":")[0]] += s
        for h in stall_cols:
            v = int(row[hdr[h]] or 0)
            reasons[h[6:]] += v
            line_reasons[loc][h[6:]] += v
        if int(row[hdr["Instructions Executed"]] or 0) > 0:
            executed += 1
    total = sum(per_line.values()) or 1
    print(f"{launches} launches, {total} samples; SASS {len(table)} instructions "
          f"({(max(table) + 16) // 1024} KiB), {executed // max(launches, 1)} distinct "
          f"executed a launch (mean)")
    print("reasons: " + ", ".join(f"{k} {100 * v / total:.1f}%" for k, v in reasons.most_common(8)))
    print("files:   " + ", ".join(f"{k} {100 * v / total:.1f}%" for k, v in per_file.most_common(8)))
    for loc, v in per_line.most_common(top):
        why = ", ".join(f"{k} {c}" for k, c in line_reasons[loc].most_common(3))
        print(f"{v:7d} {100 * v / total:5.1f}%  {loc:32s} {why}")


if __name__ == "__main__":
    main()
