"""verify_tree through the Python entry: a chain equals verify token for
token (with and without top-k / top-p / min-p), greedy trees against the
plain-Python walk (tests/_reference.py), a child outside the top-k 1 set never
accepted, path_nodes consistent with tokens, bad trees as ROW_BAD_TREE and
bad filter values as ROW_BAD_FILTER, argument errors."""
import pytest
import torch

import flashspec
from _reference import reference_tree_greedy


def i32(values, device):
    return torch.tensor(values, dtype=torch.int32, device=device)


def test_chain_equals_verify(device):
    g = torch.Generator().manual_seed(0)
    n_per = [3, 0, 2, 4, 1, 3]
    reqs, v = len(n_per), 60
    logits = torch.randn(sum(n_per) + reqs, v, generator=g) * 2
    top = logits.argmax(dim=1)
    drafts, parents = [], []
    for r, n in enumerate(n_per):
        first = sum(n_per[:r]) + r
        for j in range(n):  # half the drafts are the target argmax, so walks go deep
            t = int(top[first + j])
            drafts.append(t if (r + j) % 2 == 0 else (t + 1) % v)
            parents.append(j - 1)
    cu = i32([0] + torch.tensor(n_per).cumsum(0).tolist(), device)
    temp = torch.tensor([1.0, 0.0, 0.7, 1.3, 0.0, 1.0], device=device)
    offset = torch.arange(reqs, device=device) * 11
    lg, dr = logits.to(device), i32(drafts, device)
    for seed in range(20):
        seeds = torch.arange(reqs, device=device) + 1000 * seed
        a = flashspec.verify_logits(lg, dr, cu, temp, seeds, offset, max_drafts=4,
                                    return_logprobs=True)
        b = flashspec.verify_tree_logits(lg, dr, i32(parents, device), cu, temp, seeds, offset,
                                         max_depth=4, max_children=1, return_logprobs=True)
        assert torch.equal(a.tokens, b.tokens) and torch.equal(a.num_emitted, b.num_emitted)
        assert torch.equal(a.row_status, b.row_status)
        torch.testing.assert_close(a.logprobs, b.logprobs, equal_nan=True)
        path = b.path_nodes.cpu()
        for r in range(reqs):
            k = int(b.num_emitted[r]) - 1
            assert path[r, :k].tolist() == list(range(k)) and (path[r, k:] == -1).all()


def test_chain_with_filters_equals_verify(device):
    """Per-request filters (top-k 5, top-p 0.9, min-p 0.1, all three, k = 1,
    none, and a bad k): a chain given as a tree emits verify()'s tokens,
    statuses and second-pass counts with the same filters and seeds."""
    g = torch.Generator().manual_seed(3)
    n_per = [3, 2, 4, 1, 3, 2, 2]
    reqs, v = len(n_per), 80
    logits = torch.randn(sum(n_per) + reqs, v, generator=g) * 2
    top = logits.argmax(dim=1)
    drafts, parents = [], []
    for r, n in enumerate(n_per):
        first = sum(n_per[:r]) + r
        for j in range(n):
            t = int(top[first + j])
            drafts.append(t if (r + j) % 3 else (t + 1) % v)
            parents.append(j - 1)
    cu = i32([0] + torch.tensor(n_per).cumsum(0).tolist(), device)
    temp = torch.tensor([1.0, 0.7, 1.3, 1.0, 0.0, 2.0, 1.0], device=device)
    k = i32([5, 0, 0, 5, 1, 0, -1], device)
    p = torch.tensor([1.0, 0.9, 1.0, 0.9, 1.0, 1.0, 1.0], device=device)
    mp = torch.tensor([0.0, 0.0, 0.1, 0.1, 0.0, 0.0, 0.0], device=device)
    lg, dr = logits.to(device), i32(drafts, device)
    for seed in range(10):
        seeds = torch.arange(reqs, device=device) + 1000 * seed
        a = flashspec.verify_logits(lg, dr, cu, temp, seeds, max_drafts=4, return_logprobs=True,
                                    top_k=k, top_p=p, min_p=mp, return_filter_fallback=True)
        b = flashspec.verify_tree_logits(lg, dr, i32(parents, device), cu, temp, seeds,
                                         max_depth=4, max_children=1, return_logprobs=True,
                                         top_k=k, top_p=p, min_p=mp,
                                         return_filter_fallback=True)
        assert torch.equal(a.tokens, b.tokens) and torch.equal(a.num_emitted, b.num_emitted)
        assert torch.equal(a.row_status, b.row_status)
        assert torch.equal(a.filter_fallback, b.filter_fallback)
        torch.testing.assert_close(a.logprobs, b.logprobs, equal_nan=True)
        assert int(b.row_status[6]) == flashspec.ROW_BAD_FILTER
        assert (b.row_status[:6] == 0).all()


def test_child_outside_top_k_never_accepted(device):
    """Top-k 1 at T = 1: every row keeps only its argmax, so a first child
    that is the row's runner-up has p = 0 -- never accepted, and the token
    emitted is the argmax (the kept set without the tried children)."""
    g = torch.Generator().manual_seed(4)
    reqs, v, n = 6, 50, 3
    logits = torch.randn((n + 1) * reqs, v, generator=g)
    order = logits.argsort(dim=1, descending=True)
    tokens, parents = [], []
    for r in range(reqs):
        root = r * (n + 1)
        tokens += [int(order[root, 1]), int(order[root, 2]), int(order[root + 1, 0])]
        parents += [-1, -1, 0]  # two children at the root, one under the first
    cu = i32([n * r for r in range(reqs + 1)], device)
    lg = logits.to(device)
    temp = torch.ones(reqs, device=device)
    k = i32([1] * reqs, device)
    for seed in range(20):
        seeds = torch.arange(reqs, device=device) + 77 * seed
        out = flashspec.verify_tree_logits(lg, i32(tokens, device), i32(parents, device), cu,
                                           temp, seeds, max_depth=2, top_k=k)
        assert (out.num_emitted == 1).all()
        want = order[::n + 1, 0].to(torch.int32).to(device)
        assert torch.equal(out.tokens[:, 0], want)


def random_tree(n, g, max_children=4):
    """Parents of n nodes, each below its node, at most max_children each."""
    parents, children = [], {-1: 0}
    for i in range(n):
        while True:
            par = int(torch.randint(-1, i, (), generator=g)) if i else -1
            if children.get(par, 0) < max_children:
                break
        children[par] = children.get(par, 0) + 1
        children[i] = 0
        parents.append(par)
    return parents


def greedy_batch(trees, v, g):
    """Logits and tokens for trees whose children are mostly the argmax of
    their parent's row (so greedy walks go deep), with some decoys."""
    rows = sum(len(p) for p in trees) + len(trees)
    logits = torch.randn(rows, v, generator=g) * 2
    top = logits.argmax(dim=1).tolist()
    tokens = []
    for r, parents in enumerate(trees):
        first = sum(len(p) for p in trees[:r]) + r
        for i, par in enumerate(parents):
            right = torch.rand((), generator=g) < 0.6
            t = top[first + 1 + par]
            tokens.append(t if right else (t + 1 + i) % v)
    return logits, tokens


@pytest.mark.parametrize("shape", ["star", "random"])
def test_greedy_tree_equals_reference_walk(device, shape):
    g = torch.Generator().manual_seed(1 if shape == "star" else 2)
    v = 50
    if shape == "star":  # every node a child of the root
        trees = [[-1] * n for n in (5, 1, 8, 3)]
    else:
        trees = [random_tree(n, g) for n in (7, 12, 1, 9, 15)]
    logits, tokens = greedy_batch(trees, v, g)
    if shape == "star":  # the argmax among the children, and a repeated decoy first
        tokens[0] = int(logits[0].argmax()) ^ 1
        tokens[1] = tokens[0]
    cu = i32([0] + torch.tensor([len(p) for p in trees]).cumsum(0).tolist(), device)
    flat_parents = [p for t in trees for p in t]
    temp = torch.zeros(len(trees), device=device)
    for run in ("logits", "fused"):
        if run == "logits":
            out = flashspec.verify_tree_logits(logits.to(device), i32(tokens, device),
                                               i32(flat_parents, device), cu, temp, 0,
                                               max_depth=16)
        else:  # the fused LM head: logits = hidden @ eye
            out = flashspec.verify_tree(logits.to(device), torch.eye(v, device=device),
                                        i32(tokens, device), i32(flat_parents, device), cu,
                                        temp, 0, max_depth=16)
        assert (out.row_status == 0).all()
        start, deep = 0, 0
        for r, parents in enumerate(trees):
            n = len(parents)
            rows = logits[start + r:start + r + n + 1]
            want, path = reference_tree_greedy(rows, tokens[start:start + n], parents)
            k = int(out.num_emitted[r])
            assert k == len(want), (run, r)
            assert out.tokens[r, :k].cpu().tolist() == want
            assert (out.tokens[r, k:] == -1).all()
            assert out.path_nodes[r, :k - 1].cpu().tolist() == path
            deep = max(deep, k)
            start += n
        assert deep >= 3 if shape == "random" else deep == 2


def test_path_nodes_consistent_with_tokens(device):
    g = torch.Generator().manual_seed(3)
    trees = [random_tree(n, g) for n in (6, 10, 3, 14)] * 4
    logits, tokens = greedy_batch(trees, 30, g)
    flat_parents = [p for t in trees for p in t]
    cu = i32([0] + torch.tensor([len(p) for p in trees]).cumsum(0).tolist(), device)
    temp = torch.full((len(trees),), 0.8, device=device)
    reached = 0
    for seed in range(10):
        out = flashspec.verify_tree_logits(logits.to(device), i32(tokens, device),
                                           i32(flat_parents, device), cu, temp,
                                           torch.arange(len(trees), device=device) + 97 * seed)
        assert (out.row_status == 0).all()
        assert out.tokens.shape == (len(trees), sum(len(t) for t in trees) + 1)
        start = 0
        for r, parents in enumerate(trees):
            k = int(out.num_emitted[r])
            path = out.path_nodes[r].cpu().tolist()
            prev = -1
            for j in range(k - 1):  # each accepted node is a child of the one before
                node = path[j]
                assert parents[node] == prev
                assert int(out.tokens[r, j]) == tokens[start + node]
                prev = node
            assert all(p == -1 for p in path[k - 1:])
            # the emitted token after the path is not a sibling tried before
            siblings = [tokens[start + i] for i, par in enumerate(parents) if par == prev]
            assert int(out.tokens[r, k - 1]) not in siblings
            reached = max(reached, k - 1)
            start += len(parents)
    assert reached >= 2


def test_bad_trees_fail_their_request(device):
    logits = torch.randn(19, 20, device=device)  # 14 nodes + 5 roots
    trees = [
        [-1, 0, 1],  # fine (depth 3)
        [-1, 1],  # a parent not before its node
        [-1, -2],  # a parent below -1
        [-1, 0, 1, 2],  # depth 4 > max_depth 3
        [-1, -1, -1],  # 3 children under the root > max_children 2
    ]
    tokens = i32([1] * 14, device)
    cu = i32([0, 3, 5, 7, 11, 14], device)
    parents = i32([p for t in trees for p in t], device)
    out = flashspec.verify_tree_logits(logits, tokens, parents, cu, 1.0, 0,
                                       max_depth=3, max_children=2, return_logprobs=True)
    bad = flashspec.ROW_BAD_TREE
    assert out.row_status.cpu().tolist() == [0, bad, bad, bad, bad]
    assert out.num_emitted.cpu().tolist()[1:] == [0] * 4
    assert (out.tokens[1:] == -1).all() and (out.path_nodes[1:] == -1).all()
    assert torch.isnan(out.logprobs[1:]).all()
    with pytest.raises(flashspec.FlashspecRowError) as e:
        flashspec.check_row_status(out.row_status)
    assert e.value.rows == {i: bad for i in range(1, 5)}


def test_tree_argument_errors(device):
    logits = torch.randn(5, 20, device=device)
    tokens, parents, cu = i32([1, 2, 3], device), i32([-1, 0, 0], device), i32([0, 3], device)
    with pytest.raises(ValueError, match="parents has 2 entries"):
        flashspec.verify_tree_logits(logits[:4], tokens, parents[:2], cu, 1.0, 0)
    with pytest.raises(ValueError, match="needs num_nodes \\+ requests"):
        flashspec.verify_tree_logits(logits, tokens, parents, cu, 1.0, 0)
    with pytest.raises(TypeError, match="parents has dtype"):
        flashspec.verify_tree_logits(logits[:4], tokens, parents.long(), cu, 1.0, 0)
    with pytest.raises(ValueError, match="max_children must be in \\[0, 16\\]"):
        flashspec.verify_tree_logits(logits[:4], tokens, parents, cu, 1.0, 0, max_children=17)
    out = flashspec.verify_tree_logits(logits[:4], tokens, parents, cu, 0.0, 0)
    assert out.tokens.shape == (1, 4) and out.path_nodes.shape == (1, 3)  # default: 3 nodes
    empty = flashspec.verify_tree_logits(logits[:0], i32([], device), i32([], device),
                                         i32([0], device), 1.0, 0)
    assert empty.tokens.shape == (0, 1) and empty.path_nodes.shape == (0, 0)
