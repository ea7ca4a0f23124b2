"""The ops on torch tensors: validation, contexts, workspaces, the calls.

Every op takes the device from its tensors (CPU tensors -> the CPU backend,
CUDA tensors -> the CUDA backend on the device's current stream), checks
dtypes, devices and shapes on the host, and calls the library through the
C extension with data pointers.  Nothing here synchronizes the host with the
GPU or reads a tensor's values, so the CUDA ops can be captured in a CUDA
graph; values that only the device can check (temperatures, draft ids,
offsets, non-finite logits, fully masked rows) come back per row in the
``row_status`` tensor.
"""
from __future__ import annotations

import threading
from typing import Dict, NamedTuple, Optional, Tuple, Union

import torch

from . import _flashspec as _C

__all__ = [
    "FlashspecError",
    "FlashspecRowError",
    "SampleOutput",
    "ArgmaxOutput",
    "VerifyOutput",
    "VerifyTreeOutput",
    "sample",
    "sample_logits",
    "draft_argmax",
    "draft_argmax_logits",
    "verify",
    "verify_logits",
    "verify_tree",
    "verify_tree_logits",
    "check_row_status",
    "row_status_string",
    "pack_allowed",
    "clear_workspace_cache",
]


class FlashspecError(RuntimeError):
    """A call-level error reported by the flashspec library.

    ``status`` is the ``fs_status`` value, ``status_name`` its enumerator
    (``"FS_ERR_INVALID_SIZE"``...), ``message`` the library's detailed message
    (``fs_context_last_error``).  Argument errors that the Python layer finds
    first (dtype, device, shape, contiguity) are ``TypeError`` / ``ValueError``.
    """

    def __init__(self, status: int, message: str):
        self.status = int(status)
        self.status_name = _C.status_name(self.status)
        self.message = str(message)
        super().__init__(f"{self.message} [{self.status_name}]")

    def __reduce__(self):
        return (type(self), (self.status, self.message))


class FlashspecRowError(FlashspecError):
    """Raised by :func:`check_row_status` when some rows failed; ``rows`` maps
    each failed row (request, for verify) to its ``fs_row_status``."""

    def __init__(self, status: int, message: str, rows: Optional[Dict[int, int]] = None):
        super().__init__(status, message)
        self.rows = dict(rows or {})

    def __reduce__(self):
        return (type(self), (self.status, self.message, self.rows))


_C._set_error_class(FlashspecError)


class _SampleFields(NamedTuple):
    tokens: torch.Tensor  # int32 [rows]; -1 for a failed row
    row_status: torch.Tensor  # int32 [rows]; 0 = ok, else an fs_row_status
    logprobs: Optional[torch.Tensor]  # float32 [rows] when return_logprobs, else None


class SampleOutput(_SampleFields):
    """(tokens, row_status, logprobs), plus the attribute filter_fallback:
    int32 [rows] when return_filter_fallback, else None.  It is an attribute,
    not a tuple field, so that `tokens, row_status, logprobs = out` written
    before it existed keeps working."""

    filter_fallback: Optional[torch.Tensor] = None

    def __new__(cls, tokens, row_status, logprobs, filter_fallback=None):
        self = super().__new__(cls, tokens, row_status, logprobs)
        self.filter_fallback = filter_fallback
        return self


class ArgmaxOutput(NamedTuple):
    tokens: torch.Tensor  # int32 [rows]
    row_status: torch.Tensor  # int32 [rows]
    logits: Optional[torch.Tensor]  # float32 [rows]: the argmax's logit, when return_logits


class _VerifyFields(NamedTuple):
    tokens: torch.Tensor  # int32 [requests, max_drafts + 1], -1 padded
    num_emitted: torch.Tensor  # int32 [requests]: accepted drafts + 1 (0 for a failed request)
    row_status: torch.Tensor  # int32 [requests]
    logprobs: Optional[torch.Tensor]  # float32 [requests, max_drafts + 1], NaN padded


class VerifyOutput(_VerifyFields):
    """(tokens, num_emitted, row_status, logprobs), plus the attribute
    filter_fallback: int32 [requests] (rows of the request that took the
    filters' second pass) when return_filter_fallback, else None; an
    attribute for the same reason as SampleOutput's."""

    filter_fallback: Optional[torch.Tensor] = None

    def __new__(cls, tokens, num_emitted, row_status, logprobs, filter_fallback=None):
        self = super().__new__(cls, tokens, num_emitted, row_status, logprobs)
        self.filter_fallback = filter_fallback
        return self


class _VerifyTreeFields(NamedTuple):
    tokens: torch.Tensor  # int32 [requests, max_depth + 1]: accepted path, then one token; -1 padded
    path_nodes: torch.Tensor  # int32 [requests, max_depth]: accepted node indices, -1 padded
    num_emitted: torch.Tensor  # int32 [requests]: accepted nodes + 1 (0 for a failed request)
    row_status: torch.Tensor  # int32 [requests]
    logprobs: Optional[torch.Tensor]  # float32 [requests, max_depth + 1], NaN padded


class VerifyTreeOutput(_VerifyTreeFields):
    """(tokens, path_nodes, num_emitted, row_status, logprobs), plus the
    attribute filter_fallback: int32 [requests] (rows of the request that
    took the filters' second pass, 0 .. n_r + 1) when return_filter_fallback,
    else None; an attribute for the same reason as SampleOutput's."""

    filter_fallback: Optional[torch.Tensor] = None

    def __new__(cls, tokens, path_nodes, num_emitted, row_status, logprobs,
                filter_fallback=None):
        self = super().__new__(cls, tokens, path_nodes, num_emitted, row_status, logprobs)
        self.filter_fallback = filter_fallback
        return self


# ---- contexts and workspaces ---------------------------------------------

_DTYPES = {
    torch.float32: _C.DTYPE_F32,
    torch.float16: _C.DTYPE_F16,
    torch.bfloat16: _C.DTYPE_BF16,
}
_SEED_DTYPES = (torch.int64,) + ((torch.uint64,) if hasattr(torch, "uint64") else ())
_MASK_DTYPES = (torch.int32,) + ((torch.uint32,) if hasattr(torch, "uint32") else ())


class _Context:
    """One fs_context (one device), its lock and its workspaces per stream."""

    def __init__(self, device: torch.device):
        self.device = device
        if device.type == "cuda":
            self.handle = _C.context_create(_C.DEVICE_CUDA, device.index)
        else:
            self.handle = _C.context_create(_C.DEVICE_CPU, 0)
        # A context holds one stream and one last-error message: calls on it
        # are serialized (the library runs them with the GIL released).
        self.lock = threading.Lock()
        self.workspaces: Dict[int, torch.Tensor] = {}

    def workspace(self, stream_key: int, nbytes: int) -> Tuple[int, int]:
        """(pointer, bytes) of a workspace of at least nbytes for this stream,
        grown (never shrunk) as needed.  On CUDA it is allocated on the
        current stream, the one the op runs on."""
        if nbytes == 0:
            return 0, 0
        ws = self.workspaces.get(stream_key)
        if ws is None or ws.numel() < nbytes:
            if ws is not None:
                nbytes = max(nbytes, ws.numel() + ws.numel() // 2)
            ws = torch.empty(nbytes, dtype=torch.uint8, device=self.device)
            self.workspaces[stream_key] = ws
        return ws.data_ptr(), ws.numel()


_contexts: Dict[Tuple[str, int], _Context] = {}
_contexts_lock = threading.Lock()


def _context(device: torch.device) -> _Context:
    key = (device.type, device.index if device.index is not None else -1)
    ctx = _contexts.get(key)
    if ctx is None:
        with _contexts_lock:
            ctx = _contexts.get(key)
            if ctx is None:
                ctx = _Context(device)
                _contexts[key] = ctx
    return ctx


def clear_workspace_cache() -> None:
    """Drop the cached workspaces (they are re-allocated by the next call)."""
    with _contexts_lock:
        for ctx in _contexts.values():
            with ctx.lock:
                ctx.workspaces.clear()


class _Call:
    """Context manager: the device's context, locked, its stream set to the
    current torch stream; .ws(nbytes) gives the workspace for that stream."""

    def __init__(self, device: torch.device):
        self.ctx = _context(device)
        if device.type == "cuda":
            stream = torch.cuda.current_stream(device)
            self.stream_ptr = stream.cuda_stream
        else:
            self.stream_ptr = 0

    def __enter__(self):
        self.ctx.lock.acquire()
        try:
            if self.ctx.device.type == "cuda":
                _C.context_set_stream(self.ctx.handle, self.stream_ptr)
        except BaseException:
            self.ctx.lock.release()
            raise
        return self

    def __exit__(self, *exc):
        self.ctx.lock.release()
        return False

    def ws(self, nbytes: int) -> Tuple[int, int]:
        return self.ctx.workspace(self.stream_ptr, nbytes)


# ---- argument checks -----------------------------------------------------


def _device_of(name: str, t) -> torch.device:
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
    if t.device.type not in ("cpu", "cuda"):
        raise ValueError(f"{name} is on {t.device}; flashspec runs on CPU and CUDA tensors")
    return t.device


def _same_device(name: str, t: torch.Tensor, device: torch.device, ref: str) -> None:
    if t.device != device:
        raise ValueError(f"{name} is on {t.device}, but {ref} is on {device}: "
                         f"every tensor of a call must be on the same device")


def _float_matrix(name: str, t, device: torch.device, ref: str, copy_ok: bool) -> torch.Tensor:
    """A 2-D bf16/f16/f32 tensor, row-major."""
    _device_of(name, t)
    _same_device(name, t, device, ref)
    if t.dtype not in _DTYPES:
        raise TypeError(f"{name} has dtype {t.dtype}; flashspec takes bfloat16, float16 or float32")
    if t.dim() != 2:
        raise ValueError(f"{name} must be 2-D, got shape {tuple(t.shape)}")
    if not t.is_contiguous():
        if not copy_ok:
            raise ValueError(
                f"{name} (shape {tuple(t.shape)}, strides {t.stride()}) is not contiguous; "
                f"flashspec reads it row-major and does not copy it (a copy would cost as much "
                f"as the op): pass {name}.contiguous()")
        t = t.contiguous()
    return t


def _vector(name: str, x, n: int, dtypes: tuple, device: torch.device, ref: str,
            scalar_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """A 1-D tensor of n elements (copied to contiguous if strided), or a
    Python number broadcast to one when scalar_dtype is given."""
    if not isinstance(x, torch.Tensor):
        if scalar_dtype is not None and isinstance(x, (int, float)) and not isinstance(x, bool):
            if scalar_dtype == torch.int32:
                if not isinstance(x, int):
                    raise TypeError(f"{name} must be an integer, got {x!r}")
                if not -2**31 <= x < 2**31:
                    raise ValueError(f"{name} = {x} is outside the int32 range")
            if scalar_dtype == torch.int64:
                if not isinstance(x, int):
                    raise TypeError(f"{name} must be an integer, got {x!r}")
                if not 0 <= x < 2**64:
                    raise ValueError(f"{name} = {x} is outside the uint64 range")
                x = x - 2**64 if x >= 2**63 else x  # the same 64 bits, as int64
            return torch.full((n,), x, dtype=scalar_dtype, device=device)
        what = "a tensor or a Python number" if scalar_dtype is not None else "a torch.Tensor"
        raise TypeError(f"{name} must be {what}, got {type(x).__name__}")
    _same_device(name, x, device, ref)
    if x.dtype not in dtypes:
        names = " or ".join(str(d).replace("torch.", "") for d in dtypes)
        raise TypeError(f"{name} has dtype {x.dtype}; expected {names}")
    if x.dim() != 1 or x.shape[0] != n:
        raise ValueError(f"{name} must have shape ({n},), got {tuple(x.shape)}")
    return x.contiguous()


def _bias_mask(logit_bias, allowed, rows: int, vocab: int, device: torch.device, ref: str):
    bias = mask = None
    if logit_bias is not None:
        _device_of("logit_bias", logit_bias)
        _same_device("logit_bias", logit_bias, device, ref)
        if logit_bias.dtype != torch.float32:
            raise TypeError(f"logit_bias has dtype {logit_bias.dtype}; expected float32")
        if tuple(logit_bias.shape) != (rows, vocab):
            raise ValueError(f"logit_bias must have shape ({rows}, {vocab}) (rows, vocabulary), "
                             f"got {tuple(logit_bias.shape)}")
        if not logit_bias.is_contiguous():
            raise ValueError("logit_bias is not contiguous; pass logit_bias.contiguous()")
        bias = logit_bias
    if allowed is not None:
        _device_of("allowed", allowed)
        _same_device("allowed", allowed, device, ref)
        if allowed.dtype == torch.bool:
            raise TypeError("allowed must be a packed bitmask (int32/uint32, "
                            "[rows, ceil(V/32)]); pack a boolean mask with flashspec.pack_allowed")
        if allowed.dtype not in _MASK_DTYPES:
            raise TypeError(f"allowed has dtype {allowed.dtype}; expected int32 or uint32 "
                            f"(a bitmask: bit i % 32 of word i / 32 set = token i allowed)")
        words = (vocab + 31) // 32
        if tuple(allowed.shape) != (rows, words):
            raise ValueError(f"allowed must have shape ({rows}, {words}) (rows, ceil(V/32)), "
                             f"got {tuple(allowed.shape)}")
        if not allowed.is_contiguous():
            raise ValueError("allowed is not contiguous; pass allowed.contiguous()")
        mask = allowed
    return bias, mask


def _sampling(requests: int, device: torch.device, ref: str, temperature, seed, offset,
              bias: Optional[torch.Tensor], mask: Optional[torch.Tensor],
              top_k=None, top_p=None, min_p=None, return_filter_fallback: bool = False):
    """(dict for the binding, tensors to keep alive during the call, the
    filter_fallback output or None)."""
    t = _vector("temperature", temperature, requests, (torch.float32,), device, ref, torch.float32)
    s = _vector("seed", seed, requests, _SEED_DTYPES, device, ref, torch.int64)
    o = None
    if offset is not None:
        o = _vector("offset", offset, requests, _SEED_DTYPES, device, ref, torch.int64)
    # Filter values are checked where they live (FS_ROW_BAD_FILTER per
    # request), like temperatures: only their type and shape are checked here.
    k = p = m = None
    if top_k is not None:
        k = _vector("top_k", top_k, requests, (torch.int32,), device, ref, torch.int32)
    if top_p is not None:
        p = _vector("top_p", top_p, requests, (torch.float32,), device, ref, torch.float32)
    if min_p is not None:
        m = _vector("min_p", min_p, requests, (torch.float32,), device, ref, torch.float32)
    fallback = (torch.zeros(requests, dtype=torch.int32, device=device)
                if return_filter_fallback else None)
    keep = (t, s, o, bias, mask, k, p, m)
    params = {name: x.data_ptr() if x is not None else 0 for name, x in
              (("temperature", t), ("seed", s), ("offset", o), ("logit_bias", bias),
               ("allowed", mask), ("top_k", k), ("top_p", p), ("min_p", m),
               ("out_filter_fallback", fallback))}
    return params, keep, fallback


def _drafts(draft_tokens, cu_num_draft_tokens, device: torch.device, ref: str):
    """(requests, num_draft_tokens, draft ids, offsets [R+1]) checked."""
    _device_of("cu_num_draft_tokens", cu_num_draft_tokens)
    _same_device("cu_num_draft_tokens", cu_num_draft_tokens, device, ref)
    if cu_num_draft_tokens.dtype != torch.int32:
        raise TypeError(f"cu_num_draft_tokens has dtype {cu_num_draft_tokens.dtype}; expected int32")
    if cu_num_draft_tokens.dim() != 1 or cu_num_draft_tokens.shape[0] < 1:
        raise ValueError("cu_num_draft_tokens must be 1-D with requests + 1 entries "
                         f"([0, n_0, n_0 + n_1, ...]), got shape {tuple(cu_num_draft_tokens.shape)}")
    requests = cu_num_draft_tokens.shape[0] - 1
    _device_of("draft_tokens", draft_tokens)
    _same_device("draft_tokens", draft_tokens, device, ref)
    if draft_tokens.dtype != torch.int32:
        raise TypeError(f"draft_tokens has dtype {draft_tokens.dtype}; expected int32 "
                        f"(pass draft_tokens.to(torch.int32))")
    if draft_tokens.dim() != 1:
        raise ValueError(f"draft_tokens must be 1-D (flat, request after request), "
                         f"got shape {tuple(draft_tokens.shape)}")
    return requests, draft_tokens.shape[0], draft_tokens.contiguous(), cu_num_draft_tokens.contiguous()


def _max_drafts(max_drafts: Optional[int], num_draft_tokens: int) -> int:
    if max_drafts is None:
        # A bound that holds without reading the offsets (no host sync).
        return min(num_draft_tokens, _C.MAX_POSITION - 1)
    if isinstance(max_drafts, bool) or not isinstance(max_drafts, int):
        raise TypeError(f"max_drafts must be an int, got {type(max_drafts).__name__}")
    if max_drafts < 0:
        raise ValueError(f"max_drafts must be >= 0, got {max_drafts}")
    return max_drafts


def _dtype_code(t: torch.Tensor) -> int:
    return _DTYPES[t.dtype]


# ---- ops -----------------------------------------------------------------


def _head(hidden, weight, name: str = "hidden"):
    device = _device_of(name, hidden)
    weight = _float_matrix("weight", weight, device, name, copy_ok=False)
    hidden = _float_matrix(name, hidden, device, name, copy_ok=True)
    if hidden.dtype != weight.dtype:
        raise TypeError(f"{name} ({hidden.dtype}) and weight ({weight.dtype}) must have the same dtype")
    if hidden.shape[1] != weight.shape[1]:
        raise ValueError(f"{name} has {hidden.shape[1]} features but weight is "
                         f"{tuple(weight.shape)} ([vocab_size, hidden_dim]): hidden_dim must match")
    if weight.shape[0] == 0 or weight.shape[1] == 0:
        raise ValueError(f"weight must be non-empty, got shape {tuple(weight.shape)}")
    head = (weight.data_ptr(), weight.shape[0], weight.shape[1], _dtype_code(weight))
    return device, hidden, weight, head


def _logits(name: str, logits):
    device = _device_of(name, logits)
    logits = _float_matrix(name, logits, device, name, copy_ok=False)
    if logits.shape[1] == 0:
        raise ValueError(f"{name} must have a non-empty vocabulary, got shape {tuple(logits.shape)}")
    return device, logits


def _empty_sample(rows, device, return_logprobs):
    return (torch.full((rows,), -1, dtype=torch.int32, device=device),
            torch.zeros(rows, dtype=torch.int32, device=device),
            torch.empty(rows, dtype=torch.float32, device=device) if return_logprobs else None)


def sample(hidden: torch.Tensor, weight: torch.Tensor, temperature, seed, offset=None,
           logit_bias: Optional[torch.Tensor] = None, allowed: Optional[torch.Tensor] = None,
           return_logprobs: bool = False, top_k=None, top_p=None, min_p=None,
           return_filter_fallback: bool = False) -> SampleOutput:
    """One token per row, exactly from softmax((hidden @ weight.T + logit_bias) / T).

    hidden [rows, D] and weight [V, D] (the LM head as nn.Linear stores it)
    share a dtype (bfloat16, float16 or float32).  temperature float32 [rows]
    (0 = greedy), seed int64/uint64 [rows], offset int64/uint64 [rows] or None
    (= 0; advance it every decode step), each of them also a Python number
    broadcast to all rows.  logit_bias float32 [rows, V]; allowed int32/uint32
    bitmask [rows, ceil(V/32)] (see pack_allowed).

    Filters, applied in the order top-k -> top-p -> min-p to the scores
    (l + b) / T, ties at a threshold kept: top_k int32 [rows] (0 or >= V =
    off), top_p float32 [rows] in (0, 1] (1 = off; the token that crosses
    top_p is kept), min_p float32 [rows] in [0, 1) (0 = off; keeps
    p >= min_p * p_max), each also a Python number broadcast to all rows.
    The token is drawn exactly from the renormalised kept set; greedy rows
    are unaffected.  A value out of range fails its row with ROW_BAD_FILTER.
    return_filter_fallback gives out.filter_fallback, int32 [rows]: 1 where
    the row needed the filters' exact second pass over the vocabulary.

    Returns SampleOutput(tokens int32 [rows], row_status int32 [rows],
    logprobs (under the filtered distribution)), with .filter_fallback.
    """
    device, hidden, weight, head = _head(hidden, weight)
    rows = hidden.shape[0]
    return _sample_run("hidden", device, rows, weight.shape[0],
                       lambda c, *rest: _C.sample(c.ctx.handle, head, hidden.data_ptr(), rows,
                                                  *rest),
                       temperature, seed, offset, logit_bias, allowed, return_logprobs,
                       top_k, top_p, min_p, return_filter_fallback)


def sample_logits(logits: torch.Tensor, temperature, seed, offset=None,
                  logit_bias: Optional[torch.Tensor] = None, allowed: Optional[torch.Tensor] = None,
                  return_logprobs: bool = False, top_k=None, top_p=None, min_p=None,
                  return_filter_fallback: bool = False) -> SampleOutput:
    """sample() over logits [rows, V] (bfloat16, float16 or float32) already in memory."""
    device, logits = _logits("logits", logits)
    rows, vocab = logits.shape
    return _sample_run("logits", device, rows, vocab,
                       lambda c, *rest: _C.sample_logits(c.ctx.handle, logits.data_ptr(),
                                                         _dtype_code(logits), rows, vocab, *rest),
                       temperature, seed, offset, logit_bias, allowed, return_logprobs,
                       top_k, top_p, min_p, return_filter_fallback)


def _sample_run(name, device, rows, vocab, call, temperature, seed, offset, logit_bias, allowed,
                return_logprobs, top_k, top_p, min_p, return_filter_fallback) -> SampleOutput:
    """The parameters, outputs and workspace both sample entries share;
    call(c, params, ws, ws_bytes, tokens, logprobs, status) runs the one
    library call that differs."""
    bias, mask = _bias_mask(logit_bias, allowed, rows, vocab, device, name)
    params, keep, fallback = _sampling(rows, device, name, temperature, seed, offset, bias, mask,
                                       top_k, top_p, min_p, return_filter_fallback)
    if rows == 0:
        return SampleOutput(*_empty_sample(0, device, return_logprobs), fallback)
    tokens = torch.empty(rows, dtype=torch.int32, device=device)
    status = torch.empty(rows, dtype=torch.int32, device=device)
    logprobs = torch.empty(rows, dtype=torch.float32, device=device) if return_logprobs else None
    with _Call(device) as c:
        ws, ws_bytes = c.ws(_C.sample_workspace_size(c.ctx.handle, rows, vocab))
        call(c, params, ws, ws_bytes, tokens.data_ptr(),
             logprobs.data_ptr() if logprobs is not None else 0, status.data_ptr())
    del keep
    return SampleOutput(tokens, status, logprobs, fallback)


def draft_argmax(hidden: torch.Tensor, weight: torch.Tensor,
                 return_logits: bool = False) -> ArgmaxOutput:
    """Greedy token per row: argmax of hidden @ weight.T (lowest id on ties).
    Returns ArgmaxOutput(tokens int32 [rows], row_status, logits float32 [rows])."""
    device, hidden, weight, head = _head(hidden, weight)
    rows = hidden.shape[0]
    return _argmax_run(device, rows, weight.shape[0],
                       lambda c, *rest: _C.draft_argmax(c.ctx.handle, head, hidden.data_ptr(),
                                                        rows, *rest),
                       return_logits)


def draft_argmax_logits(logits: torch.Tensor, return_logits: bool = False) -> ArgmaxOutput:
    """draft_argmax() over logits [rows, V] already in memory."""
    device, logits = _logits("logits", logits)
    rows, vocab = logits.shape
    return _argmax_run(device, rows, vocab,
                       lambda c, *rest: _C.draft_argmax_logits(
                           c.ctx.handle, logits.data_ptr(), _dtype_code(logits), rows, vocab,
                           *rest),
                       return_logits)


def _argmax_run(device, rows, vocab, call, return_logits) -> ArgmaxOutput:
    """The outputs and workspace both draft-argmax entries share;
    call(c, ws, ws_bytes, tokens, values, status) runs the library call."""
    tokens = torch.empty(rows, dtype=torch.int32, device=device)
    status = torch.zeros(rows, dtype=torch.int32, device=device)
    values = torch.empty(rows, dtype=torch.float32, device=device) if return_logits else None
    if rows == 0:
        return ArgmaxOutput(tokens, status, values)
    with _Call(device) as c:
        ws, ws_bytes = c.ws(_C.draft_argmax_workspace_size(c.ctx.handle, rows, vocab))
        call(c, ws, ws_bytes, tokens.data_ptr(), values.data_ptr() if values is not None else 0,
             status.data_ptr())
    return ArgmaxOutput(tokens, status, values)


def _verify_outputs(requests: int, max_drafts: int, device, return_logprobs: bool):
    tokens = torch.empty((requests, max_drafts + 1), dtype=torch.int32, device=device)
    emitted = torch.empty(requests, dtype=torch.int32, device=device)
    status = torch.empty(requests, dtype=torch.int32, device=device)
    logprobs = (torch.empty((requests, max_drafts + 1), dtype=torch.float32, device=device)
                if return_logprobs else None)
    return tokens, emitted, status, logprobs


def _verify_rows_check(name: str, rows: int, ntok: int, requests: int) -> None:
    if rows != ntok + requests:
        raise ValueError(
            f"{name} has {rows} rows; verify needs num_draft_tokens + requests = "
            f"{ntok} + {requests} = {ntok + requests} (request r owns its n_r draft rows and "
            f"one bonus row, consecutively from row cu_num_draft_tokens[r] + r)")


def verify(target_hidden: torch.Tensor, weight: torch.Tensor, draft_tokens: torch.Tensor,
           cu_num_draft_tokens: torch.Tensor, temperature, seed, offset=None,
           logit_bias: Optional[torch.Tensor] = None, allowed: Optional[torch.Tensor] = None,
           return_logprobs: bool = False, max_drafts: Optional[int] = None, top_k=None,
           top_p=None, min_p=None, return_filter_fallback: bool = False) -> VerifyOutput:
    """Speculative verify of greedy drafts (n-gram, EAGLE, MTP), fused with the LM head.

    Request r (of R = len(cu_num_draft_tokens) - 1) has the n_r draft tokens
    draft_tokens[cu[r]:cu[r+1]] (int32, flat) and owns n_r + 1 consecutive
    rows of target_hidden [num_draft_tokens + R, D] starting at row cu[r] + r:
    the target's hidden state at each draft position, then the bonus
    position.  cu_num_draft_tokens is int32 [R + 1] = [0, n_0, n_0 + n_1, ...].
    temperature, seed, offset are per request.  logit_bias / allowed are per
    target row.  The output width is max_drafts + 1; by default max_drafts is
    the total number of draft tokens, a bound that needs no host read of the
    offsets; pass the true maximum (e.g. vLLM's max_spec_len) for a tight one.
    top_k, top_p, min_p (per request, as in sample()) filter the target at
    every position: a draft outside the kept set is rejected, and the
    emitted tokens follow the filtered target token by token.
    return_filter_fallback gives out.filter_fallback, int32 [R]: how many of
    the request's n_r + 1 rows needed the filters' second pass.

    Returns VerifyOutput(tokens int32 [R, max_drafts + 1] (accepted drafts,
    then one recovered or bonus token, then -1), num_emitted int32 [R],
    row_status int32 [R], logprobs float32 [R, max_drafts + 1] or None).
    """
    device, hidden, weight, head = _head(target_hidden, weight, "target_hidden")
    return _verify_run("target_hidden", device, hidden.shape[0], weight.shape[0],
                       lambda c, *rest: _C.verify(c.ctx.handle, head, hidden.data_ptr(), *rest),
                       draft_tokens, cu_num_draft_tokens, temperature, seed, offset, logit_bias,
                       allowed, return_logprobs, max_drafts, top_k, top_p, min_p,
                       return_filter_fallback)


def verify_logits(target_logits: torch.Tensor, draft_tokens: torch.Tensor,
                  cu_num_draft_tokens: torch.Tensor, temperature, seed, offset=None,
                  logit_bias: Optional[torch.Tensor] = None, allowed: Optional[torch.Tensor] = None,
                  return_logprobs: bool = False, max_drafts: Optional[int] = None, top_k=None,
                  top_p=None, min_p=None, return_filter_fallback: bool = False) -> VerifyOutput:
    """verify() over target logits [num_draft_tokens + R, V] already in memory."""
    device, logits = _logits("target_logits", target_logits)
    vocab = logits.shape[1]
    return _verify_run("target_logits", device, logits.shape[0], vocab,
                       lambda c, *rest: _C.verify_logits(c.ctx.handle, logits.data_ptr(),
                                                         _dtype_code(logits), vocab, *rest),
                       draft_tokens, cu_num_draft_tokens, temperature, seed, offset, logit_bias,
                       allowed, return_logprobs, max_drafts, top_k, top_p, min_p,
                       return_filter_fallback)


def _verify_run(name, device, rows, vocab, call, draft_tokens, cu_num_draft_tokens, temperature,
                seed, offset, logit_bias, allowed, return_logprobs, max_drafts, top_k, top_p, min_p,
                return_filter_fallback) -> VerifyOutput:
    """The checks, parameters, outputs and workspace both verify entries share;
    call(c, drafts, params, ws, ws_bytes, tokens, emitted, logprobs, status)
    runs the one library call that differs."""
    requests, ntok, drafts, cu = _drafts(draft_tokens, cu_num_draft_tokens, device, name)
    _verify_rows_check(name, rows, ntok, requests)
    md = _max_drafts(max_drafts, ntok)
    bias, mask = _bias_mask(logit_bias, allowed, rows, vocab, device, name)
    params, keep, fallback = _sampling(requests, device, name, temperature, seed, offset, bias,
                                       mask, top_k, top_p, min_p, return_filter_fallback)
    tokens, emitted, status, logprobs = _verify_outputs(requests, md, device, return_logprobs)
    if requests == 0:
        return VerifyOutput(tokens, emitted, status, logprobs, fallback)
    with _Call(device) as c:
        ws, ws_bytes = c.ws(_C.verify_workspace_size(c.ctx.handle, requests, ntok, vocab))
        call(c, (requests, ntok, md, drafts.data_ptr(), cu.data_ptr()), params, ws, ws_bytes,
             tokens.data_ptr(), emitted.data_ptr(),
             logprobs.data_ptr() if logprobs is not None else 0, status.data_ptr())
    del keep
    return VerifyOutput(tokens, emitted, status, logprobs, fallback)


def _int32_flat(name: str, t, device: torch.device, ref: str) -> torch.Tensor:
    _device_of(name, t)
    _same_device(name, t, device, ref)
    if t.dtype != torch.int32:
        raise TypeError(f"{name} has dtype {t.dtype}; expected int32 (pass {name}.to(torch.int32))")
    if t.dim() != 1:
        raise ValueError(f"{name} must be 1-D (flat, request after request), "
                         f"got shape {tuple(t.shape)}")
    return t.contiguous()


def _tree_bound(name: str, value: Optional[int], default: int, limit: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if not 0 <= value <= limit:
        raise ValueError(f"{name} must be in [0, {limit}], got {value}")
    return value


def verify_tree(target_hidden: torch.Tensor, weight: torch.Tensor, tokens: torch.Tensor,
                parents: torch.Tensor, cu_num_nodes: torch.Tensor, temperature, seed, offset=None,
                logit_bias: Optional[torch.Tensor] = None, allowed: Optional[torch.Tensor] = None,
                max_depth: Optional[int] = None, max_children: Optional[int] = None,
                return_logprobs: bool = False, top_k=None, top_p=None, min_p=None,
                return_filter_fallback: bool = False) -> VerifyTreeOutput:
    """Speculative verify of a tree of greedy drafts (EAGLE-2/3, Medusa), fused with the LM head.

    Request r (of R = len(cu_num_nodes) - 1) has the n_r nodes
    cu_num_nodes[r] .. cu_num_nodes[r+1] - 1 of the flat int32 tensors tokens
    (each node's draft token) and parents (its parent's index within the
    request, -1 for the root, always below the node's own index).  It owns
    n_r + 1 consecutive rows of target_hidden [num_nodes + R, D] from row
    cu_num_nodes[r] + r: the target at the root, then at each node.
    temperature, seed, offset per request; logit_bias / allowed per target row.

    The walk accepts at most one child per node, tried in ascending index
    (the law of sampling token by token from the target; a chain gives
    verify()'s tokens).  max_depth bounds every node's depth and sets the
    output width max_depth + 1; by default it is the number of nodes, a bound
    that needs no host read of the tree.  max_children (<= 16) bounds the
    children per node, default 16.  A tree breaking them, or a parent out of
    range, fails its request with ROW_BAD_TREE.

    top_k, top_p, min_p (per request, as in sample()) filter the target at
    every row of the request's tree: a child outside the row's kept set is
    never accepted, and the recovered or bonus token is drawn from the kept
    set (a chain gives verify()'s tokens with the same filters);
    return_filter_fallback gives out.filter_fallback, int32 [R]: the rows of
    each request that took the filters' second pass.

    Returns VerifyTreeOutput(tokens int32 [R, max_depth + 1] (accepted path,
    then one recovered or bonus token, -1 after), path_nodes int32
    [R, max_depth] (the accepted nodes' indices, -1 after), num_emitted
    int32 [R], row_status int32 [R], logprobs float32 [R, max_depth + 1] or
    None).
    """
    device, hidden, weight, head = _head(target_hidden, weight, "target_hidden")
    return _verify_tree_run("target_hidden", device, hidden.shape[0], weight.shape[0],
                            lambda c, *rest: _C.verify_tree(c.ctx.handle, head,
                                                            hidden.data_ptr(), *rest),
                            tokens, parents, cu_num_nodes, temperature, seed, offset,
                            logit_bias, allowed, max_depth, max_children, return_logprobs,
                            top_k, top_p, min_p, return_filter_fallback)


def verify_tree_logits(target_logits: torch.Tensor, tokens: torch.Tensor, parents: torch.Tensor,
                       cu_num_nodes: torch.Tensor, temperature, seed, offset=None,
                       logit_bias: Optional[torch.Tensor] = None,
                       allowed: Optional[torch.Tensor] = None, max_depth: Optional[int] = None,
                       max_children: Optional[int] = None,
                       return_logprobs: bool = False, top_k=None, top_p=None, min_p=None,
                       return_filter_fallback: bool = False) -> VerifyTreeOutput:
    """verify_tree() over target logits [num_nodes + R, V] already in memory."""
    device, logits = _logits("target_logits", target_logits)
    vocab = logits.shape[1]
    return _verify_tree_run("target_logits", device, logits.shape[0], vocab,
                            lambda c, *rest: _C.verify_tree_logits(
                                c.ctx.handle, logits.data_ptr(), _dtype_code(logits), vocab,
                                *rest),
                            tokens, parents, cu_num_nodes, temperature, seed, offset,
                            logit_bias, allowed, max_depth, max_children, return_logprobs,
                            top_k, top_p, min_p, return_filter_fallback)


def _verify_tree_run(name, device, rows, vocab, call, tokens, parents, cu_num_nodes, temperature,
                     seed, offset, logit_bias, allowed, max_depth, max_children,
                     return_logprobs, top_k, top_p, min_p,
                     return_filter_fallback) -> VerifyTreeOutput:
    """What both tree entries share; call(c, tree, params, ws, ws_bytes,
    tokens, path_nodes, emitted, logprobs, status) runs the library call."""
    cu = _int32_flat("cu_num_nodes", cu_num_nodes, device, name)
    if cu.shape[0] < 1:
        raise ValueError("cu_num_nodes must have requests + 1 entries ([0, n_0, n_0 + n_1, ...])")
    requests = cu.shape[0] - 1
    tokens = _int32_flat("tokens", tokens, device, name)
    parents = _int32_flat("parents", parents, device, name)
    nodes = tokens.shape[0]
    if parents.shape[0] != nodes:
        raise ValueError(f"parents has {parents.shape[0]} entries but tokens has {nodes}: "
                         f"one parent per node")
    if rows != nodes + requests:
        raise ValueError(
            f"{name} has {rows} rows; tree verify needs num_nodes + requests = {nodes} + "
            f"{requests} = {nodes + requests} (request r owns its root row and one row per node, "
            f"consecutively from row cu_num_nodes[r] + r)")
    # Bounds that hold without reading the tree (no host sync): a request's
    # depth is at most its node count.
    md = _tree_bound("max_depth", max_depth, min(nodes, _C.MAX_POSITION - 1),
                     _C.MAX_POSITION - 1)
    mc = _tree_bound("max_children", max_children, _C.TREE_MAX_CHILDREN, _C.TREE_MAX_CHILDREN)
    bias, mask = _bias_mask(logit_bias, allowed, rows, vocab, device, name)
    params, keep, fallback = _sampling(requests, device, name, temperature, seed, offset, bias,
                                       mask, top_k, top_p, min_p, return_filter_fallback)
    # the library writes every element, padding included
    out_tokens = torch.empty((requests, md + 1), dtype=torch.int32, device=device)
    path = torch.empty((requests, md), dtype=torch.int32, device=device)
    emitted = torch.empty(requests, dtype=torch.int32, device=device)
    status = torch.empty(requests, dtype=torch.int32, device=device)
    logprobs = (torch.empty((requests, md + 1), dtype=torch.float32, device=device)
                if return_logprobs else None)
    if requests == 0:
        return VerifyTreeOutput(out_tokens, path, emitted, status, logprobs, fallback)
    with _Call(device) as c:
        ws, ws_bytes = c.ws(_C.verify_tree_workspace_size(c.ctx.handle, requests, nodes, vocab))
        call(c, (requests, nodes, md, mc, tokens.data_ptr(), parents.data_ptr(), cu.data_ptr()),
             params, ws, ws_bytes, out_tokens.data_ptr(), path.data_ptr(), emitted.data_ptr(),
             logprobs.data_ptr() if logprobs is not None else 0, status.data_ptr())
    del keep
    return VerifyTreeOutput(out_tokens, path, emitted, status, logprobs, fallback)


# ---- helpers -------------------------------------------------------------


def row_status_string(row_status: int) -> str:
    """The library's description of an fs_row_status value."""
    return _C.row_status_string(int(row_status))


def check_row_status(row_status: torch.Tensor) -> None:
    """Raise FlashspecRowError if any row (request) failed.  Reads the tensor:
    on CUDA this synchronizes, so keep it out of the hot path."""
    values = row_status.detach().to("cpu").reshape(-1)
    bad = torch.nonzero(values != 0).flatten().tolist()
    if not bad:
        return
    rows = {int(i): int(values[i]) for i in bad}
    shown = ", ".join(f"{i}: {row_status_string(s)}" for i, s in list(rows.items())[:8])
    more = f" (and {len(rows) - 8} more)" if len(rows) > 8 else ""
    raise FlashspecRowError(_C.ERR_INVALID_ROWS,
                            f"{len(rows)} row(s) failed: {shown}{more}", rows)


def pack_allowed(mask: torch.Tensor) -> torch.Tensor:
    """Boolean mask [rows, V] (True = allowed) -> int32 bitmask [rows, ceil(V/32)]
    (bit i % 32 of word i / 32), on the mask's device, without a host sync."""
    if mask.dtype != torch.bool or mask.dim() != 2:
        raise TypeError(f"pack_allowed takes a 2-D bool tensor, got {mask.dtype} {tuple(mask.shape)}")
    rows, vocab = mask.shape
    words = (vocab + 31) // 32
    padded = torch.zeros((rows, words * 32), dtype=torch.int64, device=mask.device)
    padded[:, :vocab] = mask.to(torch.int64)
    weights = torch.bitwise_left_shift(
        torch.ones(32, dtype=torch.int64, device=mask.device),
        torch.arange(32, dtype=torch.int64, device=mask.device))
    packed = (padded.view(rows, words, 32) * weights).sum(dim=2)  # [0, 2^32)
    packed = torch.where(packed >= 2**31, packed - 2**32, packed)
    return packed.to(torch.int32).contiguous()
