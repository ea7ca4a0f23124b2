/* libFuzzer target: fs_verify_tree (hidden states) and fs_verify_tree_logits,
 * chosen by an input byte, on the CPU backend.  Ragged requests of 0-8
 * nodes: random, chain and star trees, and malformed ones (a parent at or
 * after its own index, below -1, far out of range; more children than
 * max_children; deeper than max_depth; node offsets not starting at 0,
 * decreasing, or not ending at num_nodes), node tokens that are the parent
 * row's argmax, random, a sibling's repeat or out of range; temperatures,
 * bias and masks as in the other targets; logprobs and path nodes present
 * or not.
 *
 * Checks: host-level errors (NULL tree and arrays, counts and bounds, the
 * fz_corrupt cases) return their status and write nothing; per request the
 * documented status in its order (layout, tree, token, temperature, then a
 * non-finite or all-masked row anywhere in the request); a bad request
 * emits 0, all -1 (logprobs NaN, path -1); a good one emits num_emitted in
 * [1, depth + 1]: a chain from the root in which each accepted node is the
 * first child of the previous one carrying the emitted token (path nodes,
 * when asked for, name exactly those nodes), then one token that is in
 * range, allowed, of finite score and, when the last accepted node has
 * children, differs from every child's token; -1 padding; at T <
 * FS_MIN_TEMPERATURE the exact greedy walk; logprobs against a double
 * reference; the same outputs with another scan tile.
 *
 * Filters (chosen by an input byte, as fuzz_filters generates them: each
 * array present or not, good, edge and bad values), under a candidate cap
 * and a forced second pass also chosen by the input: a request with bad
 * filters fails FS_ROW_BAD_FILTER after the temperature check; in a good
 * filtered request every emitted token -- accepted children included -- is
 * in its row's kept set, with its logprob under the filtered law;
 * out_filter_fallback is in [0, n_r + 1], 0 for bad, greedy and unfiltered
 * requests, n_r + 1 for a filtered one under the forced second pass; the
 * rerun with another tile is compared where no kept set has a near-tie. */
#include "cpu_backend.h"
#include "fuzz_support.h"

#include <limits.h>
#include <math.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_REQ = 4, MAX_NODES = 8 };

typedef struct tprob {
    int64_t R, num_nodes, max_depth, max_children;
    int32_t *off, *tokens, *parents;
    int wellformed;
} tprob;

/* Parents: a random tree, a chain, a star, or a random tree with edits that
 * break the topological order. */
static void gen_parents(fz_in *in, int32_t *par, int64_t n)
{
    const uint8_t shape = fz_u8(in) % 4;
    for (int64_t i = 0; i < n; ++i)
        par[i] = shape == 1 ? (int32_t)i - 1 : shape == 2 ? -1 : (int32_t)fz_below(in, i + 1) - 1;
    if (n > 0 && (shape == 3 || fz_chance(in, 8))) {
        const int64_t i = fz_below(in, n);
        const int32_t bad[] = {(int32_t)i, (int32_t)i + 1, (int32_t)n, -2, INT32_MIN, INT32_MAX};
        par[i] = FZ_PICK(in, bad);
    }
}

/* The documented FS_ROW_BAD_TREE rule for one request's parents; depth[i]
 * (root children 1) is set when the tree is good. */
static int tree_ok(const int32_t *par, int64_t n, int64_t max_depth, int64_t max_children,
                   int64_t *depth, int64_t *deepest)
{
    int64_t kids[MAX_NODES + 1] = {0};
    *deepest = 0;
    for (int64_t i = 0; i < n; ++i) {
        const int64_t q = par[i];
        if (q < -1 || q >= i)
            return 0;
        depth[i] = (q < 0 ? 0 : depth[q]) + 1;
        if (++kids[q + 1] > max_children || depth[i] > max_depth)
            return 0;
        if (depth[i] > *deepest)
            *deepest = depth[i];
    }
    return 1;
}

/* The node index of the first child of `node` (-1: root) carrying token
 * tok, or -1. */
static int64_t first_child(const int32_t *par, const int32_t *tok, int64_t n, int64_t node,
                           int32_t t)
{
    for (int64_t i = node + 1; i < n; ++i)
        if (par[i] == node && tok[i] == t)
            return i;
    return -1;
}

static void gen_tree(fz_in *in, fz_problem *p, tprob *t)
{
    t->R = 1 + fz_below(in, MAX_REQ);
    t->max_depth = fz_below(in, 7);
    t->max_children = fz_below(in, FS_TREE_MAX_CHILDREN + 1);
    int64_t counts[MAX_REQ], start[MAX_REQ], sum = 0;
    for (int64_t r = 0; r < t->R; ++r) {
        start[r] = sum; /* where request r's nodes are, whatever the offsets say */
        sum += counts[r] = fz_below(in, MAX_NODES + 1);
    }
    t->num_nodes = sum;
    if (fz_chance(in, 8)) /* num_nodes disagrees with the offsets */
        t->num_nodes = sum + 1;
    const int64_t N = t->num_nodes;
    t->off = fz_alloc(sizeof(int32_t) * (size_t)(t->R + 1));
    t->off[0] = 0;
    for (int64_t r = 0; r < t->R; ++r)
        t->off[r + 1] = t->off[r] + (int32_t)counts[r];
    t->parents = fz_alloc(sizeof(int32_t) * (size_t)N);
    t->tokens = fz_alloc(sizeof(int32_t) * (size_t)N);
    for (int64_t r = 0; r < t->R; ++r)
        gen_parents(in, t->parents + start[r], counts[r]);
    for (int64_t j = sum; j < N; ++j)
        t->parents[j] = -1;
    if (fz_chance(in, 12)) { /* malformed layouts */
        const int64_t i = fz_below(in, t->R);
        switch (fz_below(in, 3)) {
        case 0: t->off[0] = 1; break;
        case 1: t->off[t->R] -= 1; break;
        default: {
            int32_t x = t->off[i];
            t->off[i] = t->off[i + 1];
            t->off[i + 1] = x;
        }
        }
    }
    t->wellformed = fz_layout_ok(t->off, t->R, N);

    fz_gen_inputs(in, p, -1, N + t->R);
    fz_gen_params(in, p, t->R);

    /* tokens: the argmax of the parent's row (accepted at T = 0), random,
       or a repeat of an earlier sibling; then rare out-of-range edits */
    const uint8_t tmode = fz_u8(in) % 4;
    uint64_t h = fz_seed(in);
    for (int64_t r = 0; r < t->R; ++r) {
        const int64_t b = start[r] + r; /* the root's row when well-formed */
        for (int64_t i = 0; i < counts[r]; ++i) {
            const int64_t q = t->parents[start[r] + i];
            h = h * 6364136223846793005ull + 1442695040888963407ull;
            int32_t tok = (int32_t)((h >> 33) % (uint64_t)p->V);
            const int use_argmax = tmode == 0 || (tmode >= 2 && (h >> 20) % 2);
            if (t->wellformed && use_argmax && q >= -1 && q < i) {
                fz_rowref ref;
                fz_row_ref(p, b + 1 + q, fz_inv_temp(p->temperature[r]), &ref);
                if (ref.argmax >= 0)
                    tok = ref.argmax;
            }
            if (tmode == 3 && i > 0 && (h >> 25) % 3 == 0) /* a sibling's token, if any */
                for (int64_t j = 0; j < i; ++j)
                    if (t->parents[start[r] + j] == q)
                        tok = t->tokens[start[r] + j];
            t->tokens[start[r] + i] = tok;
        }
    }
    for (int64_t j = sum; j < N; ++j)
        t->tokens[j] = 0;
    if (N > 0 && fz_chance(in, 10)) {
        const int32_t bad[] = {-1, (int32_t)p->V, INT32_MIN, INT32_MAX};
        t->tokens[fz_below(in, N)] = FZ_PICK(in, bad);
    }
}

/* Set when some filtered row's kept set has a float near-tie at its edge
   (there another tile may round a mass across it). */
static int g_near_kept;

static void check_request(const fz_problem *p, const tprob *t, const fz_tree_call *tc, int64_t r,
                          int force)
{
    const fz_call *c = &tc->c;
    const int64_t S = t->max_depth + 1, V = p->V;
    const int32_t st = c->st[r], e = c->nem[r];
    const int32_t *out = c->tok + r * S;
    const int32_t *path = tc->path ? tc->path + r * t->max_depth : NULL;
    const float *lp = c->vals ? c->vals + r * S : NULL;
    const float T = p->temperature[r], inv = fz_inv_temp(T);
    int64_t n = 0, begin = 0, deepest = 0, depth[MAX_NODES];
    const int32_t *par = NULL, *tok = NULL;
    fz_rowref refs[MAX_NODES + 1];
    int32_t pre = FS_ROW_OK;
    unsigned want;
    if (!t->wellformed) {
        pre = FS_ROW_BAD_OFFSETS;
    } else {
        n = t->off[r + 1] - t->off[r];
        begin = t->off[r] + r;
        par = t->parents + t->off[r];
        tok = t->tokens + t->off[r];
        if (!tree_ok(par, n, t->max_depth, t->max_children, depth, &deepest))
            pre = FS_ROW_BAD_TREE;
        for (int64_t i = 0; pre == FS_ROW_OK && i < n; ++i)
            if (tok[i] < 0 || tok[i] >= V)
                pre = FS_ROW_BAD_DRAFT;
        if (pre == FS_ROW_OK)
            pre = fz_temperature_status(T);
        if (pre == FS_ROW_OK)
            pre = fz_filter_status(p, r);
    }
    /* the filters' fallback counts */
    const int32_t *fb = c->params_v.out_filter_fallback;
    const int filtered = pre == FS_ROW_OK && !fz_is_greedy(T) && fz_filter_on(p, r);
    if (fb) {
        FZ_CHECK(fb[r] >= 0 && fb[r] <= n + 1,
                 "tree request %lld: out_filter_fallback %d outside [0, %lld]", (long long)r,
                 fb[r], (long long)(n + 1));
        if (!filtered)
            FZ_CHECK(fb[r] == 0, "tree request %lld: out_filter_fallback %d, no row filters",
                     (long long)r, fb[r]);
        else if (force && st == FS_ROW_OK)
            FZ_CHECK(fb[r] == n + 1,
                     "tree request %lld: second pass forced, out_filter_fallback %d of %lld rows",
                     (long long)r, fb[r], (long long)(n + 1));
    }
    if (pre != FS_ROW_OK) {
        want = 1u << pre;
    } else { /* every row counts, reached by the walk or not */
        int all_ok = 1;
        want = 0;
        for (int64_t j = 0; j <= n; ++j) {
            fz_row_ref(p, begin + j, inv, &refs[j]);
            want |= refs[j].status_mask & ~(1u << FS_ROW_OK);
            all_ok &= (refs[j].status_mask >> FS_ROW_OK) & 1u;
        }
        if (all_ok)
            want |= 1u << FS_ROW_OK;
    }
    FZ_CHECK((1u << st) & want, "tree request %lld: status %d, expected mask 0x%x", (long long)r,
             st, want);
    if (st != FS_ROW_OK) {
        FZ_CHECK(e == 0, "tree request %lld: bad (status %d) but %d emitted", (long long)r, st, e);
        for (int64_t k = 0; k < S; ++k)
            FZ_CHECK(out[k] == -1 && (!lp || lp[k] != lp[k]),
                     "tree request %lld: bad, slot %lld holds %d", (long long)r, (long long)k,
                     out[k]);
        for (int64_t k = 0; path && k < t->max_depth; ++k)
            FZ_CHECK(path[k] == -1, "tree request %lld: bad, path slot %lld holds %d",
                     (long long)r, (long long)k, path[k]);
        return;
    }
    FZ_CHECK(e >= 1 && e <= deepest + 1, "tree request %lld: %d emitted, tree depth %lld",
             (long long)r, e, (long long)deepest);
    /* the accepted chain from the root, then the last token */
    int64_t node = -1;
    for (int64_t k = 0; k < e; ++k) {
        const int64_t row = begin + 1 + node;
        fz_check_token(p, row, out[k], inv, "tree request", r);
        fz_rowref ref = refs[node + 1];
        if (filtered && ref.exact) {
            /* the token (an accepted child's or the last) is in the row's kept
               set; its logprob is under the filtered law */
            fz_kept kept;
            fz_kept_ref(p, row, inv, r, &kept);
            fz_check_kept(p, row, out[k], inv, &kept, "tree request", r);
            ref.exact = kept.lo == kept.hi;
            ref.lse = kept.lse;
        } else if (filtered) {
            ref.exact = 0; /* filtered but not exactly known: range only */
        }
        if (lp)
            fz_check_logprob(p, row, out[k], inv, &ref, lp[k], "tree request", r);
        if (k < e - 1) {
            const int64_t child = first_child(par, tok, n, node, out[k]);
            FZ_CHECK(child >= 0,
                     "tree request %lld: slot %lld holds %d, the token of no child of node %lld",
                     (long long)r, (long long)k, out[k], (long long)node);
            FZ_CHECK(!path || path[k] == child,
                     "tree request %lld: path slot %lld is node %d, the first child of node %lld "
                     "with token %d is %lld", (long long)r, (long long)k, path[k], (long long)node,
                     out[k], (long long)child);
            node = child;
        } else {
            for (int64_t i = node + 1; i < n; ++i)
                FZ_CHECK(par[i] != node || tok[i] != out[k],
                         "tree request %lld: last token %d is the token of node %lld, a child of "
                         "node %lld (tried and rejected)", (long long)r, out[k], (long long)i,
                         (long long)node);
        }
    }
    for (int64_t j = 0; filtered && j <= n; ++j) {
        fz_kept kept;
        if (!refs[j].exact) {
            g_near_kept = 1;
            continue;
        }
        fz_kept_ref(p, begin + j, inv, r, &kept);
        g_near_kept |= kept.lo != kept.hi;
    }
    for (int64_t k = e; k < S; ++k)
        FZ_CHECK(out[k] == -1 && (!lp || lp[k] != lp[k]),
                 "tree request %lld: padding slot %lld holds %d", (long long)r, (long long)k,
                 out[k]);
    for (int64_t k = e - 1; path && k < t->max_depth; ++k)
        FZ_CHECK(path[k] == -1, "tree request %lld: path padding slot %lld holds %d",
                 (long long)r, (long long)k, path[k]);
    if (fz_is_greedy(T)) { /* the greedy walk, where every row is determined */
        int exact = 1;
        for (int64_t j = 0; j <= n; ++j)
            exact &= refs[j].exact;
        if (!exact)
            return;
        int64_t k = 0;
        node = -1;
        for (;;) {
            const int32_t am = refs[node + 1].argmax;
            const int64_t child = first_child(par, tok, n, node, am);
            FZ_CHECK(k < e && out[k] == am,
                     "tree request %lld (greedy): slot %lld holds %d, argmax of node %lld's row "
                     "is %d", (long long)r, (long long)k, k < e ? out[k] : -1, (long long)node, am);
            ++k;
            if (child < 0)
                break;
            node = child;
        }
        FZ_CHECK(e == k, "tree request %lld (greedy): %d emitted, the walk emits %lld",
                 (long long)r, e, (long long)k);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in;
    fz_begin(&in, data, size);
    fz_problem p;
    tprob t;
    gen_tree(&in, &p, &t);
    const int64_t tile = fz_gen_tile(&in, p.V), tile2 = fz_gen_tile(&in, p.V);
    const uint8_t outs = fz_u8(&in);
    const int with_lp = !(outs & 1), with_path = !(outs & 2);
    /* filters (bit 2 of the same byte clear: the all-zero input filters),
       the candidate cap and the forced second pass */
    static const int caps[] = {0, 1, 2, 3, 4, 7, 8, 16, 63};
    const int filters = !(outs & 4);
    int cap = 0, force = 0;
    if (filters) {
        fz_gen_filters(&in, &p, t.R);
        cap = FZ_PICK(&in, caps);
        force = fz_u8(&in) & 1;
    }
    fz_tree_check_workspace_query(&in, t.R, t.num_nodes, p.V);

    fs_draft_tree tree = {t.R, t.num_nodes, t.max_depth, t.max_children,
                          t.tokens, t.parents, t.off};
    fz_tree_call tc;
    size_t need;
    fz_tree_call_init(&tc, &p, &tree, with_lp, with_path, &need);
    fz_tree_corrupt(&in, &tc, need);
    fs_cpu_set_tile_size(tile);
    fs_cpu_set_filter_candidates(cap);
    fs_cpu_set_filter_second_pass(force);
    fs_status s;
    g_near_kept = 0;
    if (fz_tree_run(&tc, need, &s)) {
        for (int64_t r = 0; r < t.R; ++r)
            check_request(&p, &t, &tc, r, force);
        if (!g_near_kept)
            fz_tree_check_rerun(&tc, tile2);
    }
    fs_cpu_set_filter_candidates(0);
    fs_cpu_set_filter_second_pass(0);
    fz_end();
    return 0;
}
