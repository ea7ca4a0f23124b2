"""Exactness through the Python entry: chi-squared goodness of fit of
sample and verify against their exact laws, each with a power check (the
same helper rejects a slightly wrong law on the same samples).  Seeds are
fixed, so the outcome is reproducible."""
import numpy as np
import pytest
import torch

import flashspec
from _reference import outcome_counts, softmax64, verify_law
from _stats import assert_fits, assert_rejects

N = 20000  # draws per test (rows for sample, requests for verify)


def counts_of(tokens: torch.Tensor, v: int) -> np.ndarray:
    return np.bincount(tokens.cpu().numpy().astype(np.int64), minlength=v)[:v]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_sample_law_fused(device, dtype):
    v, d, temp = 24, 8, 0.8
    g = torch.Generator().manual_seed(1)
    w = (torch.randn(v, d, generator=g) / d ** 0.5).to(dtype)
    h = torch.randn(1, d, generator=g).to(dtype)
    logits = (h.double() @ w.double().T)[0].numpy()
    seeds = torch.arange(N, dtype=torch.int64)
    out = flashspec.sample(h.expand(N, d).to(device), w.to(device), temp, seeds.to(device),
                           return_logprobs=True)
    assert (out.row_status == 0).all()
    counts = counts_of(out.tokens, v)
    p = softmax64(logits, temp)
    assert_fits(counts, p, f"sample {dtype}")
    assert_rejects(counts, softmax64(logits, temp * 1.06), "sample at a 6% wrong temperature")
    lp = out.logprobs.cpu().double().numpy()
    tok = out.tokens.cpu().numpy()
    np.testing.assert_allclose(lp[:50], np.log(p[tok[:50]]), atol=1e-3)


def test_sample_law_bias_mask_logits(device):
    v, temp = 40, 1.3
    g = torch.Generator().manual_seed(2)
    logits = torch.randn(1, v, generator=g)
    bias = torch.randn(1, v, generator=g)
    allowed = torch.rand(1, v, generator=g) < 0.6
    packed = flashspec.pack_allowed(allowed.expand(N, v).contiguous())
    out = flashspec.sample_logits(logits.expand(N, v).contiguous().to(device), temp,
                                  torch.arange(N, device=device), offset=5,
                                  logit_bias=bias.expand(N, v).contiguous().to(device),
                                  allowed=packed.to(device))
    counts = counts_of(out.tokens, v)
    s = (logits + bias)[0].double().numpy()
    s = np.where(allowed[0].numpy(), s, -np.inf)
    p = softmax64(s, temp)
    assert_fits(counts, p, "sample with bias and mask")
    # the same law without the bias, or without the mask, must be rejected
    assert_rejects(counts, softmax64(np.where(allowed[0].numpy(), logits[0].double().numpy(),
                                              -np.inf), temp), "bias ignored")
    assert_rejects(counts, softmax64((logits + bias)[0].double().numpy(), temp), "mask ignored")


def verify_case(seed: int, v: int, n: int, temp: float):
    """Target logits [n + 1, V] and drafts with acceptance probabilities
    well inside (0, 1), so every (k, y) cell has mass."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(n + 1, v, generator=g) * 1.5
    p = softmax64(logits.double().numpy(), temp)
    # each draft: the token whose probability is closest to 0.45
    drafts = [int(np.argmin(np.abs(p[j] - 0.45))) for j in range(n)]
    return logits, drafts, p


@pytest.mark.parametrize("temp", [1.0, 0.7])
def test_verify_law_logits(device, temp):
    v, n = 6, 2
    logits, drafts, p = verify_case(3, v, n, temp)
    target = logits.repeat(N, 1).to(device)  # request r: rows 3r .. 3r + 2
    draft_tokens = torch.tensor(drafts * N, dtype=torch.int32, device=device)
    cu = torch.arange(0, n * N + 1, n, dtype=torch.int32, device=device)
    out = flashspec.verify_logits(target, draft_tokens, cu, temp,
                                  torch.arange(N, device=device), offset=17,
                                  return_logprobs=True, max_drafts=n)
    assert (out.row_status == 0).all()
    tokens = out.tokens.cpu()
    k = out.num_emitted.cpu() - 1
    for j in range(n):  # accepted prefixes are the drafts
        assert (tokens[k > j, j] == drafts[j]).all()
    counts = outcome_counts(out.tokens, out.num_emitted, n, v)
    law = verify_law(p, drafts)
    assert_fits(counts, law, f"verify T={temp}")
    # a slightly wrong law: the target at a 10% wrong temperature
    assert_rejects(counts, verify_law(softmax64(logits.double().numpy(), temp * 1.1), drafts),
                   "verify with a 10% wrong temperature")
    # a wrong recovery law: recovering from the full target (the draft not removed)
    wrong = law.copy()
    reach = 1.0
    for j in range(n):
        wrong[j] = reach * (1 - p[j, drafts[j]]) * p[j]
        reach *= p[j, drafts[j]]
    assert_rejects(counts, wrong / wrong.sum(), "recovery without removing the draft")
    # logprobs: the target's log-probability of every emitted token
    lp = out.logprobs.cpu().double().numpy()
    tok = tokens.numpy()
    for r in range(20):
        for j in range(int(k[r]) + 1):
            assert abs(lp[r, j] - np.log(p[j, tok[r, j]])) < 1e-3


def test_verify_law_fused(device):
    v, d, n, temp = 10, 16, 3, 1.0
    g = torch.Generator().manual_seed(4)
    w = torch.randn(v, d, generator=g) * (1.5 / d ** 0.5)
    h = torch.randn(n + 1, d, generator=g)
    p = softmax64((h.double() @ w.double().T).numpy(), temp)
    drafts = [int(np.argmin(np.abs(p[j] - 0.5))) for j in range(n)]
    reqs = N // 2
    out = flashspec.verify(h.repeat(reqs, 1).to(device), w.to(device),
                           torch.tensor(drafts * reqs, dtype=torch.int32, device=device),
                           torch.arange(0, n * reqs + 1, n, dtype=torch.int32, device=device),
                           temp, torch.arange(reqs, device=device) + 10**12, max_drafts=n)
    counts = outcome_counts(out.tokens, out.num_emitted, n, v)
    assert_fits(counts, verify_law(p, drafts), "fused verify")
    assert_rejects(counts, verify_law(softmax64((h.double() @ w.double().T).numpy(), 1.1),
                                      drafts), "fused verify at a 10% wrong temperature")
