"""CUDA-only behaviour: the current stream, CUDA graphs, no host sync,
CPU/GPU agreement, realistic shapes, and mixed-device errors.  Skipped
without a GPU or with a CPU-only build (the exactness tests of test_stat.py
and test_vllm.py run on CUDA too, through the `device` fixture)."""
import pytest
import torch

import flashspec
from conftest import requires_cuda

pytestmark = [requires_cuda, pytest.mark.gpu]


def head(v, d, rows, dtype=torch.bfloat16, seed=0, device="cuda"):
    g = torch.Generator(device=device).manual_seed(seed)
    w = (torch.randn(v, d, generator=g, device=device) * (3.0 / d ** 0.5)).to(dtype)
    h = torch.randn(rows, d, generator=g, device=device).to(dtype)
    return h, w


def near_ties_only(tokens, ref_tokens, logits, tol):
    """Every disagreement must be a near tie of the float32 logits."""
    bad = (tokens != ref_tokens).nonzero().flatten()
    for i in bad.tolist():
        a, b = int(tokens[i]), int(ref_tokens[i])
        assert abs(float(logits[i, a]) - float(logits[i, b])) < tol, (i, a, b)
    return bad.numel()


def test_cpu_gpu_agree():
    h, w = head(32000, 256, 96)
    t = torch.rand(96, device="cuda") + 0.2
    t[:8] = 0
    s = torch.arange(96, device="cuda") * 977
    o = torch.full((96,), 5, dtype=torch.int64, device="cuda")
    gpu = flashspec.sample(h, w, t, s, o, return_logprobs=True)
    cpu = flashspec.sample(h.cpu(), w.cpu(), t.cpu(), s.cpu(), o.cpu(), return_logprobs=True)
    mism = (gpu.tokens.cpu() != cpu.tokens).sum().item()
    assert mism <= 1, f"{mism} of 96 rows differ"
    torch.testing.assert_close(gpu.logprobs.cpu(), cpu.logprobs, atol=2e-3, rtol=1e-3)
    # verify: 24 requests x 3 drafts (the target argmax, every other one broken)
    am = flashspec.draft_argmax(h, w).tokens
    rows = torch.arange(96, device="cuda").view(24, 4)
    drafts = am[rows[:, :3]].clone()
    drafts[::2, 1] = (drafts[::2, 1] + 1) % 32000
    cu = torch.arange(0, 73, 3, dtype=torch.int32, device="cuda")
    g = flashspec.verify(h, w, drafts.flatten().contiguous(), cu, t[:24], s[:24], o[:24],
                         max_drafts=3)
    c = flashspec.verify(h.cpu(), w.cpu(), drafts.flatten().cpu(), cu.cpu(), t[:24].cpu(),
                         s[:24].cpu(), o[:24].cpu(), max_drafts=3)
    assert (g.tokens.cpu() != c.tokens).any(dim=1).sum().item() <= 1
    assert (g.num_emitted.cpu() != c.num_emitted).sum().item() <= 1


@pytest.mark.parametrize("rows", [1, 64, 320])
def test_realistic_shape_greedy(rows):
    h, w = head(151936, 4096, rows, seed=rows)
    logits = h.float() @ w.float().T
    ref = logits.argmax(dim=1).to(torch.int32)
    out = flashspec.sample(h, w, 0.0, 0).tokens
    assert near_ties_only(out, ref, logits, 1e-2) <= max(1, rows // 100)
    am = flashspec.draft_argmax(h, w).tokens
    assert near_ties_only(am, ref, logits, 1e-2) <= max(1, rows // 100)


def test_misaligned_pointers_fall_back():
    h, w = head(4096, 256, 16)
    buf = torch.empty(w.numel() + 1, dtype=w.dtype, device="cuda")
    w_off = buf[1:].view(w.shape)  # contiguous, 2 bytes past a 16-byte boundary
    w_off.copy_(w)
    assert w_off.data_ptr() % 16 != 0
    a = flashspec.sample(h, w, 1.0, torch.arange(16, device="cuda")).tokens
    b = flashspec.sample(h, w_off, 1.0, torch.arange(16, device="cuda")).tokens
    assert (a == b).float().mean().item() >= 15 / 16


def test_runs_on_current_stream():
    h, w = head(8000, 128, 32)
    seeds = torch.arange(32, device="cuda")
    ref = flashspec.sample(h, w, 1.0, seeds).tokens
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        h2 = h * 1  # produced on the side stream
        out = flashspec.sample(h2, w, 1.0, seeds).tokens
    torch.cuda.current_stream().wait_stream(side)
    assert torch.equal(out, ref)


def test_no_host_sync():
    h, w = head(8000, 128, 20)
    drafts = torch.zeros(15, dtype=torch.int32, device="cuda")
    cu = torch.arange(0, 16, 3, dtype=torch.int32, device="cuda")
    t = torch.ones(20, device="cuda")
    s = torch.arange(20, device="cuda")
    flashspec.sample(h, w, t, s)  # warm: contexts and workspaces exist
    flashspec.verify(h, w, drafts, cu, t[:5], s[:5], max_drafts=3)
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        flashspec.sample(h, w, t, s, return_logprobs=True)
        flashspec.sample_logits(h.float() @ w.float().T, t, s)
        flashspec.draft_argmax(h, w)
        flashspec.verify(h, w, drafts, cu, t[:5], s[:5], max_drafts=3)
        flashspec.verify(h, w, drafts, cu, t[:5], s[:5])  # default max_drafts: no read either
    finally:
        torch.cuda.set_sync_debug_mode(0)


def test_filters_and_tree_no_host_sync():
    h, w = head(8000, 128, 20)
    t = torch.ones(20, device="cuda")
    s = torch.arange(20, device="cuda")
    k = torch.full((20,), 100, dtype=torch.int32, device="cuda")  # > 64: the second pass
    tokens = torch.zeros(15, dtype=torch.int32, device="cuda")
    parents = torch.tensor([-1, 0, 0] * 5, dtype=torch.int32, device="cuda")
    cu = torch.arange(0, 16, 3, dtype=torch.int32, device="cuda")
    flashspec.sample(h, w, t, s, top_k=k, return_filter_fallback=True)  # warm
    flashspec.verify_tree(h, w, tokens, parents, cu, t[:5], s[:5])
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        flashspec.sample(h, w, t, s, top_k=k, top_p=0.9, min_p=0.01,
                         return_filter_fallback=True)
        flashspec.verify_tree(h, w, tokens, parents, cu, t[:5], s[:5], max_depth=2,
                              max_children=2, return_logprobs=True)
        flashspec.verify_tree(h, w, tokens, parents, cu, t[:5], s[:5])  # default bounds
    finally:
        torch.cuda.set_sync_debug_mode(0)


def test_cuda_graph_capture_and_replay():
    h, w = head(16000, 256, 8)
    t = torch.ones(8, device="cuda")
    s = torch.arange(8, device="cuda")
    o = torch.zeros(8, dtype=torch.int64, device="cuda")
    static_h = h.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up on the capture stream (workspace)
        flashspec.sample(static_h, w, t, s, o)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=side):
        out = flashspec.sample(static_h, w, t, s, o)
    for step in range(3):
        new_h, _ = head(16000, 256, 8, seed=100 + step)
        static_h.copy_(new_h)
        o.fill_(step)
        graph.replay()
        eager = flashspec.sample(new_h, w, t, s, torch.full_like(o, step))
        torch.cuda.synchronize()
        assert torch.equal(out.tokens, eager.tokens)


def test_mixed_devices_rejected():
    h, w = head(1000, 64, 4)
    with pytest.raises(ValueError, match="weight is on cpu, but hidden is on cuda"):
        flashspec.sample(h, w.cpu(), 1.0, 0)
    with pytest.raises(ValueError, match="temperature is on cpu"):
        flashspec.sample(h, w, torch.ones(4), 0)
    with pytest.raises(ValueError, match="draft_tokens is on cpu"):
        flashspec.verify(h, w, torch.zeros(3, dtype=torch.int32),
                         torch.tensor([0, 3], dtype=torch.int32, device="cuda"), 1.0, 0)


def test_second_device_if_present():
    if torch.cuda.device_count() < 2:
        pytest.skip("one GPU")
    h, w = head(4000, 128, 8, device="cuda:1")
    out = flashspec.sample(h, w, 0.0, 0).tokens
    assert out.device == torch.device("cuda:1")
    assert torch.equal(out, (h.float() @ w.float().T).argmax(1).to(torch.int32))
