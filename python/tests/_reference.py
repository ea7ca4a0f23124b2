"""Plain-torch / numpy references the tests compare flashspec against.

* reference_rejection_sample: vLLM v1's rejection sampling for drafts
  without probabilities (greedy requests: accept while the draft is the
  target argmax, emit the argmax at the first mismatch, the bonus argmax if
  all match; random requests: accept draft x iff u <= p(x), else emit a token
  from p with x removed, bonus from the last row), written here from the
  algorithm, not taken from the package.
* verify_law: the exact joint law of (accepted count, emitted token) of one
  request, for the chi-squared tests.
* filtered_probs: one row's target after temperature, bias, mask, top-k,
  top-p and min-p, by sorting.
* reference_tree_greedy: the greedy (T = 0) walk of tree verify.
"""
from typing import List, Optional, Sequence, Tuple

import numpy as np
import torch


def reference_rejection_sample(draft_token_ids: torch.Tensor, num_draft_tokens: Sequence[int],
                               max_spec_len: int, logits: torch.Tensor,
                               temperature: Optional[torch.Tensor],
                               generator: Optional[torch.Generator] = None) -> torch.Tensor:
    """Output [batch, max_spec_len + 1] int32, -1 padded (vLLM's layout).
    logits [num_tokens + batch, V]: per request its draft rows, then its bonus row."""
    drafts = draft_token_ids.cpu().tolist()
    logits = logits.detach().cpu().double()
    temps = None if temperature is None else temperature.cpu().tolist()
    batch = len(num_draft_tokens)
    out = torch.full((batch, max_spec_len + 1), -1, dtype=torch.int32)
    start = 0
    for r, n in enumerate(num_draft_tokens):
        rows = logits[start + r:start + r + n + 1]
        x = drafts[start:start + n]
        t = 0.0 if temps is None else temps[r]
        if t < 1e-5:  # greedy (vLLM marks greedy requests with T <= 0)
            top = rows.argmax(dim=-1).tolist()
            for j in range(n):
                out[r, j] = top[j]
                if x[j] != top[j]:
                    break
            else:
                out[r, n] = top[n]
        else:
            p = torch.softmax(rows / t, dim=-1)
            for j in range(n):
                u = torch.rand((), dtype=torch.float64, generator=generator)
                if u <= p[j, x[j]]:
                    out[r, j] = x[j]
                    continue
                residual = p[j].clone()
                residual[x[j]] = 0.0
                out[r, j] = int(torch.multinomial(residual / residual.sum(), 1, generator=generator))
                break
            else:
                out[r, n] = int(torch.multinomial(p[n], 1, generator=generator))
        start += n
    return out


def softmax64(logits, temperature: float) -> np.ndarray:
    z = np.asarray(logits, dtype=np.float64) / temperature
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


def verify_law(probs: np.ndarray, drafts: Sequence[int]) -> np.ndarray:
    """probs [n + 1, V] (the target at each draft position, then the bonus
    position), drafts [n] -> P[k, y]: k drafts accepted, then token y emitted
    (recovered for k < n, bonus for k = n).  P(k, y) = reach_k p_k(y) for
    y != x_k, reach_k = prod_{i<k} p_i(x_i): sampling token by token."""
    n = len(drafts)
    v = probs.shape[1]
    law = np.zeros((n + 1, v))
    reach = 1.0
    for k in range(n):
        row = probs[k].copy()
        row[drafts[k]] = 0.0
        law[k] = reach * row
        reach *= probs[k, drafts[k]]
    law[n] = reach * probs[n]
    return law


def outcome_counts(tokens: torch.Tensor, num_emitted: torch.Tensor, n: int, v: int) -> np.ndarray:
    """Counts of (k = num_emitted - 1, last emitted token) over requests."""
    tokens = tokens.cpu().numpy()
    k = num_emitted.cpu().numpy().astype(np.int64) - 1
    assert (k >= 0).all() and (k <= n).all(), "a request failed or emitted too many tokens"
    y = tokens[np.arange(tokens.shape[0]), k]
    counts = np.zeros((n + 1, v))
    np.add.at(counts, (k, y), 1)
    return counts


def filtered_probs(logits, temperature: float, bias=None, allowed=None, top_k: int = 0,
                   top_p: float = 1.0, min_p: float = 0.0) -> np.ndarray:
    """The filtered target of one row, float64 [V], by sorting: scores
    s = (l + b) / T on the allowed tokens, then top-k (keep s >= the k-th
    largest, ties kept), top-p on the renormalised top-k set (keep a token iff
    the strictly higher-scoring ones hold less than top_p: the token crossing
    top_p is kept), min-p (keep p >= min_p * p_max), and the softmax of s over
    what is kept.  Off values: top_k 0 or >= V, top_p 1, min_p 0."""
    s = np.asarray(logits, dtype=np.float64).copy()
    if bias is not None:
        s = s + np.asarray(bias, dtype=np.float64)
    s = s / temperature
    if allowed is not None:
        s = np.where(np.asarray(allowed, dtype=bool), s, -np.inf)
    keep = np.isfinite(s)
    if 0 < top_k < s.size:
        kth = np.sort(s[keep])[::-1][min(top_k, keep.sum()) - 1]
        keep &= s >= kth
    if top_p < 1.0:
        p = np.where(keep, np.exp(s - s[keep].max()), 0.0)
        p /= p.sum()
        order = np.argsort(-s, kind="stable")
        higher = np.empty_like(p)  # mass of the tokens scoring strictly higher
        acc, i = 0.0, 0
        while i < order.size:  # tie groups share one fate
            j = i
            while j < order.size and s[order[j]] == s[order[i]]:
                j += 1
            higher[order[i:j]] = acc
            acc += p[order[i:j]].sum()
            i = j
        keep &= higher < top_p
    if min_p > 0.0:
        keep &= s - s[keep].max() >= np.log(min_p)
    out = np.where(keep, np.exp(s - s[keep].max()), 0.0)
    return out / out.sum()


def reference_tree_greedy(logits: torch.Tensor, tokens: Sequence[int],
                          parents: Sequence[int]) -> Tuple[List[int], List[int]]:
    """Tree verify of one request at T = 0, walked in plain Python: logits
    [n + 1, V] (row 0 the root, row 1 + i node i).  At the current node the
    child (lowest index first) whose token is the argmax is accepted; if none
    is, the argmax is emitted and the walk stops; at a leaf the argmax is the
    bonus token.  Returns (emitted tokens, accepted node indices)."""
    top = logits.double().argmax(dim=1).tolist()
    emitted, path, node = [], [], -1
    while True:
        a = top[node + 1]
        child = next((i for i, par in enumerate(parents) if par == node and tokens[i] == a), None)
        emitted.append(a)
        if child is None:
            return emitted, path
        path.append(child)
        node = child
