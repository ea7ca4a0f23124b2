#!/usr/bin/env python3
"""How long an exact prefix the filters' candidate lists give, by partition.

A row's lists (src/cand_list.h) each keep their best 4 tokens and the best
score they let go (drop); the prefix the resolve can trust is every token
above D = max(drop), i.e. the tokens ranked above the first list to collect
a fifth of them.  Which lists the top tokens fall into decides its length G.
This draws rows the way bench/filter_inputs.cu builds its peaked or moderate
head -- logit(v) = a_v + noise, a_v = 8 - z ln(1 + rank_v), rank_v the same
splitmix64 hash of v -- with the noise drawn here (N(0, 1.14^2), its spread
at D = 4096) instead of from the head, and reports G's percentiles for:

  rows   the rows kernel's list kernels: slot s owns units (128 tokens)
         [s U / S, (s + 1) U / S); lane gc of a 256-token tile holds columns
         with (c >> 1) & 3 = gc, its list p those with (c >> 4) & 1 = p
         (--lists-per-lane 1: one list a lane, both parities)
  tile   the tile kernel: 128-token tile t on CTA t mod ctas, its thread q
         of TPB holding the tile's noise blocks q, q + TPB, ...
  random the same number of lists, tokens assigned at random
  shuffled  the rows partition with the tokens' places shuffled

Usage: list_prefix_sim.py [--vocab 151936] [--slots 66] [--ctas 132]
       [--tpb 2] [--rows 30] [--lists-per-lane 2] [--zipf 2.0] [--seed 42]
       [--noise-seed 7]
(--seed: the head's hash seed; filter_bench fills every head with 42)."""
import argparse
import math
import random

M64 = (1 << 64) - 1


def mix(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def rows_list(v, slots, units, per_lane=2):
    u = v // 128
    s = u * slots // units
    while not (s * units // slots <= u < (s + 1) * units // slots):
        s += 1 if u >= (s + 1) * units // slots else -1
    c = (v - (s * units // slots) * 128) % 256
    lane = s * 4 + ((c >> 1) & 3)
    return lane * 2 + ((c >> 4) & 1) if per_lane == 2 else lane


def tile_list(v, ctas, tpb):
    t = v // 128
    return (t % ctas) * tpb + ((v % 128) // 16) % tpb


def prefix_len(order, lst):
    cnt = {}
    for r, v in enumerate(order):
        l = lst[v]
        cnt[l] = cnt.get(l, 0) + 1
        if cnt[l] == 5:
            return r
    return len(order)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vocab", type=int, default=151936)
    ap.add_argument("--slots", type=int, default=66)
    ap.add_argument("--ctas", type=int, default=132)
    ap.add_argument("--tpb", type=int, default=2)
    ap.add_argument("--rows", type=int, default=30)
    ap.add_argument("--lists-per-lane", type=int, default=2, choices=(1, 2))
    ap.add_argument("--zipf", type=float, default=2.0)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--noise-seed", type=int, default=7)
    o = ap.parse_args()
    V = o.vocab
    units = (V + 127) // 128
    a = [8.0 - o.zipf * math.log(1.0 + (mix(o.seed ^ v) % V)) for v in range(V)]
    rng = random.Random(o.noise_seed)
    parts = {
        "rows": [rows_list(v, o.slots, units, o.lists_per_lane) for v in range(V)],
        "tile": [tile_list(v, o.ctas, o.tpb) for v in range(V)],
    }
    n_rows = o.slots * 4 * o.lists_per_lane
    shuffled = parts["rows"][:]
    rng.shuffle(shuffled)
    parts["shuffled"] = shuffled
    parts["random"] = [rng.randrange(n_rows) for _ in range(V)]
    res = {k: [] for k in parts}
    for _ in range(o.rows):
        sc = [a[v] + rng.gauss(0.0, 1.14) for v in range(V)]
        order = sorted(range(V), key=lambda v: -sc[v])
        for k, lst in parts.items():
            res[k].append(prefix_len(order, lst))
    print(f"V {V}, rows kernel {o.slots} slots ({n_rows} lists), tile kernel {o.ctas} x {o.tpb} "
          f"lists, {o.rows} rows; G percentiles 10 / 25 / 50 / 75, share below 201")
    for k, g in res.items():
        g.sort()
        n = len(g)
        pct = " / ".join(str(g[min(n - 1, int(n * q))]) for q in (0.1, 0.25, 0.5, 0.75))
        print(f"  {k:9s} {pct:24s} {sum(x < 201 for x in g) / n:.2f}")


if __name__ == "__main__":
    main()
