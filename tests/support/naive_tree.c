/* The naive materialised tree-verify oracle; see naive_tree.h. */
#include "naive_tree.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fs_test.h"
#include "naive_ref.h"
#include "philox.h" /* fs_philox_draw, fs_uniform: the shared noise only */

/* u_k of a node at depth d: the documented keying, spelled out here. */
static double child_uniform(uint64_t seed, uint64_t offset, uint32_t depth, int k)
{
    fs_u32x4 w = fs_philox_draw(seed, offset, depth, FS_PURPOSE_ACCEPT, (uint32_t)k / 4u);
    return (double)fs_uniform(w.v[k % 4]);
}

static int layout_ok(const fs_draft_tree *t)
{
    const int32_t *o = t->node_offsets;
    if (o[0] != 0 || (int64_t)o[t->num_requests] != t->num_nodes)
        return 0;
    for (int64_t r = 0; r < t->num_requests; ++r)
        if (o[r + 1] < o[r])
            return 0;
    return 1;
}

/* FS_ROW_BAD_TREE, FS_ROW_BAD_DRAFT or FS_ROW_OK for one request's nodes;
 * depth[n] is filled for a good tree. */
static int32_t tree_status(const int32_t *tok, const int32_t *par, int64_t n, const fs_draft_tree *t,
                           int64_t V, int64_t *depth)
{
    int64_t *kids = calloc((size_t)n + 1, sizeof(int64_t)); /* kids[1 + i]: children of i */
    int32_t st = FS_ROW_OK;
    for (int64_t i = 0; i < n && st == FS_ROW_OK; ++i) {
        if (par[i] < -1 || par[i] >= i) {
            st = FS_ROW_BAD_TREE;
            break;
        }
        depth[i] = par[i] < 0 ? 1 : depth[par[i]] + 1;
        if (++kids[par[i] + 1] > t->max_children || depth[i] > t->max_depth)
            st = FS_ROW_BAD_TREE;
    }
    free(kids);
    for (int64_t i = 0; i < n && st == FS_ROW_OK; ++i)
        if (tok[i] < 0 || tok[i] >= V)
            st = FS_ROW_BAD_DRAFT;
    return st;
}

static const float *bias_row(const fs_sampling *p, int64_t row, int64_t V)
{
    return p->logit_bias ? p->logit_bias + row * V : NULL;
}

static const uint32_t *allowed_row(const fs_sampling *p, int64_t row, int64_t V)
{
    return p->allowed ? p->allowed + row * fst_mask_words(V) : NULL;
}

/* The walk of one good request (rows row0 .. row0 + n).  Writes tokens,
 * path and logprobs of the request; returns the number emitted. */
static int64_t walk(const double *logits, int64_t V, const int32_t *tok, const int32_t *par,
                    int64_t n, int64_t row0, const fs_sampling *p, int64_t r, unsigned flags,
                    int32_t *out, int32_t *path, double *lp, double *margin, double *logp,
                    double *lw, char *removed)
{
    const double T = p->temperature[r];
    const uint64_t seed = p->seed[r], off = p->offset ? p->offset[r] : 0;
    double mm = INFINITY;
    int64_t k = 0, node = -1;
    for (uint32_t depth = 0;; ++depth) {
        int64_t row = row0 + node + 1;
        const double *l = logits + row * V;
        const float *b = bias_row(p, row, V);
        const uint32_t *a = allowed_row(p, row, V);
        ref_row_logp(l, V, b, a, T, logp);
        int64_t accepted = -1, last_child = -1;
        memset(removed, 0, (size_t)V);
        if (T == 0.0) {
            double bs, ss;
            int32_t am = ref_greedy_max(l, V, b, a, &bs, &ss);
            mm = fmin(mm, bs - ss);
            for (int64_t i = node + 1; i < n && accepted < 0; ++i)
                if (par[i] == node && tok[i] == am)
                    accepted = i;
            if (accepted < 0) {
                out[k] = am;
                lp[k] = logp[am];
                *margin = mm;
                return k + 1;
            }
        } else {
            int c = 0;
            for (int64_t i = node + 1; i < n && accepted < 0; ++i) {
                if (par[i] != node)
                    continue;
                int ci = c++;
                last_child = i;
                int32_t x = tok[i];
                double q = exp(logp[x]);
                if (removed[x] || q == 0.0)
                    continue;
                double rest = 0.0;
                for (int64_t v = 0; v < V; ++v)
                    if (!removed[v])
                        rest += exp(logp[v]);
                double u = child_uniform(seed, off, depth, ci);
                double lhs = flags & REF_TREE_UNRENORMALISED ? u : u * rest;
                mm = fmin(mm, fabs(lhs - q));
                if (lhs <= q)
                    accepted = i;
                else
                    removed[x] = 1;
            }
            if (accepted < 0) {
                if ((flags & REF_TREE_KEEP_SIBLINGS) && last_child >= 0) {
                    memset(removed, 0, (size_t)V);
                    removed[tok[last_child]] = 1;
                }
                for (int64_t v = 0; v < V; ++v)
                    lw[v] = removed[v] ? -INFINITY : logp[v];
                double em;
                int32_t e = ref_block_draw(lw, V, seed, off, depth, &em);
                mm = fmin(mm, em);
                out[k] = e;
                lp[k] = e >= 0 ? logp[e] : NAN;
                *margin = mm;
                return k + 1;
            }
        }
        out[k] = tok[accepted];
        lp[k] = logp[tok[accepted]];
        path[k] = (int32_t)accepted;
        ++k;
        node = accepted;
    }
}

void ref_verify_tree(const double *logits, int64_t V, const fs_draft_tree *t,
                     const fs_sampling *p, unsigned flags, int32_t *tokens, int32_t *path,
                     int32_t *num_emitted, double *logprobs, int32_t *status, double *margin)
{
    const int64_t R = t->num_requests, S = t->max_depth + 1, P = t->max_depth;
    double *logp = malloc(sizeof(double) * (size_t)V), *lw = malloc(sizeof(double) * (size_t)V);
    char *removed = malloc((size_t)V);
    int32_t *pth = malloc(sizeof(int32_t) * (size_t)(S + 1));
    int good_layout = layout_ok(t);
    for (int64_t r = 0; r < R; ++r) {
        int32_t *o = tokens + r * S;
        double *lp = logprobs + r * S;
        for (int64_t k = 0; k < S; ++k) {
            o[k] = -1;
            lp[k] = NAN;
            pth[k] = -1;
        }
        num_emitted[r] = 0;
        if (margin)
            margin[r] = INFINITY;
        int32_t st = good_layout ? FS_ROW_OK : FS_ROW_BAD_OFFSETS;
        int64_t begin = 0, n = 0;
        if (st == FS_ROW_OK) {
            begin = t->node_offsets[r];
            n = t->node_offsets[r + 1] - begin;
            int64_t *depth = malloc(sizeof(int64_t) * (size_t)(n + 1));
            st = tree_status(t->tokens + begin, t->parents + begin, n, t, V, depth);
            free(depth);
        }
        if (st == FS_ROW_OK)
            st = ref_temperature_status(p->temperature[r]);
        /* every row of the request must be usable, reached or not */
        for (int64_t j = 0; j <= n && st == FS_ROW_OK; ++j) {
            int64_t row = begin + r + j;
            st = ref_row_logp(logits + row * V, V, bias_row(p, row, V), allowed_row(p, row, V),
                              p->temperature[r], logp);
        }
        status[r] = st;
        if (st == FS_ROW_OK) {
            double m = INFINITY;
            num_emitted[r] = (int32_t)walk(logits, V, t->tokens + begin, t->parents + begin, n,
                                           begin + r, p, r, flags, o, pth, lp, &m, logp, lw,
                                           removed);
            if (margin)
                margin[r] = m;
        }
        if (path)
            memcpy(path + r * P, pth, sizeof(int32_t) * (size_t)P);
    }
    free(logp);
    free(lw);
    free(removed);
    free(pth);
}
