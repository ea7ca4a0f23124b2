"""flashspec.vllm against a plain-torch reference of vLLM v1's rejection
sampler (tests/_reference.py): greedy requests token for token, random
requests by the law of their outputs (chi-squared, with power checks)."""
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import flashspec
from flashspec.vllm import PLACEHOLDER_TOKEN_ID, rejection_sample, rejection_sample_from_metadata
from _reference import outcome_counts, reference_rejection_sample, softmax64, verify_law
from _stats import assert_fits, assert_rejects


def vllm_batch(num_draft_tokens, v=300, seed=0, hit=0.6, device="cpu"):
    """vLLM's tensors for one verify step: logits [num_tokens + batch, V] per
    request (drafts then bonus), flat drafts that match the target argmax
    with probability `hit`, inclusive cumulative counts."""
    g = torch.Generator().manual_seed(seed)
    batch = len(num_draft_tokens)
    num_tokens = sum(num_draft_tokens)
    logits = torch.randn(num_tokens + batch, v, generator=g) * 2
    top = logits.argmax(dim=1)
    drafts = []
    for r, n in enumerate(num_draft_tokens):
        first = sum(num_draft_tokens[:r]) + r
        for j in range(n):
            right = torch.rand((), generator=g) < hit
            t = int(top[first + j])
            drafts.append(t if right else (t + 1 + int(torch.randint(v - 1, (), generator=g))) % v)
    cu = torch.tensor(np.cumsum(num_draft_tokens), dtype=torch.int32)
    return (logits.to(device), torch.tensor(drafts, dtype=torch.int32, device=device),
            cu.to(device))


NUM_DRAFTS = [3, 0, 2, 0, 1, 4, 4, 1]  # vLLM's docstring example, and more


def test_greedy_equals_reference(device):
    for seed in range(5):
        logits, drafts, cu = vllm_batch(NUM_DRAFTS, seed=seed, device=device)
        max_spec_len = max(NUM_DRAFTS)
        ref = reference_rejection_sample(drafts, NUM_DRAFTS, max_spec_len, logits, None)
        for temperature in (None, torch.full((len(NUM_DRAFTS),), -1.0, device=device),
                            torch.zeros(len(NUM_DRAFTS), device=device)):
            out = rejection_sample(drafts, NUM_DRAFTS, max_spec_len, cu, logits, temperature,
                                   torch.arange(len(NUM_DRAFTS), device=device))
            assert out.output_token_ids.dtype == torch.int32
            assert out.output_token_ids.shape == (len(NUM_DRAFTS), max_spec_len + 1)
            assert torch.equal(out.output_token_ids.cpu(), ref)
            assert torch.equal(out.num_emitted.cpu(),
                               (ref != PLACEHOLDER_TOKEN_ID).sum(dim=1).to(torch.int32))
            assert (out.row_status == 0).all()


def test_fused_hidden_path_equals_logits_path(device):
    g = torch.Generator().manual_seed(7)
    v, d = 500, 32
    w = torch.randn(v, d, generator=g) / d ** 0.5
    batch = len(NUM_DRAFTS)
    hidden = torch.randn(sum(NUM_DRAFTS) + batch, d, generator=g)
    logits = hidden @ w.T
    top = logits.argmax(1)
    drafts = []
    for r, n in enumerate(NUM_DRAFTS):
        first = sum(NUM_DRAFTS[:r]) + r
        drafts += [int(top[first + j]) if j < n - 1 else (int(top[first + j]) + 3) % v
                   for j in range(n)]
    drafts = torch.tensor(drafts, dtype=torch.int32, device=device)
    cu = torch.tensor(np.cumsum(NUM_DRAFTS), dtype=torch.int32, device=device)
    seeds = torch.arange(batch, device=device)
    a = rejection_sample(drafts, NUM_DRAFTS, 4, cu, None, None, seeds,
                         target_hidden=hidden.to(device), lm_head_weight=w.to(device))
    b = rejection_sample(drafts, NUM_DRAFTS, 4, cu, logits.to(device), None, seeds)
    ref = reference_rejection_sample(drafts, NUM_DRAFTS, 4, logits, None)
    assert torch.equal(a.output_token_ids.cpu(), ref)
    assert torch.equal(b.output_token_ids.cpu(), ref)


def test_mixed_batch_greedy_rows_exact(device):
    logits, drafts, cu = vllm_batch(NUM_DRAFTS, seed=11, device=device)
    batch = len(NUM_DRAFTS)
    temperature = torch.tensor([-1.0, 0.8, 0.0, 1.0, -1.0, 0.5, 0.0, 2.0], device=device)
    out = rejection_sample(drafts, NUM_DRAFTS, 4, cu, logits, temperature,
                           torch.arange(batch, device=device) * 7919,
                           torch.full((batch,), 123, device=device))
    ref = reference_rejection_sample(drafts, NUM_DRAFTS, 4, logits, temperature)
    greedy = (temperature <= 0).cpu()
    assert torch.equal(out.output_token_ids.cpu()[greedy], ref[greedy])
    # random rows: well formed (drafts then one token, then -1)
    toks, emitted = out.output_token_ids.cpu(), out.num_emitted.cpu()
    d = drafts.cpu().tolist()
    for r in range(batch):
        n, k = NUM_DRAFTS[r], int(emitted[r]) - 1
        first = sum(NUM_DRAFTS[:r])
        assert 0 <= k <= n
        assert toks[r, :k].tolist() == d[first:first + k]
        assert (toks[r, k + 1:] == -1).all() and 0 <= int(toks[r, k]) < logits.shape[1]


def test_random_law_matches_reference_law(device):
    """T > 0: flashspec.vllm and the plain-torch reference both follow the
    exact law of (accepted count, emitted token); wrong laws are rejected."""
    v, n, temp, reqs = 6, 3, 0.9, 15000
    g = torch.Generator().manual_seed(5)
    logits = torch.randn(n + 1, v, generator=g) * 1.5
    p = softmax64(logits.double().numpy(), temp)
    drafts = [int(np.argmin(np.abs(p[j] - 0.5))) for j in range(n)]
    law = verify_law(p, drafts)
    num = [n] * reqs
    flat_drafts = torch.tensor(drafts * reqs, dtype=torch.int32)
    out = rejection_sample(flat_drafts.to(device), num, n,
                           torch.arange(n, n * reqs + 1, n, dtype=torch.int32, device=device),
                           logits.repeat(reqs, 1).to(device),
                           torch.full((reqs,), temp, device=device),
                           torch.arange(reqs, device=device), torch.zeros(reqs, dtype=torch.int64,
                                                                          device=device))
    fs_counts = outcome_counts(out.output_token_ids, out.num_emitted, n, v)
    assert_fits(fs_counts, law, "flashspec.vllm")
    # the reference, run on a smaller batch (it loops in Python)
    small = 4000
    ref = reference_rejection_sample(flat_drafts[:n * small], num[:small], n,
                                     logits.repeat(small, 1), torch.full((small,), temp),
                                     torch.Generator().manual_seed(9))
    ref_emitted = (ref != PLACEHOLDER_TOKEN_ID).sum(dim=1)
    assert_fits(outcome_counts(ref, ref_emitted, n, v), law, "plain-torch reference")
    # power: the law of a sampler that accepts at a wrong temperature, and of
    # one that never takes the bonus row
    assert_rejects(fs_counts, verify_law(softmax64(logits.double().numpy(), temp * 1.1), drafts),
                   "wrong temperature")
    no_bonus = verify_law(np.vstack([p[:n], p[n - 1:n]]), drafts)
    assert_rejects(fs_counts, no_bonus, "bonus from the wrong row")


def test_bonus_token_ids_replace_fused_bonus(device):
    logits, drafts, cu = vllm_batch(NUM_DRAFTS, seed=3, hit=1.0, device=device)  # all accepted
    batch = len(NUM_DRAFTS)
    bonus = torch.arange(batch, dtype=torch.int64, device=device)[:, None] + 1000
    out = rejection_sample(drafts, NUM_DRAFTS, 4, cu, logits, None,
                           torch.arange(batch, device=device), bonus_token_ids=bonus,
                           return_logprobs=True)
    toks = out.output_token_ids.cpu()
    for r, n in enumerate(NUM_DRAFTS):
        assert int(out.num_emitted[r]) == n + 1
        assert int(toks[r, n]) == 1000 + r
        assert torch.isnan(out.logprobs.cpu()[r, n])
    # partly accepted requests keep their recovered token
    logits, drafts, cu = vllm_batch(NUM_DRAFTS, seed=3, hit=0.0, device=device)
    out = rejection_sample(drafts, NUM_DRAFTS, 4, cu, logits, None,
                           torch.arange(batch, device=device), bonus_token_ids=bonus)
    ref = reference_rejection_sample(drafts, NUM_DRAFTS, 4, logits, None)
    for r, n in enumerate(NUM_DRAFTS):
        if n > 0:
            assert torch.equal(out.output_token_ids.cpu()[r], ref[r])
        else:
            assert int(out.output_token_ids[r, 0]) == 1000 + r


def test_from_metadata(device):
    logits, drafts, cu = vllm_batch(NUM_DRAFTS, seed=2, device=device)
    md = SimpleNamespace(draft_token_ids=drafts, num_draft_tokens=NUM_DRAFTS,
                         max_spec_len=max(NUM_DRAFTS), cu_num_draft_tokens=cu)
    sm = SimpleNamespace(all_greedy=True, temperature=None)
    out = rejection_sample_from_metadata(md, logits, sm, torch.arange(8, device=device))
    ref = reference_rejection_sample(drafts, NUM_DRAFTS, 4, logits, None)
    assert torch.equal(out.output_token_ids.cpu(), ref)


def test_top_k_top_p_reach_the_target(device):
    """vLLM v1 applies top-k / top-p to the target probabilities: top_k = 1
    (or a top_p below the argmax's mass) at T = 1 makes every request emit
    exactly the greedy reference, by argument and from the metadata."""
    batch = len(NUM_DRAFTS)
    ones = torch.ones(batch, device=device)
    for seed in range(3):
        logits, drafts, cu = vllm_batch(NUM_DRAFTS, seed=seed, device=device)
        ref = reference_rejection_sample(drafts, NUM_DRAFTS, 4, logits, None)
        k1 = torch.ones(batch, dtype=torch.int32, device=device)
        out = rejection_sample(drafts, NUM_DRAFTS, 4, cu, logits, ones,
                               torch.arange(batch, device=device), top_k=k1)
        assert torch.equal(out.output_token_ids.cpu(), ref)
        md = SimpleNamespace(draft_token_ids=drafts, num_draft_tokens=NUM_DRAFTS,
                             max_spec_len=4, cu_num_draft_tokens=cu)
        sm = SimpleNamespace(all_greedy=False, temperature=ones, top_k=None,
                             top_p=torch.full((batch,), 1e-3, device=device))
        out = rejection_sample_from_metadata(md, logits, sm, torch.arange(batch, device=device))
        assert torch.equal(out.output_token_ids.cpu(), ref)
        # without the filters the same seeds sample away from the argmax
        sm.top_p = None
        out = rejection_sample_from_metadata(md, logits, sm, torch.arange(batch, device=device))
        assert not torch.equal(out.output_token_ids.cpu(), ref)


def test_errors(device):
    logits, drafts, cu = vllm_batch(NUM_DRAFTS, device=device)
    seeds = torch.arange(8, device=device)
    with pytest.raises(NotImplementedError, match="without probabilities"):
        rejection_sample(drafts, NUM_DRAFTS, 4, cu, logits, None, seeds, draft_probs=logits)
    with pytest.raises(ValueError, match="verify needs num_draft_tokens"):
        # the older layout (draft rows only, bonus sampled elsewhere) is not accepted
        rejection_sample(drafts, NUM_DRAFTS, 4, cu, logits[:sum(NUM_DRAFTS)], None, seeds)
    with pytest.raises(ValueError, match="max_spec_len 3 < max"):
        rejection_sample(drafts, NUM_DRAFTS, 3, cu, logits, None, seeds)
    with pytest.raises(ValueError, match="sums to"):
        rejection_sample(drafts, NUM_DRAFTS[:-1] + [2], 4, cu, logits, None, seeds)
    with pytest.raises(TypeError, match="int32"):
        rejection_sample(drafts, NUM_DRAFTS, 4, cu.long(), logits, None, seeds)
    with pytest.raises(TypeError, match="one seed per request"):
        rejection_sample(drafts, NUM_DRAFTS, 4, cu, logits, None, 0)
    with pytest.raises(ValueError, match="exactly one of"):
        rejection_sample(drafts, NUM_DRAFTS, 4, cu, None, None, seeds)
    with pytest.raises(TypeError, match="float32"):
        rejection_sample(drafts, NUM_DRAFTS, 4, cu, logits, torch.ones(8, dtype=torch.float64,
                                                                       device=device), seeds)
