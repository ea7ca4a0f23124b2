#!/usr/bin/env python3
"""Speculative decoding with a prompt-lookup (n-gram) drafter, verified by flashspec.

A complete decode loop on a tiny GPT built here (random weights from a fixed
seed; vocabulary 32000, 4 layers, d_model 256, KV cache), run twice:

* token by token: one model step per token, the next token drawn by
  ``flashspec.sample`` from the final hidden state and the LM head;
* speculative: a prompt-lookup drafter proposes up to K tokens by finding
  the last n-gram of the sequence earlier in it and copying what followed;
  one model step scores the last token and the K drafts, and
  ``flashspec.verify`` (hidden states + LM head, one pass over the
  vocabulary) accepts a prefix of the drafts and emits one more token.

It prints tokens per step, the draft acceptance rate and the time per step
and per token of both loops.  At temperature 0 (the default) both loops
emit the same tokens -- verify at T = 0 accepts exactly the drafts that
greedy decoding would have produced -- and the script checks that.  At
T > 0 both follow the same law (flashspec's tests check it), not the same
path.

Random weights and what there is to predict: a GPT with random weights
carries no language, and its greedy output never repeats itself, so a
prompt-lookup drafter would have nothing to find.  The demo model is
therefore a random GPT with one piece of structure: its LM head is its
embedding table with the rows permuted, so that the strongest logit after
token c is succ(c), a fixed random permutation of the vocabulary made of
cycles of --cycle tokens (24 by default); the transformer blocks, with
random weights, perturb the hidden state around that.  Decoding then walks
a cycle, and once the sequence holds a whole cycle the n-gram drafter
predicts it -- which is how prompt lookup earns its keep on real text
(code edits, quotes, retrieval).  At T > 0 the walk leaves its cycle now
and then and needs a whole new cycle before drafts come back: at
--temperature 0.7 the successor gets ~99% of the mass (measured here:
~2.5 tokens/step over 300 tokens), at 1.0 only ~2/3 and the drafter finds
almost nothing.  --gain sets how peaked the successor logit is.

    python examples/ngram_spec_decode.py                # CPU, greedy
    python examples/ngram_spec_decode.py --device cuda  # GPU
    python examples/ngram_spec_decode.py --temperature 0.7 --new-tokens 300
"""
import argparse
import time
from typing import List, Optional

import torch
import torch.nn as nn
import torch.nn.functional as F

import flashspec


class Block(nn.Module):
    def __init__(self, d: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x, cache: dict, layer: int):
        """x [T, d] for positions cache_len .. cache_len + T - 1."""
        t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(t, 3, self.heads, d // self.heads).unbind(1)
        k_all = torch.cat([cache["k"][layer][: cache["len"]], k]) if cache["len"] else k
        v_all = torch.cat([cache["v"][layer][: cache["len"]], v]) if cache["len"] else v
        cache["k"][layer][: k_all.shape[0]] = k_all
        cache["v"][layer][: v_all.shape[0]] = v_all
        # causal attention of the T new positions over every cached one
        n = k_all.shape[0]
        mask = torch.ones(t, n, dtype=torch.bool, device=x.device).tril(n - t)
        att = F.scaled_dot_product_attention(q.transpose(0, 1), k_all.transpose(0, 1),
                                             v_all.transpose(0, 1), attn_mask=mask)
        x = x + self.proj(att.transpose(0, 1).reshape(t, d))
        return x + self.ff(self.ln2(x))


def successor_cycles(vocab: int, cycle: int, g: torch.Generator) -> torch.Tensor:
    """succ [V]: a permutation made of cycles of `cycle` tokens (the last
    one longer), over a random order of the vocabulary."""
    order = torch.randperm(vocab, generator=g)
    succ = torch.empty(vocab, dtype=torch.long)
    starts = list(range(0, vocab - cycle + 1, cycle)) or [0]
    for i, a in enumerate(starts):
        b = starts[i + 1] if i + 1 < len(starts) else vocab
        ring = order[a:b]
        succ[ring] = ring.roll(-1)
    return succ


class TinyGPT(nn.Module):
    def __init__(self, vocab=32000, d=256, layers=4, heads=4, context=2048, seed=0,
                 cycle=24, gain=0.05):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        torch.manual_seed(seed)
        self.context = context
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Embedding(context, d)
        self.blocks = nn.ModuleList(Block(d, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        # the LM head [V, d] as nn.Linear stores it; flashspec reads it as is
        self.lm_head = nn.Linear(d, vocab, bias=False)
        with torch.no_grad():
            self.emb.weight.normal_(0.0, 1.0, generator=g)
            self.pos.weight.normal_(0.0, 0.2, generator=g)
            for b in self.blocks:  # random blocks that perturb, GPT-2's small output init
                b.proj.weight.normal_(0.0, 0.02, generator=g)
                b.ff[2].weight.normal_(0.0, 0.02, generator=g)
            self.succ = successor_cycles(vocab, cycle, g)
            pred = torch.empty_like(self.succ)
            pred[self.succ] = torch.arange(vocab)
            # row j = gain * embedding of j's predecessor: the top logit after c is succ(c)
            self.lm_head.weight.copy_(self.emb.weight[pred] * gain)

    def new_cache(self, device, dtype):
        d, h = self.emb.embedding_dim, self.blocks[0].heads
        shape = (len(self.blocks), self.context, h, d // h)
        return {"k": torch.zeros(shape, device=device, dtype=dtype),
                "v": torch.zeros(shape, device=device, dtype=dtype), "len": 0}

    @torch.no_grad()
    def step(self, tokens: torch.Tensor, cache: dict) -> torch.Tensor:
        """Final hidden states [T, d] of tokens [T] appended after the cache."""
        start = cache["len"]
        pos = torch.arange(start, start + tokens.shape[0], device=tokens.device)
        x = self.emb(tokens) + self.pos(pos)
        for i, block in enumerate(self.blocks):
            x = block(x, cache, i)
        cache["len"] = start + tokens.shape[0]
        return self.ln_f(x)


def propose_ngram(seq: List[int], k: int, n_max: int = 3, n_min: int = 1) -> List[int]:
    """Prompt lookup: the tokens that followed the most recent earlier
    occurrence of the sequence's last n tokens (longest n first)."""
    for n in range(min(n_max, len(seq) - 1), n_min - 1, -1):
        tail = seq[-n:]
        for start in range(len(seq) - n - 1, -1, -1):
            if seq[start:start + n] == tail:
                follow = seq[start + n:start + n + k]
                if follow:
                    return follow
    return []


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def decode_token_by_token(model, prompt, new_tokens, temperature, seed, device):
    w = model.lm_head.weight
    cache = model.new_cache(device, w.dtype)
    seq = list(prompt)
    model.step(torch.tensor(seq[:-1], device=device), cache)
    seeds = torch.tensor([seed], device=device)
    temp = torch.tensor([temperature], dtype=torch.float32, device=device)
    sync(device)
    t0 = time.perf_counter()
    steps = 0
    while len(seq) - len(prompt) < new_tokens:
        hidden = model.step(torch.tensor(seq[-1:], device=device), cache)
        out = flashspec.sample(hidden, w, temp, seeds,
                               torch.tensor([len(seq)], device=device))  # offset: the position
        seq.append(int(out.tokens[0]))  # the loop needs the token on the host
        steps += 1
    sync(device)
    return seq[len(prompt):], steps, time.perf_counter() - t0


def decode_speculative(model, prompt, new_tokens, temperature, seed, device, k):
    w = model.lm_head.weight
    cache = model.new_cache(device, w.dtype)
    seq = list(prompt)
    model.step(torch.tensor(seq[:-1], device=device), cache)  # cache: positions < len - 1
    seeds = torch.tensor([seed], device=device)
    temp = torch.tensor([temperature], dtype=torch.float32, device=device)
    sync(device)
    t0 = time.perf_counter()
    steps = proposed = accepted = 0
    while len(seq) - len(prompt) < new_tokens:
        drafts = propose_ngram(seq, min(k, new_tokens - (len(seq) - len(prompt)) - 1))
        # one model step over the last token and the drafts: n + 1 target rows
        hidden = model.step(torch.tensor(seq[-1:] + drafts, device=device), cache)
        out = flashspec.verify(hidden, w, torch.tensor(drafts, dtype=torch.int32, device=device),
                               torch.tensor([0, len(drafts)], dtype=torch.int32, device=device),
                               temp, seeds, torch.tensor([len(seq)], device=device),
                               max_drafts=k)
        emitted = int(out.num_emitted[0])
        if emitted == 0:
            raise RuntimeError(flashspec.row_status_string(int(out.row_status[0])))
        new = out.tokens[0, :emitted].tolist()
        # keep the cache of the last token and the accepted drafts only
        cache["len"] = len(seq) + emitted - 1
        seq += new
        steps += 1
        proposed += len(drafts)
        accepted += emitted - 1
    sync(device)
    return seq[len(prompt):][:new_tokens], steps, time.perf_counter() - t0, proposed, accepted


def main(argv: Optional[List[str]] = None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--dtype", default=None, choices=["float32", "bfloat16", "float16"],
                    help="model dtype (default float32 on CPU, bfloat16 on CUDA)")
    ap.add_argument("--new-tokens", type=int, default=160)
    ap.add_argument("--drafts", type=int, default=6, help="K, the most drafts per step")
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--vocab", type=int, default=32000)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--d-model", type=int, default=256)
    ap.add_argument("--cycle", type=int, default=24, help="length of the successor cycles")
    ap.add_argument("--gain", type=float, default=0.05, help="scale of the LM head")
    ap.add_argument("--prompt-repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1,
                    help="torch CPU threads (default 1: steady timings on a shared machine)")
    args = ap.parse_args(argv)

    device = torch.device(args.device)
    if device.type == "cuda" and not flashspec.cuda_available():
        ap.error("flashspec has no usable CUDA backend here (CPU-only build or no GPU)")
    dtype = getattr(torch, args.dtype or ("bfloat16" if device.type == "cuda" else "float32"))
    torch.set_num_threads(args.threads)
    model = TinyGPT(vocab=args.vocab, d=args.d_model, layers=args.layers, cycle=args.cycle,
                    gain=args.gain).to(device, dtype).eval()
    # the prompt: a 12-token phrase (a random start, then its successors),
    # repeated; decoding goes on along the start's cycle
    g = torch.Generator().manual_seed(args.seed)
    phrase = [int(torch.randint(args.vocab, (), generator=g))]
    while len(phrase) < 12:
        phrase.append(int(model.succ[phrase[-1]]))
    prompt = phrase * args.prompt_repeats

    # warm up both paths (allocations, flashspec contexts and workspaces)
    decode_token_by_token(model, prompt, 4, args.temperature, args.seed, device)
    decode_speculative(model, prompt, 8, args.temperature, args.seed, device, args.drafts)

    base, base_steps, base_s = decode_token_by_token(model, prompt, args.new_tokens,
                                                     args.temperature, args.seed, device)
    spec, steps, spec_s, proposed, accepted = decode_speculative(
        model, prompt, args.new_tokens, args.temperature, args.seed, device, args.drafts)

    print(f"tiny GPT: vocab {args.vocab}, d_model {args.d_model}, {args.layers} layers, "
          f"{dtype} on {device}; prompt {len(prompt)} tokens, {args.new_tokens} new tokens, "
          f"T = {args.temperature}, up to {args.drafts} n-gram drafts per step")
    print(f"{'':14}{'steps':>7}{'tokens/step':>13}{'ms/step':>10}{'ms/token':>10}")
    print(f"{'token by token':14}{base_steps:7d}{len(base) / base_steps:13.2f}"
          f"{1e3 * base_s / base_steps:10.2f}{1e3 * base_s / len(base):10.2f}")
    print(f"{'speculative':14}{steps:7d}{len(spec) / steps:13.2f}"
          f"{1e3 * spec_s / steps:10.2f}{1e3 * spec_s / len(spec):10.2f}")
    rate = accepted / proposed if proposed else 0.0
    print(f"drafts: {proposed} proposed, {accepted} accepted (acceptance rate {rate:.1%}); "
          f"speed-up {base_s / spec_s:.2f}x")
    if args.temperature == 0.0:
        same = spec == base
        where = "" if same else f" (first difference at token {next(i for i, (a, b) in enumerate(zip(spec, base)) if a != b)})"
        print(f"greedy: speculative output identical to token-by-token: {same}{where}")
        if not same:
            # only a near tie of two logits, computed from differently batched
            # model steps, can make the two greedy paths differ
            print("  (a near tie between two logits of differently batched model steps)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
