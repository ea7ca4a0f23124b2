"""A drop-in for vLLM v1's rejection sampler, for drafts without probabilities.

vLLM v1 verifies speculative tokens with the layout of its SpecDecodeMetadata:

* ``draft_token_ids``      int32 [num_tokens]: every request's drafts, flat,
  request after request;
* ``num_draft_tokens``     list[int] [batch]: drafts per request (host);
* ``cu_num_draft_tokens``  int32 [batch]: their inclusive cumulative sum
  (``[3, 3, 5]`` for ``[3, 0, 2]``);
* ``max_spec_len``         int: ``max(num_draft_tokens)``;
* ``logits``               [num_tokens + batch, V]: the target model's logits
  at ``logits_indices``, i.e. per request its n_r draft positions followed by
  its bonus position (``target_logits_indices`` / ``bonus_logits_indices``
  pick them apart);
* output ``[batch, max_spec_len + 1]`` int32, accepted drafts then one
  recovered or bonus token, padded with ``PLACEHOLDER_TOKEN_ID = -1``.

That is exactly flashspec's verify layout (request r owns rows
``cu[r - 1] + r`` through ``cu[r] + r``, with ``cu[-1]`` read as 0), so :func:`rejection_sample` is one
``fs_verify_logits`` call (or one fused ``fs_verify`` from the hidden states
and the LM head), with the bonus token sampled in the same pass instead of
by a separate sampler call.  Only drafts without probabilities are
supported (n-gram / prompt lookup, suffix decoding, EAGLE / MTP taken
greedily): ``draft_probs`` must be None.  At T = 0 a draft is accepted iff it
is the target argmax; at T > 0 iff u <= p(draft), the rejection emitting a
token from the target with the draft removed, as in vLLM's n-gram path.

Randomness is counter-based: every request needs a seed (int64 [batch]) and
an offset that changes at every step (int64 [batch], e.g. the request's
number of tokens before this step); see python/README.md for the model
runner side.
"""
from __future__ import annotations

from typing import NamedTuple, Optional, Sequence

import torch

from ._ops import verify, verify_logits

__all__ = ["PLACEHOLDER_TOKEN_ID", "RejectionOutput", "rejection_sample",
           "rejection_sample_from_metadata"]

PLACEHOLDER_TOKEN_ID = -1


class RejectionOutput(NamedTuple):
    output_token_ids: torch.Tensor  # int32 [batch, max_spec_len + 1], -1 padded
    num_emitted: torch.Tensor  # int32 [batch]: accepted drafts + 1 (0 for a failed request)
    row_status: torch.Tensor  # int32 [batch]: 0 = ok, else an fs_row_status
    logprobs: Optional[torch.Tensor]  # float32 [batch, max_spec_len + 1], NaN padded


def rejection_sample(
    draft_token_ids: torch.Tensor,
    num_draft_tokens: Optional[Sequence[int]],
    max_spec_len: int,
    cu_num_draft_tokens: torch.Tensor,
    target_logits: Optional[torch.Tensor],
    temperature: Optional[torch.Tensor],
    seed: torch.Tensor,
    offset: Optional[torch.Tensor] = None,
    *,
    draft_probs: None = None,
    target_hidden: Optional[torch.Tensor] = None,
    lm_head_weight: Optional[torch.Tensor] = None,
    bonus_token_ids: Optional[torch.Tensor] = None,
    logit_bias: Optional[torch.Tensor] = None,
    allowed: Optional[torch.Tensor] = None,
    return_logprobs: bool = False,
    top_k: Optional[torch.Tensor] = None,
    top_p: Optional[torch.Tensor] = None,
) -> RejectionOutput:
    """Rejection sampling of greedy drafts with vLLM v1's tensor layout.

    draft_token_ids int32 [num_tokens]; num_draft_tokens list [batch] or None
    (only checked); max_spec_len int; cu_num_draft_tokens int32 [batch],
    inclusive; target_logits [num_tokens + batch, V] (bf16/f16/f32), per
    request its draft rows then its bonus row -- or, instead of the logits,
    target_hidden [num_tokens + batch, D] (the final-norm hidden states at
    logits_indices) with lm_head_weight [V, D] for the fused pass.
    temperature float32 [batch] or None (all greedy); values <= 0 (vLLM's
    greedy marker) are greedy.  seed int64 [batch]; offset int64 [batch].
    bonus_token_ids [batch] or [batch, 1] (optional): bonus tokens sampled
    elsewhere; they replace the fused bonus token of requests whose drafts
    were all accepted (their logprob becomes NaN).  top_k int32 [batch] and
    top_p float32 [batch] (vLLM's sampling_metadata.top_k / top_p, None =
    off): vLLM v1's rejection sampler applies them to the target
    probabilities at every position, and so does this (the bonus token
    included).  vLLM applies min-p only in its sampler, not to the target
    of the drafts, so it is not taken here.

    Returns RejectionOutput(output_token_ids int32 [batch, max_spec_len + 1]
    padded with -1, num_emitted int32 [batch], row_status int32 [batch],
    logprobs or None).  Nothing is read back to the host.
    """
    if draft_probs is not None:
        raise NotImplementedError(
            "flashspec verifies drafts without probabilities (n-gram, suffix, EAGLE/MTP taken "
            "greedily); draft_probs must be None")
    if (target_logits is None) == (target_hidden is None):
        raise ValueError("pass exactly one of target_logits or target_hidden (with lm_head_weight)")
    if target_hidden is not None and lm_head_weight is None:
        raise ValueError("target_hidden needs lm_head_weight ([V, D])")
    if target_logits is not None and lm_head_weight is not None:
        raise ValueError("lm_head_weight goes with target_hidden, not with target_logits")
    if isinstance(max_spec_len, bool) or not isinstance(max_spec_len, int) or max_spec_len < 0:
        raise ValueError(f"max_spec_len must be an int >= 0, got {max_spec_len!r}")
    if not isinstance(cu_num_draft_tokens, torch.Tensor) or cu_num_draft_tokens.dim() != 1:
        raise ValueError("cu_num_draft_tokens must be a 1-D tensor [batch] (inclusive cumsum)")
    if not isinstance(draft_token_ids, torch.Tensor):
        raise TypeError("draft_token_ids must be a torch.Tensor")
    batch = cu_num_draft_tokens.shape[0]
    num_tokens = draft_token_ids.shape[0] if draft_token_ids.dim() == 1 else -1
    if num_draft_tokens is not None:
        if len(num_draft_tokens) != batch:
            raise ValueError(f"num_draft_tokens has {len(num_draft_tokens)} entries, "
                             f"cu_num_draft_tokens {batch}")
        if sum(num_draft_tokens) != num_tokens:
            raise ValueError(f"num_draft_tokens sums to {sum(num_draft_tokens)} but "
                             f"draft_token_ids has {num_tokens}")
        if num_draft_tokens and max(num_draft_tokens) > max_spec_len:
            raise ValueError(f"max_spec_len {max_spec_len} < max(num_draft_tokens) "
                             f"{max(num_draft_tokens)}")
    target = target_logits if target_logits is not None else target_hidden
    if not isinstance(target, torch.Tensor):
        raise TypeError("target_logits / target_hidden must be a torch.Tensor")
    device = target.device
    if cu_num_draft_tokens.device != device:
        raise ValueError(f"cu_num_draft_tokens is on {cu_num_draft_tokens.device}, "
                         f"the target on {device}")
    if cu_num_draft_tokens.dtype != torch.int32:
        raise TypeError(f"cu_num_draft_tokens has dtype {cu_num_draft_tokens.dtype}; expected int32")
    # vLLM's inclusive [batch] -> flashspec's offsets [batch + 1] from 0
    offsets = torch.nn.functional.pad(cu_num_draft_tokens, (1, 0))
    if temperature is None:
        temp = torch.zeros(batch, dtype=torch.float32, device=device)
    else:
        if not isinstance(temperature, torch.Tensor):
            raise TypeError("temperature must be a float32 tensor [batch] or None (all greedy)")
        if temperature.dtype != torch.float32:
            raise TypeError(f"temperature has dtype {temperature.dtype}; expected float32")
        temp = temperature.clamp_min(0.0)  # vLLM's greedy marker (-1 or 0) -> 0; NaN stays NaN
    if not isinstance(seed, torch.Tensor):
        raise TypeError("seed must be an int64 tensor [batch] (one seed per request: requests "
                        "sharing a seed and an offset would share their random numbers)")
    common = dict(temperature=temp, seed=seed, offset=offset, logit_bias=logit_bias,
                  allowed=allowed, return_logprobs=return_logprobs, max_drafts=max_spec_len,
                  top_k=top_k, top_p=top_p)
    if target_logits is not None:
        out = verify_logits(target_logits, draft_token_ids, offsets, **common)
    else:
        out = verify(target_hidden, lm_head_weight, draft_token_ids, offsets, **common)
    tokens, emitted, status, logprobs = out
    if bonus_token_ids is not None:
        tokens, logprobs = _replace_bonus(tokens, logprobs, emitted, offsets, bonus_token_ids,
                                          batch, max_spec_len)
    return RejectionOutput(tokens, emitted, status, logprobs)


def _replace_bonus(tokens, logprobs, emitted, offsets, bonus_token_ids, batch, max_spec_len):
    if not isinstance(bonus_token_ids, torch.Tensor):
        raise TypeError("bonus_token_ids must be a tensor [batch] or [batch, 1]")
    if bonus_token_ids.device != tokens.device:
        raise ValueError(f"bonus_token_ids is on {bonus_token_ids.device}, "
                         f"the target on {tokens.device}")
    bonus = bonus_token_ids.reshape(-1)
    if bonus.shape[0] != batch:
        raise ValueError(f"bonus_token_ids must have {batch} entries, got "
                         f"{tuple(bonus_token_ids.shape)}")
    n = (offsets[1:] - offsets[:-1]).to(torch.int64)  # drafts per request
    all_accepted = (emitted.to(torch.int64) == n + 1).unsqueeze(1)
    col = n.clamp(0, max_spec_len).unsqueeze(1)
    current = tokens.gather(1, col)
    tokens = tokens.scatter(1, col, torch.where(all_accepted, bonus.to(tokens.dtype).unsqueeze(1),
                                                current))
    if logprobs is not None:
        cur_lp = logprobs.gather(1, col)
        logprobs = logprobs.scatter(1, col, torch.where(all_accepted,
                                                        torch.full_like(cur_lp, float("nan")),
                                                        cur_lp))
    return tokens, logprobs


def rejection_sample_from_metadata(spec_decode_metadata, logits: torch.Tensor, sampling_metadata,
                                   seed: torch.Tensor, offset: Optional[torch.Tensor] = None,
                                   **kwargs) -> RejectionOutput:
    """rejection_sample() reading vLLM's objects by attribute (duck-typed; vLLM
    is not imported): spec_decode_metadata.{draft_token_ids, num_draft_tokens,
    max_spec_len, cu_num_draft_tokens}, sampling_metadata.{temperature,
    all_greedy, top_k, top_p}; logits [num_tokens + batch, V] as computed at
    logits_indices.
    Pass logits=None with target_hidden= and lm_head_weight= for the fused pass."""
    md = spec_decode_metadata
    temperature = None if getattr(sampling_metadata, "all_greedy", False) else \
        getattr(sampling_metadata, "temperature", None)
    for name in ("top_k", "top_p"):  # None in vLLM when no request sets it
        kwargs.setdefault(name, getattr(sampling_metadata, name, None))
    return rejection_sample(md.draft_token_ids, list(md.num_draft_tokens), int(md.max_spec_len),
                            md.cu_num_draft_tokens, logits, temperature, seed, offset, **kwargs)
