"""The ops through the Python entry: results against torch, per-row status,
and argument errors (dtype, device, shape, contiguity) raised clearly."""
import pytest
import torch

import flashspec
from flashspec import FlashspecError, FlashspecRowError


def make_head(device, v=1000, d=64, rows=8, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    w = (torch.randn(v, d, generator=g) * (3.0 / d ** 0.5)).to(dtype)
    h = torch.randn(rows, d, generator=g).to(dtype)
    return h.to(device), w.to(device)


def ref_logits(h, w):
    return h.double().cpu() @ w.double().cpu().T


# ---- results -------------------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
def test_greedy_sample_and_argmax_match_torch(device, dtype):
    h, w = make_head(device, dtype=dtype)
    logits = ref_logits(h, w)
    top = logits.argmax(dim=1).to(torch.int32)
    out = flashspec.sample(h, w, 0.0, 7, return_logprobs=True)
    assert out.tokens.dtype == torch.int32 and out.tokens.device.type == device.type
    assert torch.equal(out.tokens.cpu(), top)
    assert torch.equal(out.row_status.cpu(), torch.zeros(8, dtype=torch.int32))
    want_lp = torch.log_softmax(logits, dim=1).gather(1, top.long()[:, None]).squeeze(1)
    torch.testing.assert_close(out.logprobs.cpu().double(), want_lp, atol=2e-3, rtol=1e-3)
    am = flashspec.draft_argmax(h, w, return_logits=True)
    assert torch.equal(am.tokens.cpu(), top)
    torch.testing.assert_close(am.logits.cpu().double(), logits.max(dim=1).values,
                               atol=2e-3, rtol=1e-3)
    lg = (h.float() @ w.float().T).to(dtype)
    am2 = flashspec.draft_argmax_logits(lg)
    assert (am2.tokens.cpu() == lg.float().cpu().argmax(dim=1)).all()


def test_sample_is_deterministic_and_batch_invariant(device):
    h, w = make_head(device, rows=16)
    t = torch.full((16,), 0.9, device=device)
    s = torch.arange(100, 116, dtype=torch.int64, device=device)
    o = torch.full((16,), 3, dtype=torch.int64, device=device)
    a = flashspec.sample(h, w, t, s, o).tokens
    b = flashspec.sample(h, w, t, s, o).tokens
    assert torch.equal(a, b)
    # a row's token depends on its own (seed, offset), not on its batch
    single = flashspec.sample(h[5:6], w, t[5:6], s[5:6], o[5:6]).tokens
    assert int(single[0]) == int(a[5])
    sub = flashspec.sample(h[3:11], w, t[3:11], s[3:11], o[3:11]).tokens
    assert torch.equal(sub, a[3:11])
    # another offset (decode step) draws other noise
    c = flashspec.sample(h, w, t, s, o + 1).tokens
    assert not torch.equal(a, c)
    # uint64 seeds are the same 64 bits as int64 seeds
    u = flashspec.sample(h, w, t, s.to(torch.uint64) if device.type == "cpu" else s, o).tokens
    assert torch.equal(u, a)


def test_sample_logits_agrees_with_fused(device):
    h, w = make_head(device, rows=32)
    logits = h @ w.T
    a = flashspec.sample(h, w, 1.0, 11).tokens
    b = flashspec.sample_logits(logits, 1.0, 11).tokens
    # same noise; only logit rounding (fused dot vs torch matmul) can differ
    assert (a == b).float().mean().item() >= 0.95


def test_bias_and_allowed(device):
    h, w = make_head(device, v=100, rows=6)
    allowed = torch.zeros(6, 100, dtype=torch.bool)
    allowed[:, 40:45] = True
    allowed[5, :] = False
    allowed[5, 99] = True
    packed = flashspec.pack_allowed(allowed.to(device))
    assert packed.dtype == torch.int32 and packed.shape == (6, 4)
    for r in range(6):  # bit i % 32 of word i // 32
        for i in range(100):
            bit = (int(packed[r, i // 32]) >> (i % 32)) & 1
            assert bit == int(allowed[r, i])
    out = flashspec.sample(h, w, 1.0, torch.arange(6, device=device), allowed=packed)
    tok = out.tokens.cpu()
    assert ((tok[:5] >= 40) & (tok[:5] < 45)).all() and int(tok[5]) == 99
    bias = torch.zeros(6, 100, device=device)
    bias[:, 7] = 1e4
    out = flashspec.sample(h, w, 1.0, 1, logit_bias=bias)
    assert (out.tokens.cpu() == 7).all()


def test_verify_greedy_matches_torch(device):
    h, w = make_head(device, v=500, rows=3 + 0 + 2 + 1 + 3)  # drafts [2, 0, 1, 2] + 4 bonus rows
    top = ref_logits(h, w).argmax(dim=1).to(torch.int32)
    n = [2, 0, 1, 2]
    cu = torch.tensor([0, 2, 2, 3, 5], dtype=torch.int32)
    # request 0: both drafts right; 2: its draft wrong; 3: first right, second wrong
    rows0 = [0, 3, 4, 6]  # first target row of each request: cu[r] + r
    drafts = torch.tensor([top[0], top[1], (top[4] + 1) % 500, top[6], (top[7] + 1) % 500],
                          dtype=torch.int32)
    out = flashspec.verify(h, w, drafts.to(device), cu.to(device), 0.0, 5, max_drafts=2,
                           return_logprobs=True)
    tokens, emitted = out.tokens.cpu(), out.num_emitted.cpu()
    assert tokens.shape == (4, 3)
    assert emitted.tolist() == [3, 1, 1, 2]
    assert tokens[0].tolist() == [int(top[0]), int(top[1]), int(top[2])]
    assert tokens[1].tolist() == [int(top[3]), -1, -1]
    assert tokens[2].tolist() == [int(top[4]), -1, -1]
    assert tokens[3].tolist() == [int(top[6]), int(top[7]), -1]
    assert out.row_status.cpu().tolist() == [0, 0, 0, 0]
    assert torch.isnan(out.logprobs.cpu()[1, 1:]).all()
    # default max_drafts: the total number of drafts (5), no host read
    wide = flashspec.verify(h, w, drafts.to(device), cu.to(device), 0.0, 5)
    assert wide.tokens.shape == (4, 6)
    assert torch.equal(wide.tokens.cpu()[:, :3], tokens)
    assert (wide.tokens.cpu()[:, 3:] == -1).all()
    # logits variant
    lo = flashspec.verify_logits(h @ w.T, drafts.to(device), cu.to(device), 0.0, 5, max_drafts=2)
    assert torch.equal(lo.tokens.cpu(), tokens) and torch.equal(lo.num_emitted.cpu(), emitted)
    del rows0, n


def test_empty_batches(device):
    h, w = make_head(device, rows=0)
    assert flashspec.sample(h, w, 1.0, 0).tokens.shape == (0,)
    assert flashspec.draft_argmax(h, w).tokens.shape == (0,)
    out = flashspec.verify(h, w, torch.zeros(0, dtype=torch.int32, device=device),
                           torch.zeros(1, dtype=torch.int32, device=device), 1.0, 0)
    assert out.tokens.shape == (0, 1)


def test_no_drafts_is_sampling(device):
    h, w = make_head(device, rows=4)
    cu = torch.zeros(5, dtype=torch.int32, device=device)
    out = flashspec.verify(h, w, torch.zeros(0, dtype=torch.int32, device=device), cu, 0.0, 1)
    assert out.tokens.shape == (4, 1)
    assert torch.equal(out.tokens.cpu()[:, 0], ref_logits(h, w).argmax(1).to(torch.int32))
    assert out.num_emitted.cpu().tolist() == [1, 1, 1, 1]


# ---- per-row status --------------------------------------------------------


def test_bad_rows_come_back_as_status(device):
    h, w = make_head(device, v=300, rows=4)
    t = torch.tensor([1.0, float("nan"), -1.0, 0.5], device=device)
    out = flashspec.sample(h, w, t, 3, return_logprobs=True)  # no exception, also on CPU
    st = out.row_status.cpu().tolist()
    assert st == [0, flashspec.ROW_BAD_TEMPERATURE, flashspec.ROW_BAD_TEMPERATURE, 0]
    assert out.tokens.cpu().tolist()[1:3] == [-1, -1]
    assert torch.isnan(out.logprobs.cpu()[1:3]).all()
    assert out.tokens.cpu()[0] >= 0 and out.tokens.cpu()[3] >= 0
    with pytest.raises(FlashspecRowError) as e:
        flashspec.check_row_status(out.row_status)
    assert e.value.rows == {1: flashspec.ROW_BAD_TEMPERATURE, 2: flashspec.ROW_BAD_TEMPERATURE}
    assert "temperature" in str(e.value)
    flashspec.check_row_status(out.row_status[:1])  # fine rows: no error


def test_bad_draft_and_offsets_per_request(device):
    h, w = make_head(device, v=50, rows=6)
    drafts = torch.tensor([3, 50, 4], dtype=torch.int32, device=device)  # 50 is out of range
    cu = torch.tensor([0, 1, 2, 3], dtype=torch.int32, device=device)
    out = flashspec.verify(h, w, drafts, cu, 1.0, 9, max_drafts=1)
    assert out.row_status.cpu().tolist() == [0, flashspec.ROW_BAD_DRAFT, 0]
    assert out.num_emitted.cpu().tolist()[1] == 0
    bad_cu = torch.tensor([0, 2, 1, 3], dtype=torch.int32, device=device)  # decreasing
    out = flashspec.verify(h, w, drafts, bad_cu, 1.0, 9)
    assert out.row_status.cpu().tolist() == [flashspec.ROW_BAD_OFFSETS] * 3
    logits = (h @ w.T).clone()
    logits[2, 5] = float("nan")
    out = flashspec.sample_logits(logits, 1.0, 0)
    assert out.row_status.cpu().tolist()[2] == flashspec.ROW_NONFINITE
    none = torch.zeros(6, 2, dtype=torch.int32, device=device)
    out = flashspec.sample_logits(logits[:, :50], 1.0, 0, allowed=none)
    assert out.row_status.cpu().tolist() == [flashspec.ROW_ALL_MASKED] * 6


def test_library_error_through_public_api(device):
    h, w = make_head(device, rows=6)
    drafts = torch.tensor([1, 2, 3, 4], dtype=torch.int32, device=device)
    cu = torch.tensor([0, 2, 4], dtype=torch.int32, device=device)
    with pytest.raises(FlashspecError) as e:  # 4 drafts cannot fit 2 requests x 1
        flashspec.verify(h, w, drafts, cu, 1.0, 0, max_drafts=1)
    assert e.value.status_name == "FS_ERR_INVALID_SIZE"
    assert "num_draft_tokens 4" in e.value.message


# ---- argument errors -----------------------------------------------------


def test_dtype_errors(device):
    h, w = make_head(device)
    with pytest.raises(TypeError, match="same dtype"):
        flashspec.sample(h.half(), w, 1.0, 0)
    with pytest.raises(TypeError, match="bfloat16, float16 or float32"):
        flashspec.sample(h.double(), w.double(), 1.0, 0)
    with pytest.raises(TypeError, match="temperature has dtype torch.float64"):
        flashspec.sample(h, w, torch.ones(8, dtype=torch.float64, device=device), 0)
    with pytest.raises(TypeError, match="seed has dtype torch.int32"):
        flashspec.sample(h, w, 1.0, torch.zeros(8, dtype=torch.int32, device=device))
    with pytest.raises(TypeError, match="offset"):
        flashspec.sample(h, w, 1.0, 0, offset=torch.zeros(8, device=device))
    with pytest.raises(TypeError, match="logit_bias"):
        flashspec.sample(h, w, 1.0, 0, logit_bias=torch.zeros(8, 1000, dtype=torch.float16,
                                                              device=device))
    with pytest.raises(TypeError, match="pack_allowed"):
        flashspec.sample(h, w, 1.0, 0, allowed=torch.ones(8, 1000, dtype=torch.bool,
                                                         device=device))
    cu = torch.tensor([0, 1], dtype=torch.int32, device=device)
    with pytest.raises(TypeError, match="draft_tokens has dtype torch.int64"):
        flashspec.verify(h[:2], w, torch.tensor([1], device=device), cu, 1.0, 0)
    with pytest.raises(TypeError, match="cu_num_draft_tokens has dtype torch.int64"):
        flashspec.verify(h[:2], w, torch.tensor([1], dtype=torch.int32, device=device),
                         cu.long(), 1.0, 0)
    with pytest.raises(TypeError, match="seed must be an integer"):
        flashspec.sample(h, w, 1.0, 0.5)
    with pytest.raises(TypeError, match="must be a torch.Tensor"):
        flashspec.sample(h.tolist(), w, 1.0, 0)


def test_shape_errors(device):
    h, w = make_head(device)
    with pytest.raises(ValueError, match="hidden_dim must match"):
        flashspec.sample(h[:, :32], w, 1.0, 0)
    with pytest.raises(ValueError, match="2-D"):
        flashspec.sample(h[0], w, 1.0, 0)
    with pytest.raises(ValueError, match=r"temperature must have shape \(8,\)"):
        flashspec.sample(h, w, torch.ones(7, device=device), 0)
    with pytest.raises(ValueError, match=r"logit_bias must have shape \(8, 1000\)"):
        flashspec.sample(h, w, 1.0, 0, logit_bias=torch.zeros(8, 999, device=device))
    with pytest.raises(ValueError, match=r"allowed must have shape \(8, 32\)"):
        flashspec.sample(h, w, 1.0, 0, allowed=torch.zeros(8, 31, dtype=torch.int32,
                                                           device=device))
    cu = torch.tensor([0, 2, 3], dtype=torch.int32, device=device)
    d = torch.tensor([1, 2, 3], dtype=torch.int32, device=device)
    with pytest.raises(ValueError, match="verify needs num_draft_tokens \\+ requests = 3 \\+ 2 = 5"):
        flashspec.verify(h, w, d, cu, 1.0, 0)
    with pytest.raises(ValueError, match="requests \\+ 1 entries"):
        flashspec.verify(h[:5], w, d, cu[:0], 1.0, 0)
    with pytest.raises(ValueError, match="max_drafts must be >= 0"):
        flashspec.verify(h[:5], w, d, cu, 1.0, 0, max_drafts=-1)
    with pytest.raises(ValueError, match="non-empty"):
        flashspec.sample_logits(torch.zeros(2, 0, device=device), 1.0, 0)


def test_device_errors(device):
    h, w = make_head(device)
    with pytest.raises(ValueError, match="runs on CPU and CUDA"):
        flashspec.sample(h.to("meta"), w, 1.0, 0)
    with pytest.raises(ValueError, match="runs on CPU and CUDA"):
        flashspec.sample(h, w.to("meta"), 1.0, 0)
    with pytest.raises(ValueError, match="seed is on meta"):
        flashspec.sample(h, w, 1.0, torch.zeros(8, dtype=torch.int64, device="meta"))


def test_non_contiguous(device):
    h, w = make_head(device, rows=8)
    ref = flashspec.sample(h, w, 1.0, torch.arange(8, device=device)).tokens
    # hidden and per-request vectors: copied to contiguous (small)
    wide = torch.zeros(8, 2 * h.shape[1], device=device)
    wide[:, ::2] = h
    strided_h = wide[:, ::2]
    assert not strided_h.is_contiguous()
    seeds = torch.arange(8, device=device).repeat_interleave(2)[::2]  # 0..7 with stride 2
    assert not seeds.is_contiguous()
    got = flashspec.sample(strided_h, w, torch.ones(16, device=device)[::2], seeds).tokens
    assert torch.equal(got, ref)
    # the LM head, logits, bias and masks: refused (a copy would cost as much as the op)
    with pytest.raises(ValueError, match="weight .* is not contiguous"):
        flashspec.sample(h, w.T.contiguous().T, 1.0, 0)
    logits = h @ w.T
    with pytest.raises(ValueError, match="logits .* is not contiguous"):
        flashspec.sample_logits(logits.T.contiguous().T, 1.0, 0)
    with pytest.raises(ValueError, match="logit_bias is not contiguous"):
        flashspec.sample(h, w, 1.0, 0, logit_bias=torch.zeros(1000, 8, device=device).T)


def test_workspace_cache_grows_and_clears(device):
    h, w = make_head(device, rows=2)
    flashspec.sample(h, w, 1.0, 0)
    h2, _ = make_head(device, rows=64)
    flashspec.sample(h2, w, 1.0, 0)
    flashspec.clear_workspace_cache()
    out = flashspec.sample(h2, w, 0.0, 0).tokens
    assert torch.equal(out.cpu(), ref_logits(h2, w).argmax(1).to(torch.int32))
