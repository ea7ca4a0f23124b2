"""top_k / top_p / min_p through the Python entry: the kept set against the
sort-based reference (tests/_reference.py), the law by chi-squared with
power checks, bad values as ROW_BAD_FILTER, scalar broadcast, and
return_filter_fallback."""
import numpy as np
import pytest
import torch

import flashspec
from _reference import filtered_probs, outcome_counts, softmax64, verify_law
from _stats import assert_fits, assert_rejects

N = 20000


def counts_of(tokens, v):
    return np.bincount(tokens.cpu().numpy().astype(np.int64), minlength=v)[:v]


def batch_params(rows, v, g):
    """Per-row filters mixing each filter alone, all three, and off values."""
    top_k = torch.randint(0, 80, (rows,), generator=g, dtype=torch.int32)
    top_k[::5] = 0
    top_k[1::7] = v + 3  # >= V: off
    top_p = torch.rand(rows, generator=g) * 0.9 + 0.05
    top_p[::3] = 1.0
    min_p = torch.rand(rows, generator=g) * 0.3
    min_p[1::4] = 0.0
    temp = torch.rand(rows, generator=g) * 1.5 + 0.3
    temp[::6] = 0.0  # greedy rows: the filters change nothing
    return temp, top_k, top_p, min_p


def test_tokens_inside_reference_kept_set(device):
    rows, v = 48, 300
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(rows, v, generator=g) * 3
    logits[4, 10:20] = 5.0  # a tie group at the top
    bias = torch.randn(rows, v, generator=g)
    temp, top_k, top_p, min_p = batch_params(rows, v, g)
    kept = []
    for r in range(rows):
        if temp[r] == 0:
            kept.append(None)
            continue
        p = filtered_probs(logits[r], float(temp[r]), bias[r], None, int(top_k[r]),
                           float(top_p[r]), float(min_p[r]))
        kept.append(set(np.flatnonzero(p > 0).tolist()))
    greedy = (logits + bias).argmax(dim=1)
    args = [x.to(device) for x in (temp, top_k, top_p, min_p)]
    seen = [set() for _ in range(rows)]
    for seed in range(60):
        out = flashspec.sample_logits(logits.to(device), args[0], seed, offset=3,
                                      logit_bias=bias.to(device), top_k=args[1], top_p=args[2],
                                      min_p=args[3], return_logprobs=True)
        assert (out.row_status == 0).all()
        tok = out.tokens.cpu().tolist()
        for r in range(rows):
            if kept[r] is None:
                assert tok[r] == int(greedy[r]), f"greedy row {r} changed by the filters"
            else:
                assert tok[r] in kept[r], f"row {r}: token {tok[r]} outside the kept set"
                seen[r].add(tok[r])
    # the filters do not collapse rows either: wide kept sets show several tokens
    assert any(len(seen[r]) > 1 for r in range(rows) if kept[r] and len(kept[r]) > 5)


def test_logprobs_under_filtered_law(device):
    rows, v = 16, 100
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(rows, v, generator=g) * 2
    out = flashspec.sample_logits(logits.to(device), 0.9, 5, top_k=20, top_p=0.7, min_p=0.05,
                                  return_logprobs=True)
    for r in range(rows):
        p = filtered_probs(logits[r], 0.9, top_k=20, top_p=0.7, min_p=0.05)
        t = int(out.tokens[r])
        assert abs(float(out.logprobs[r]) - np.log(p[t])) < 1e-3


def test_filters_that_cut_nothing_change_nothing(device):
    g = torch.Generator().manual_seed(2)
    logits = torch.randn(64, 50, generator=g).to(device)
    seeds = torch.arange(64, device=device)
    plain = flashspec.sample_logits(logits, 1.0, seeds).tokens
    off = flashspec.sample_logits(logits, 1.0, seeds, top_k=0, top_p=1.0, min_p=0.0).tokens
    wide = flashspec.sample_logits(logits, 1.0, seeds, top_k=50).tokens
    assert torch.equal(plain, off) and torch.equal(plain, wide)
    cut = flashspec.sample_logits(logits, 1.0, seeds, top_k=2).tokens
    assert not torch.equal(plain, cut)


def test_scalar_broadcast_equals_tensor(device):
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(32, 80, generator=g).to(device)
    seeds = torch.arange(32, device=device)
    a = flashspec.sample_logits(logits, 1.0, seeds, top_k=7, top_p=0.8, min_p=0.02).tokens
    b = flashspec.sample_logits(
        logits, 1.0, seeds, top_k=torch.full((32,), 7, dtype=torch.int32, device=device),
        top_p=torch.full((32,), 0.8, device=device),
        min_p=torch.full((32,), 0.02, device=device)).tokens
    assert torch.equal(a, b)


# ---- the law ---------------------------------------------------------------

LAW_CASES = [  # (name, filters, wrong filters the same draws must reject)
    ("top_k", dict(top_k=6), [dict(top_k=5), dict(top_k=7)]),
    ("top_p", dict(top_p=0.6), [dict(top_p=0.45), dict()]),
    ("min_p", dict(min_p=0.1), [dict(min_p=0.2), dict(min_p=0.03)]),
    # each of the three cuts a token here, so dropping or moving any is seen
    ("all", dict(top_k=10, top_p=0.95, min_p=0.1), [dict(top_k=10, top_p=0.95),
                                                    dict(top_k=6, top_p=0.95, min_p=0.1),
                                                    dict(top_k=10, top_p=0.8, min_p=0.1)]),
]


@pytest.mark.parametrize("name,filters,wrongs", LAW_CASES, ids=[c[0] for c in LAW_CASES])
def test_sample_law_with_filters(device, name, filters, wrongs):
    v, temp = 24, 0.9
    g = torch.Generator().manual_seed(4)
    logits = torch.randn(1, v, generator=g) * 1.2
    out = flashspec.sample_logits(logits.expand(N, v).contiguous().to(device), temp,
                                  torch.arange(N, device=device), **filters)
    assert (out.row_status == 0).all()
    counts = counts_of(out.tokens, v)
    assert_fits(counts, filtered_probs(logits[0], temp, **filters), f"sample {name}")
    for wrong in wrongs:
        assert_rejects(counts, filtered_probs(logits[0], temp, **wrong), f"{name} as {wrong}")


def test_verify_law_with_filters(device):
    v, n, temp = 8, 2, 1.0
    filters = dict(top_k=5, top_p=0.85)
    g = torch.Generator().manual_seed(5)
    logits = torch.randn(n + 1, v, generator=g) * 1.5
    p = np.stack([filtered_probs(logits[j], temp, **filters) for j in range(n + 1)])
    drafts = [int(np.argmin(np.abs(p[j] - 0.45))) for j in range(n)]
    reqs = N // 2
    out = flashspec.verify_logits(logits.repeat(reqs, 1).to(device),
                                  torch.tensor(drafts * reqs, dtype=torch.int32, device=device),
                                  torch.arange(0, n * reqs + 1, n, dtype=torch.int32, device=device),
                                  temp, torch.arange(reqs, device=device), max_drafts=n,
                                  return_filter_fallback=True, **filters)
    assert (out.row_status == 0).all()
    counts = outcome_counts(out.tokens, out.num_emitted, n, v)
    assert_fits(counts, verify_law(p, drafts), "verify with top-k and top-p")
    assert_rejects(counts, verify_law(softmax64(logits.double().numpy(), temp), drafts),
                   "verify against the unfiltered target")
    wrong = np.stack([filtered_probs(logits[j], temp, top_k=4, top_p=0.85) for j in range(n + 1)])
    assert_rejects(counts, verify_law(wrong, drafts), "verify with top_k off by one")
    fb = out.filter_fallback.cpu()
    assert fb.shape == (reqs,) and fb.dtype == torch.int32
    assert ((fb >= 0) & (fb <= n + 1)).all()


def test_draft_outside_kept_set_is_rejected(device):
    g = torch.Generator().manual_seed(6)
    logits = torch.randn(2, 40, generator=g)
    second = int(logits[0].argsort(descending=True)[1])
    drafts = torch.tensor([second], dtype=torch.int32, device=device)
    cu = torch.tensor([0, 1], dtype=torch.int32, device=device)
    for seed in range(50):
        out = flashspec.verify_logits(logits.to(device), drafts, cu, 1.0, seed, top_k=1)
        assert int(out.num_emitted[0]) == 1
        assert int(out.tokens[0, 0]) == int(logits[0].argmax())


# ---- status, errors, fallback ---------------------------------------------


def test_bad_filter_values_fail_their_rows(device):
    logits = torch.randn(9, 30, device=device)
    top_k = torch.tensor([-1, 0, 0, 0, 0, 0, 0, 0, 3], dtype=torch.int32, device=device)
    nan = float("nan")
    top_p = torch.tensor([1, 0.0, 1.5, nan, 1, 1, 1, 1, 0.5], device=device)
    min_p = torch.tensor([0, 0, 0, 0, 1.0, -0.1, nan, 0, 0.1], device=device)
    temp = torch.tensor([1, 1, 1, 1, 1, 1, 1, 0.0, 1], device=device)
    temp[0] = 0.0  # greedy rows fail too
    out = flashspec.sample_logits(logits, temp, 0, top_k=top_k, top_p=top_p, min_p=min_p,
                                  return_logprobs=True, return_filter_fallback=True)
    bad = flashspec.ROW_BAD_FILTER
    assert out.row_status.cpu().tolist() == [bad] * 7 + [0, 0]
    assert out.tokens.cpu().tolist()[:7] == [-1] * 7
    assert torch.isnan(out.logprobs.cpu()[:7]).all()
    assert out.filter_fallback.cpu().tolist()[:7] == [0] * 7
    with pytest.raises(flashspec.FlashspecRowError) as e:
        flashspec.check_row_status(out.row_status)
    assert set(e.value.rows.values()) == {bad}
    # verify: the request fails as a whole
    drafts = torch.tensor([1, 2, 3], dtype=torch.int32, device=device)
    cu = torch.tensor([0, 2, 3], dtype=torch.int32, device=device)
    out = flashspec.verify_logits(logits[:5], drafts, cu, 1.0, 0,
                                  top_p=torch.tensor([0.9, 2.0], device=device))
    assert out.row_status.cpu().tolist() == [0, bad]
    assert out.num_emitted.cpu().tolist()[1] == 0


def test_filter_argument_errors(device):
    logits = torch.randn(4, 30, device=device)
    with pytest.raises(TypeError, match="top_k has dtype"):
        flashspec.sample_logits(logits, 1.0, 0, top_k=torch.ones(4, device=device))
    with pytest.raises(TypeError, match="top_k must be an integer"):
        flashspec.sample_logits(logits, 1.0, 0, top_k=2.5)
    with pytest.raises(ValueError, match="int32 range"):
        flashspec.sample_logits(logits, 1.0, 0, top_k=2**31)
    with pytest.raises(TypeError, match="top_p has dtype"):
        flashspec.sample_logits(logits, 1.0, 0, top_p=torch.ones(4, dtype=torch.float64,
                                                                   device=device))
    with pytest.raises(ValueError, match=r"min_p must have shape \(4,\)"):
        flashspec.sample_logits(logits, 1.0, 0, min_p=torch.zeros(3, device=device))


def test_filter_fallback_output(device):
    g = torch.Generator().manual_seed(7)
    v = 2000
    logits = torch.randn(6, v, generator=g).to(device)
    # top_k above the 64 candidates a pass keeps forces the second pass;
    # small k, greedy and unfiltered rows never take it
    top_k = torch.tensor([500, 500, 3, 0, 500, 0], dtype=torch.int32, device=device)
    temp = torch.tensor([1.0, 1.0, 1.0, 1.0, 0.0, 1.0], device=device)
    out = flashspec.sample_logits(logits, temp, 1, top_k=top_k, return_filter_fallback=True)
    fb = out.filter_fallback
    assert fb.dtype == torch.int32 and fb.shape == (6,) and fb.device == logits.device
    assert fb.cpu().tolist() == [1, 1, 0, 0, 0, 0]
    assert flashspec.sample_logits(logits, temp, 1, top_k=top_k).filter_fallback is None
    # the outputs still unpack as before the attribute existed
    tokens, status, logprobs = out
    assert logprobs is None and torch.equal(tokens, out.tokens)
    # verify: rows of the request, in [0, n_r + 1]
    drafts = torch.tensor([1, 2, 3, 4], dtype=torch.int32, device=device)
    cu = torch.tensor([0, 3, 4], dtype=torch.int32, device=device)
    out = flashspec.verify_logits(logits, drafts, cu, 1.0, 2, top_k=500,
                                  return_filter_fallback=True)
    fb = out.filter_fallback.cpu().tolist()
    assert 1 <= fb[0] <= 4 and 1 <= fb[1] <= 2
    t, e, s, lp = out
    assert torch.equal(t, out.tokens)
