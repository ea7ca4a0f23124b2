/* Tree verify: the per-request checks and row descriptors that precede the
 * scan, and the finalizer that walks a request's tree over its merged
 * records.  Shared host/device code (FS_HD) like finalize.h, so the CPU
 * backend and a CUDA port make the same decisions from the same records. */
#ifndef FS_TREE_FINALIZE_H
#define FS_TREE_FINALIZE_H

#include <math.h>
#include <stdint.h>

#include "finalize.h"
#include "flashspec.h"
#include "fs_hd.h"
#include "tree_record.h"

/* Row descriptors of one request of a well-formed layout (rows[0] the root,
 * rows[1 + i] node i) and its status: a parent index outside [-1, i), more
 * than max_children children under one node or a node deeper than max_depth
 * is FS_ROW_BAD_TREE; then a token outside the vocabulary FS_ROW_BAD_DRAFT;
 * then the temperature's status.  One pass in node order: a parent's
 * descriptor is complete (its depth known) before its first child is seen,
 * because parents come first.  A failing request's rows are all skipped. */
FS_HD int32_t fs_tree_request_rows(const int32_t *tokens, const int32_t *parents, int64_t n,
                                   int64_t max_depth, int64_t max_children, int64_t global_vocab,
                                   float temperature, uint64_t seed, uint64_t offset,
                                   int32_t request, fs_tree_row *rows)
{
    int32_t st = FS_ROW_OK;
    for (int64_t j = 0; j <= n; ++j) {
        rows[j].base = fs_row_desc_make(temperature, seed, offset, 0, -1, -1, request);
        rows[j].num_children = 0;
        rows[j].excluded_mask = 0;
    }
    for (int64_t i = 0; i < n && st == FS_ROW_OK; ++i) {
        int64_t p = parents[i];
        if (p < -1 || p >= i) {
            st = FS_ROW_BAD_TREE;
            break;
        }
        fs_tree_row *up = &rows[p + 1];
        int64_t depth = (int64_t)up->base.position + 1;
        if (up->num_children >= max_children || depth > max_depth) {
            st = FS_ROW_BAD_TREE;
            break;
        }
        up->excluded_mask |= 1u << up->num_children;
        up->child_nodes[up->num_children] = (int32_t)i;
        up->children[up->num_children++] = tokens[i];
        rows[i + 1].base.position = (uint32_t)depth;
    }
    for (int64_t i = 0; i < n && st == FS_ROW_OK; ++i)
        if (tokens[i] < 0 || (int64_t)tokens[i] >= global_vocab)
            st = FS_ROW_BAD_DRAFT;
    if (st == FS_ROW_OK)
        st = fs_temperature_status(temperature);
    if (st != FS_ROW_OK)
        for (int64_t j = 0; j <= n; ++j) {
            rows[j].base = fs_row_desc_skip();
            rows[j].num_children = 0;
            rows[j].excluded_mask = 0;
        }
    return st;
}

/* Child k repeats the token of an earlier sibling. */
FS_HD int fs_tree_repeated_child(const fs_tree_row *d, int k)
{
    for (int j = 0; j < k; ++j)
        if (d->children[j] == d->children[k])
            return 1;
    return 0;
}

/* The child accepted at a row, as its index k in d->children, or -1 when
 * every child is rejected (or there are none).
 *
 * T > 0: child k is accepted iff u_k * rest <= p(c_k), u_k its own uniform
 * and rest = 1 - (the target mass of the distinct children tried before), so
 * with probability p(c_k) / rest: the target with the rejected children
 * removed, renormalised.  The first child compares u_0 <= p(c_0) exactly as
 * fs_finalize_verify does.  A repeated token or a zero-probability child is
 * rejected without a test (its renormalised probability is 0).
 * T = 0: the first child whose token is the argmax.
 *
 * p is exp(score - lse) for the record's scores; a top-k / top-p / min-p
 * filter plugs in by giving the filtered-out tokens -inf scores in the scan
 * (so they leave lse, the children's scores and the candidate alike). */
FS_HD int fs_tree_accept(const fs_tree_record *r, const fs_tree_row *d)
{
    if (d->base.flags & FS_ROWF_GREEDY) {
        for (int k = 0; k < d->num_children; ++k)
            if (d->children[k] == r->base.max_id)
                return k;
        return -1;
    }
    const float lse = fs_record_lse(&r->base);
    float rest = 1.0f;
    int last = -1;
    for (int k = 0; k < d->num_children; ++k) {
        if (fs_tree_repeated_child(d, k))
            continue;
        float p = expf(r->child_s[k] - lse);
        if (!(p > 0.0f))
            continue;
        float u = fs_tree_accept_uniform(d->base.seed, d->base.offset, d->base.position,
                                         (uint32_t)k);
        if (u * rest <= p)
            return k;
        last = k;
        rest -= p;
    }
    /* no eligible token outside the children (no candidate): they hold all
       the mass, and the last one of positive probability had rest = p, an
       acceptance probability of 1 that rounding may have missed */
    return r->base.best_id < 0 ? last : -1;
}

/* The status of a request whose rows were scanned (status FS_ROW_OK on
 * entry): that of its first row, in row order, whose record is not
 * FS_ROW_OK.  Every row counts, reached by the walk or not, so the status
 * never depends on where the random walk stops. */
FS_HD int32_t fs_tree_records_status(const fs_tree_record *recs, int64_t n, int32_t status)
{
    for (int64_t j = 0; status == FS_ROW_OK && j <= n; ++j)
        status = fs_record_status(&recs[j].base);
    return status;
}

/* The walk of one request (rows[0] the root, rows[1 + i] node i) over its
 * merged records from the root, given its status (fs_tree_records_status;
 * anything but FS_ROW_OK emits nothing): out_tokens and out_logprobs
 * (optional) `stride` = max_depth + 1 wide, out_path (optional) stride - 1
 * wide, and the count. */
FS_HD void fs_tree_walk(const fs_tree_record *recs, const fs_tree_row *rows, int64_t stride,
                        int32_t status, int32_t *out_tokens, int32_t *out_path,
                        float *out_logprobs, int32_t *num_emitted)
{
    int64_t k = 0;
    if (status == FS_ROW_OK) {
        int64_t node = -1;
        for (;;) {
            const fs_tree_record *r = &recs[node + 1];
            const fs_tree_row *d = &rows[node + 1];
            const float lse = fs_record_lse(&r->base);
            const int greedy = (d->base.flags & FS_ROWF_GREEDY) != 0;
            /* depth <= max_depth keeps k + 1 < stride after an acceptance */
            int c = k + 1 < stride ? fs_tree_accept(r, d) : -1;
            if (c >= 0) {
                int64_t child = d->child_nodes[c];
                out_tokens[k] = d->children[c];
                if (out_logprobs)
                    out_logprobs[k] = r->child_s[c] - lse;
                if (out_path)
                    out_path[k] = (int32_t)child;
                ++k;
                node = child;
                continue;
            }
            /* recovery (the target without the children) or bonus token */
            out_tokens[k] = greedy ? r->base.max_id : r->base.best_id;
            if (out_logprobs)
                out_logprobs[k] = (greedy ? r->base.max_s : r->base.best_s) - lse;
            ++k;
            break;
        }
    }
    for (int64_t i = k; i < stride; ++i) {
        out_tokens[i] = -1;
        if (out_logprobs)
            out_logprobs[i] = NAN;
    }
    for (int64_t i = k > 0 ? k - 1 : 0; out_path && i < stride - 1; ++i)
        out_path[i] = -1;
    *num_emitted = (int32_t)k;
}

/* Tree verify: status and walk of one request (n nodes) whose pre-scan
 * status is *status on entry (FS_ROW_OK if its rows were scanned); *status
 * is the request's status on return. */
FS_HD void fs_finalize_verify_tree(const fs_tree_record *recs, const fs_tree_row *rows, int64_t n,
                                   int64_t stride, int32_t *out_tokens, int32_t *out_path,
                                   float *out_logprobs, int32_t *num_emitted, int32_t *status)
{
    const int32_t st = fs_tree_records_status(recs, n, *status);
    fs_tree_walk(recs, rows, stride, st, out_tokens, out_path, out_logprobs, num_emitted);
    *status = st;
}

#endif
