#!/usr/bin/env python3
"""Time flashspec.sample and flashspec.verify through the Python entry, the
way bench/flashspec_bench.c times fs_sample and fs_verify, so the two can be
compared: bf16 LM head W ~ N(0, 9/D) and hidden ~ N(0, 1), temperature 1,
per-row seeds; verify with R requests x K greedy drafts that are the target
argmax (every draft accepted), R (K + 1) target rows; on CUDA the L2 is
flushed (a memset of twice its size) before every call outside the timed
region, CUDA events around each call, median of --reps after --warmup.

    python python/bench/bench_ops.py                      # CUDA, 151936x4096
    python python/bench/bench_ops.py --c-csv results.csv  # side by side with
        # build/bench/flashspec_bench --shapes 151936x4096 --rows 1,64,320 \\
        #     --requests 1,16,64 --ops sample,verify --csv results.csv
    python python/bench/bench_ops.py --device cpu         # tiny CPU smoke run

It also prints the host time of one Python call (no flush, no sync): as long
as it stays below the GPU time, the Python layer adds nothing to the
measured op.

What ran just before matters at 320 rows, where the chip sits at its power
cap: a GPU that was busy a moment before runs the op slower than one that
was idle (H100, fs_sample at 320 rows: 0.78 ms after an idle moment,
0.83-0.88 ms in the C benchmark's sequence, 0.94 ms after 165 back-to-back
matmuls).  --like-c reproduces the C benchmark's sequence: before each
fused op it times the cuBLAS matmul (torch.matmul, hidden @ W.T) the same
way, as many times as the C benchmark runs baselines first (3 for sample:
matmul, +gumbel, +softmax+multinomial; 2 for verify: matmul, materialised
verify), and prints the matmul's median; --preheat N instead runs N
untimed matmuls back to back.
"""
import argparse
import csv
import statistics
import time

import torch

import flashspec


def parse_list(s):
    return [int(x) for x in s.split(",") if x]


def c_seeds(n, device):
    """The C benchmark's seeds: 0x243f6a8885a308d3 + 0x9e3779b97f4a7c15 * i (mod 2^64)."""
    vals = [(0x243F6A8885A308D3 + 0x9E3779B97F4A7C15 * i) % 2**64 for i in range(n)]
    vals = [v - 2**64 if v >= 2**63 else v for v in vals]
    return torch.tensor(vals, dtype=torch.int64, device=device)


class Timer:
    def __init__(self, device, reps, warmup):
        self.device, self.reps, self.warmup = device, reps, warmup
        if device.type == "cuda":
            l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 64 << 20)
            self.flush = torch.empty(2 * (l2 or (64 << 20)), dtype=torch.uint8, device=device)
            self.events = [(torch.cuda.Event(enable_timing=True),
                            torch.cuda.Event(enable_timing=True)) for _ in range(reps)]

    def time(self, fn):
        """(median, p10, p90) milliseconds of fn()."""
        if self.device.type != "cuda":
            for _ in range(self.warmup):
                fn()
            ms = []
            for _ in range(self.reps):
                t0 = time.perf_counter()
                fn()
                ms.append((time.perf_counter() - t0) * 1e3)
        else:
            for i in range(self.warmup):
                self.flush.fill_(i & 0xFF)
                fn()
            for i, (start, end) in enumerate(self.events):
                self.flush.fill_(i & 0xFF)
                start.record()
                fn()
                end.record()
            torch.cuda.synchronize(self.device)
            ms = [s.elapsed_time(e) for s, e in self.events]
        ms.sort()
        q = statistics.quantiles(ms, n=10, method="inclusive") if len(ms) > 1 else [ms[0]] * 9
        return statistics.median(ms), q[0], q[-1]

    def host_us(self, fn, n=20):
        """Host time of one call, launches only (no flush, no sync)."""
        fn()
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        us = (time.perf_counter() - t0) / n * 1e6
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
        return us


def load_c_csv(path):
    """{(family, V, D, rows, requests): median_ms} of the fused methods."""
    out = {}
    if not path:
        return out
    with open(path) as f:
        for r in csv.DictReader(f):
            if r["method"] in ("fs_sample", "fs_verify") and r["median_ms"]:
                key = (r["family"], int(r["V"]), int(r["D"]), int(r["rows"]), int(r["requests"]))
                out[key] = float(r["median_ms"])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--shape", default=None, help="VxD (default 151936x4096 on CUDA, 4096x256 on CPU)")
    ap.add_argument("--rows", default="1,64,320", help="sample rows")
    ap.add_argument("--requests", default="1,16,64", help="verify requests (R (K+1) target rows)")
    ap.add_argument("--drafts", type=int, default=4, help="K, drafts per request")
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--preheat", type=int, default=0,
                    help="cuBLAS matmuls run before each measured op (C benchmark: 165 / 110)")
    ap.add_argument("--like-c", action="store_true",
                    help="time cuBLAS matmuls before each op, as the C benchmark's baselines")
    ap.add_argument("--c-csv", default=None, help="flashspec_bench --csv output to compare with")
    ap.add_argument("--csv", default=None, help="write the results here")
    args = ap.parse_args()

    device = torch.device(args.device)
    if device.type == "cuda" and not flashspec.cuda_available():
        ap.error("flashspec has no usable CUDA backend here")
    v, d = map(int, (args.shape or ("151936x4096" if device.type == "cuda" else "4096x256"))
               .lower().split("x"))
    rows_list, req_list, k = parse_list(args.rows), parse_list(args.requests), args.drafts
    n_max = max(rows_list + [r * (k + 1) for r in req_list])
    g = torch.Generator(device=device).manual_seed(0x5EED0001 + v)
    w = (torch.randn(v, d, generator=g, device=device) * (3.0 / d ** 0.5)).to(torch.bfloat16)
    hidden = torch.randn(n_max, d, generator=g, device=device).to(torch.bfloat16)
    temp = torch.ones(n_max, dtype=torch.float32, device=device)
    seeds = c_seeds(n_max, device)
    timer = Timer(device, args.reps, args.warmup)
    c_ref = load_c_csv(args.c_csv)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"
    print(f"# flashspec Python entry, {name}, V={v} D={d} bf16, "
          f"median of {args.reps} after {args.warmup} warm-up"
          + (", L2 flushed before each call" if device.type == "cuda" else "")
          + (f", {args.preheat} cuBLAS matmuls before each op" if args.preheat else "")
          + (", cuBLAS matmul timed before each op (as the C benchmark)" if args.like_c else ""))
    print(f"{'op':7} {'rows':>5} {'reqs':>5} {'median_ms':>10} {'p10_ms':>8} {'p90_ms':>8} "
          f"{'host_us':>8} {'mm_ms':>7} {'C_ms':>8} {'py/C':>6}")
    results = []

    def report(op, rows, reqs, fn):
        mm = float("nan")
        if args.like_c:
            for _ in range(3 if op == "sample" else 2):
                t = timer.time(lambda: torch.matmul(hidden[:rows], w.T))[0]
                mm = t if mm != mm else mm
        for _ in range(args.preheat):
            torch.matmul(hidden[:rows], w.T)
        med, p10, p90 = timer.time(fn)
        host = timer.host_us(fn)
        c = c_ref.get((op, v, d, rows, reqs))
        ratio = f"{med / c:6.3f}" if c else f"{'-':>6}"
        c_s = f"{c:8.4f}" if c else f"{'-':>8}"
        print(f"{op:7} {rows:5d} {reqs:5d} {med:10.4f} {p10:8.4f} {p90:8.4f} {host:8.1f} "
              f"{mm:7.4f} {c_s} {ratio}", flush=True)
        results.append(dict(op=op, V=v, D=d, rows=rows, requests=reqs, median_ms=med,
                            p10_ms=p10, p90_ms=p90, host_us=host, matmul_ms=mm, c_median_ms=c))

    for rows in rows_list:
        h, t, s = hidden[:rows], temp[:rows], seeds[:rows]
        out = flashspec.sample(h, w, t, s)
        flashspec.check_row_status(out.row_status)
        report("sample", rows, 0, lambda: flashspec.sample(h, w, t, s))

    for reqs in req_list:
        rows = reqs * (k + 1)
        h = hidden[:rows]
        # perfect greedy drafts: the target argmax at each draft position
        top = flashspec.draft_argmax(h, w).tokens.view(reqs, k + 1)
        drafts = top[:, :k].contiguous().view(-1)
        cu = torch.arange(0, reqs * k + 1, k, dtype=torch.int32, device=device)
        t, s = temp[:reqs], seeds[:reqs]
        out = flashspec.verify(h, w, drafts, cu, t, s, max_drafts=k)
        flashspec.check_row_status(out.row_status)
        report("verify", rows, reqs,
               lambda: flashspec.verify(h, w, drafts, cu, t, s, max_drafts=k))

    if args.csv:
        with open(args.csv, "w", newline="") as f:
            wr = csv.DictWriter(f, fieldnames=list(results[0]))
            wr.writeheader()
            wr.writerows(results)


if __name__ == "__main__":
    main()
