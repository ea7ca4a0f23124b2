/* Tree-verify test helpers; see tree_test.h. */
#include "tree_test.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fs_test.h"
#include "naive_ref.h"

fs_status fstt_verify_tree_logits(fs_context *ctx, const void *logits, fs_dtype dt, int64_t V,
                                  const fs_draft_tree *t, const fs_sampling *p, int32_t *tok,
                                  int32_t *path, int32_t *nem, float *lp, int32_t *st)
{
    size_t bytes = 0;
    fs_status s = fs_verify_tree_workspace_size(ctx, t->num_requests, t->num_nodes, V, &bytes);
    if (s != FS_OK)
        return s;
    void *ws = malloc(bytes ? bytes : 1);
    s = fs_verify_tree_logits(ctx, logits, dt, V, t, p, ws, bytes, tok, path, nem, lp, st);
    free(ws);
    return s;
}

fs_status fstt_verify_tree(fs_context *ctx, const fs_lm_head *head, const void *hidden,
                           const fs_draft_tree *t, const fs_sampling *p, int32_t *tok,
                           int32_t *path, int32_t *nem, float *lp, int32_t *st)
{
    size_t bytes = 0;
    fs_status s = fs_verify_tree_workspace_size(ctx, t->num_requests, t->num_nodes,
                                                head->vocab_size, &bytes);
    if (s != FS_OK)
        return s;
    void *ws = malloc(bytes ? bytes : 1);
    s = fs_verify_tree(ctx, head, hidden, t, p, ws, bytes, tok, path, nem, lp, st);
    free(ws);
    return s;
}

static void set_tree(fstt_tree *tr, int64_t R, int64_t max_depth, int64_t max_children)
{
    tr->t.num_requests = R;
    tr->t.num_nodes = tr->offsets[R];
    tr->t.max_depth = max_depth;
    tr->t.max_children = max_children;
    tr->t.tokens = tr->tokens;
    tr->t.parents = tr->parents;
    tr->t.node_offsets = tr->offsets;
}

int64_t fstt_make_shapes(fstt_tree *tr, int64_t R, int64_t max_nodes, int64_t max_depth,
                         int64_t max_children, uint64_t seed)
{
    fst_rng g;
    fst_rng_seed(&g, seed ^ 0x7EEull);
    tr->offsets = malloc(sizeof(int32_t) * (size_t)(R + 1));
    tr->offsets[0] = 0;
    for (int64_t r = 0; r < R; ++r)
        tr->offsets[r + 1] = tr->offsets[r] + (r == 0 ? 0 : (int32_t)fst_randint(&g, max_nodes + 1));
    int64_t total = tr->offsets[R];
    tr->tokens = calloc((size_t)total + 1, sizeof(int32_t));
    tr->parents = malloc(sizeof(int32_t) * (size_t)(total + 1));
    int64_t *depth = malloc(sizeof(int64_t) * (size_t)(max_nodes + 1));
    int64_t *kids = malloc(sizeof(int64_t) * (size_t)(max_nodes + 1));
    int64_t *open = malloc(sizeof(int64_t) * (size_t)(max_nodes + 1));
    for (int64_t r = 0; r < R; ++r) {
        int64_t b = tr->offsets[r], n = tr->offsets[r + 1] - b, made = 0;
        /* index 0 = the root, 1 + i = node i */
        depth[0] = 0;
        kids[0] = 0;
        for (int64_t i = 0; i < n; ++i) {
            int64_t m = 0;
            for (int64_t j = 0; j <= i; ++j)
                if (depth[j] < max_depth && kids[j] < max_children)
                    open[m++] = j;
            if (m == 0)
                break; /* the bounds are full: the request keeps i nodes */
            int64_t up = open[fst_randint(&g, m)];
            tr->parents[b + i] = (int32_t)(up - 1);
            kids[up]++;
            depth[i + 1] = depth[up] + 1;
            kids[i + 1] = 0;
            ++made;
        }
        /* a full tree ends early: the following requests start sooner */
        if (made < n) {
            for (int64_t q = r + 1; q <= R; ++q)
                tr->offsets[q] -= (int32_t)(n - made);
            total -= n - made;
        }
    }
    free(depth);
    free(kids);
    free(open);
    set_tree(tr, R, max_depth, max_children);
    return total + R;
}

int64_t fstt_make_chains(fstt_tree *tr, int64_t R, const int32_t *lens, const int32_t *x,
                         int64_t max_depth)
{
    tr->offsets = malloc(sizeof(int32_t) * (size_t)(R + 1));
    tr->offsets[0] = 0;
    for (int64_t r = 0; r < R; ++r)
        tr->offsets[r + 1] = tr->offsets[r] + lens[r];
    int64_t total = tr->offsets[R];
    tr->tokens = malloc(sizeof(int32_t) * (size_t)(total + 1));
    tr->parents = malloc(sizeof(int32_t) * (size_t)(total + 1));
    for (int64_t r = 0; r < R; ++r)
        for (int64_t i = 0; i < lens[r]; ++i) {
            tr->tokens[tr->offsets[r] + i] = x[tr->offsets[r] + i];
            tr->parents[tr->offsets[r] + i] = (int32_t)(i - 1);
        }
    set_tree(tr, R, max_depth, 1);
    return total + R;
}

void fstt_free(fstt_tree *tr)
{
    free(tr->tokens);
    free(tr->parents);
    free(tr->offsets);
    memset(tr, 0, sizeof *tr);
}

/* The (rank+1)-th best token of a row by l + b over allowed (lowest id on ties). */
static int32_t ranked(const double *l, int64_t V, const float *b, const uint32_t *a, int64_t rank)
{
    int32_t prev = -1;
    double prev_s = INFINITY;
    for (int64_t k = 0; k <= rank; ++k) {
        int32_t best = -1;
        double bs = -INFINITY;
        for (int64_t v = 0; v < V; ++v) {
            double s = ref_greedy_score(l, b, a, v);
            int after = s < prev_s || (s == prev_s && v > prev);
            if (after && (best < 0 || s > bs)) {
                best = (int32_t)v;
                bs = s;
            }
        }
        if (best < 0)
            return prev >= 0 ? prev : 0;
        prev = best;
        prev_s = bs;
    }
    return prev;
}

void fstt_choose_tokens(fstt_tree *tr, const double *ref, int64_t V, const fs_sampling *p,
                        uint64_t seed)
{
    fst_rng g;
    fst_rng_seed(&g, seed ^ 0xC401CEull);
    double *logp = malloc(sizeof(double) * (size_t)V);
    int64_t W = fst_mask_words(V);
    const fs_draft_tree *t = &tr->t;
    for (int64_t r = 0; r < t->num_requests; ++r) {
        int64_t b = t->node_offsets[r], n = t->node_offsets[r + 1] - b;
        for (int64_t i = 0; i < n; ++i) {
            int64_t up = tr->parents[b + i], row = b + r + up + 1, c = 0, prev = -1;
            for (int64_t j = up + 1; j < i; ++j)
                if (tr->parents[b + j] == up) {
                    ++c;
                    prev = j;
                }
            const double *l = ref + row * V;
            const float *bias = p->logit_bias ? p->logit_bias + row * V : NULL;
            const uint32_t *al = p->allowed ? p->allowed + row * W : NULL;
            double u = fst_unif(&g);
            int32_t x;
            if (prev >= 0 && u < 0.05) {
                x = tr->tokens[b + prev];
            } else if (u < 0.55) {
                x = ranked(l, V, bias, al, c);
            } else if (u < 0.85) {
                double T = p->temperature[r] > 0 ? p->temperature[r] : 1.0;
                ref_row_logp(l, V, bias, al, T, logp);
                double cu = fst_unif(&g), acc = 0.0;
                x = (int32_t)(V - 1);
                for (int64_t v = 0; v < V; ++v) {
                    acc += exp(logp[v]);
                    if (cu < acc) {
                        x = (int32_t)v;
                        break;
                    }
                }
            } else {
                x = (int32_t)fst_randint(&g, V);
            }
            tr->tokens[b + i] = x;
        }
    }
    free(logp);
}
