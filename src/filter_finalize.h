/* The filters' decisions over merged records: parameter checks, per-row
 * filter descriptors, the one-pass resolution of a row's kept set from its
 * candidates, and the kept record -- the record the row would have with
 * every token outside the kept set masked -- that the unchanged finalizers
 * (finalize.h) then read.  docs/DESIGN.md ("Sampling filters") has the algorithm and the
 * exactness argument.
 *
 * Shared by the CPU backend and (marked FS_HD for) the CUDA kernels. */
#ifndef FS_FILTER_FINALIZE_H
#define FS_FILTER_FINALIZE_H

#include <math.h>
#include <stdint.h>

#include "filter_record.h"
#include "flashspec.h"
#include "fs_hd.h"
#include "record.h"

/* A request's filter parameters as read: top-k, top-p, min-p (NULL arrays
 * read as off). */
typedef struct fs_filter_params {
    int32_t k;
    float p, m;
} fs_filter_params;

FS_HD fs_filter_params fs_filter_params_read(const int32_t *top_k, const float *top_p,
                                             const float *min_p, int64_t r)
{
    fs_filter_params q;
    q.k = top_k ? top_k[r] : 0;
    q.p = top_p ? top_p[r] : 1.0f;
    q.m = min_p ? min_p[r] : 0.0f;
    return q;
}

/* Row status of one request's filter parameters. */
FS_HD int32_t fs_filter_status_of(fs_filter_params q)
{
    const int bad = q.k < 0 || !(q.p > 0.0f && q.p <= 1.0f) || !(q.m >= 0.0f && q.m < 1.0f);
    return bad ? FS_ROW_BAD_FILTER : FS_ROW_OK;
}

FS_HD int32_t fs_filter_status(const int32_t *top_k, const float *top_p, const float *min_p,
                               int64_t r)
{
    return fs_filter_status_of(fs_filter_params_read(top_k, top_p, min_p, r));
}

/* What the scan and the finalizer need to know about a row's filters. */
typedef struct fs_filter_desc {
    int32_t top_k;   /* 0: off */
    float top_p;     /* 1: off */
    float log_min_p; /* -inf: off */
    uint32_t active; /* some filter is on and the row samples (not greedy) */
} fs_filter_desc;

/* Descriptor of a row whose request's parameters q passed
 * fs_filter_status_of; greedy rows never filter (the argmax survives every
 * filter). */
FS_HD fs_filter_desc fs_filter_desc_of(fs_filter_params q, int64_t global_vocab,
                                       const fs_row_desc *d)
{
    fs_filter_desc f;
    f.top_k = q.k > 0 && (int64_t)q.k < global_vocab ? q.k : 0;
    f.top_p = q.p < 1.0f ? q.p : 1.0f;
    f.log_min_p = q.m > 0.0f ? logf(q.m) : -INFINITY;
    f.active = (d->flags & FS_ROWF_VALID) && !(d->flags & FS_ROWF_GREEDY) &&
               (f.top_k > 0 || f.top_p < 1.0f || q.m > 0.0f);
    return f;
}

FS_HD fs_filter_desc fs_filter_desc_make(const int32_t *top_k, const float *top_p,
                                         const float *min_p, int64_t r, int64_t global_vocab,
                                         const fs_row_desc *d)
{
    return fs_filter_desc_of(fs_filter_params_read(top_k, top_p, min_p, r), global_vocab, d);
}

/* A resolved kept set: the finite scores s with s >= threshold and
 * s - max_s >= log_min_p (an upper set of scores). */
typedef struct fs_filter_cut {
    float threshold;
    float max_s;
    float log_min_p;
} fs_filter_cut;

FS_HD int fs_filter_keeps(const fs_filter_cut *c, float s)
{
    return s > -INFINITY && s < INFINITY && s >= c->threshold && s - c->max_s >= c->log_min_p;
}

enum fs_filter_path {
    FS_FILTER_ONE_PASS = 0,   /* resolved from the record: *cut is set */
    FS_FILTER_SECOND_PASS = 1 /* the kept set needs tokens outside the candidates */
};

/* The row's active top-k (0: off) for count finite allowed tokens. */
FS_HD int32_t fs_filter_top_k(const fs_filter_desc *fd, int32_t count)
{
    return fd->top_k > 0 && fd->top_k < count ? fd->top_k : 0;
}

/* The top-k set (k = fs_filter_top_k) as a prefix [0, nk) of the n sorted
 * candidate scores s -- ties at the k-th included -- or -1 when it may run
 * past them (the list is incomplete: count > n). */
FS_HD int fs_filter_top_k_prefix(int32_t k, int n, int32_t count, const float *s)
{
    const int complete = count <= n;
    if (k > 0 && k <= n) {
        int j = k;
        while (j < n && s[j] == s[k - 1])
            ++j;
        return j < n || complete ? j : -1;
    }
    return k > 0 || !complete ? -1 : n;
}

/* Resolve a row's kept set from its merged record r and its n best tokens
 * by (score desc, id asc), scores s[0 .. n-1], out of count finite allowed
 * tokens -- every other token scores at most s[n - 1].  Walks the tie groups
 * of the candidates from the top; each filter's test is monotone in the
 * score, so the first group a filter rejects ends the kept set for the
 * non-candidates too (they score at most the last candidate).  Returns
 * FS_FILTER_SECOND_PASS when a needed group may continue past the
 * candidates, or top-p's decision depends on the part of the top-k mass Z_k
 * that lies outside them.  w[i] = fs_exp(s[i] - r->max_s) for i < n
 * (fs_filter_weight): the walk's sums take them in candidate order, so the
 * weights may be computed in any order, or in parallel.  Any n: the records
 * hold FS_FILTER_CANDIDATES, the GPU's wide resolve up to 512
 * (kernels/filter_resolve.cuh). */
FS_HD int fs_filter_resolve_n(const fs_record *r, int n, int32_t count, const float *s,
                              const fs_filter_desc *fd, const float *w, fs_filter_cut *cut)
{
    const float m = r->max_s;
    const int32_t k = fs_filter_top_k(fd, count);
    /* the top-k set as a candidate prefix [0, nk), or -1 */
    const int nk = fs_filter_top_k_prefix(k, n, count, s);
    const int limit = nk >= 0 ? nk : n;
    int i = 0;
    if (fd->top_p >= 1.0f && !(fd->log_min_p > -INFINITY)) {
        /* top-k alone: no group can end the walk before limit, a group
           boundary (the thread walking a GPU row's 64 candidates one by one
           took ~5 us) */
        i = limit;
    } else {
        /* the top-k mass Z_k relative to m (top-p only): exact, or bounded by
           the candidates' mass and the row's when the set runs past them */
        float z_lo = r->sum_exp, z_hi = r->sum_exp;
        if (k > 0 && fd->top_p < 1.0f) {
            const int upto = nk >= 0 ? nk : n;
            float z = 0.0f;
            for (int t = 0; t < upto; ++t)
                z += w[t];
            z_lo = z;
            z_hi = nk >= 0 ? z : r->sum_exp;
        }
        float before = 0.0f; /* mass of the groups kept so far */
        while (i < limit) {
            const float v = s[i];
            if (!(v - m >= fd->log_min_p))
                break;
            if (fd->top_p < 1.0f) {
                if (before >= fd->top_p * z_hi)
                    break;
                if (before >= fd->top_p * z_lo)
                    return FS_FILTER_SECOND_PASS;
            }
            int j = i + 1;
            float g = w[i];
            while (j < n && s[j] == v) {
                g += w[j];
                ++j;
            }
            before += g;
            i = j;
        }
    }
    /* kept up to the end of an incomplete list: the last group, and the kept
       set, may continue past the candidates (when nk >= 0 the walk ends
       inside the list or the list is complete) */
    if (i == 0 || (i == limit && nk < 0))
        return FS_FILTER_SECOND_PASS;
    cut->threshold = s[i - 1];
    cut->max_s = m;
    cut->log_min_p = fd->log_min_p;
    return FS_FILTER_ONE_PASS;
}

/* fs_filter_resolve_n over a record's candidates f (at most `cap` of them;
 * `cap` is FS_FILTER_CANDIDATES outside tests). */
FS_HD int fs_filter_resolve_w(const fs_record *r, const fs_filter_record *f,
                              const fs_filter_desc *fd, const float *w, fs_filter_cut *cut)
{
    return fs_filter_resolve_n(r, f->n, f->count, f->s, fd, w, cut);
}

/* Candidate i's weight for fs_filter_resolve_w, exp(s_i - max_s): the one
 * spelling of it, for the CPU loop below and the GPU's warp (filter_resolve.cuh). */
FS_HD float fs_filter_weight(const fs_record *r, const fs_filter_record *f, int i)
{
    return fs_exp(f->s[i] - r->max_s);
}

/* The weights fs_filter_resolve_w takes, w[i] for i < f->n. */
FS_HD void fs_filter_weights(const fs_record *r, const fs_filter_record *f, float *w)
{
    for (int i = 0; i < f->n; ++i)
        w[i] = fs_filter_weight(r, f, i);
}

/* fs_filter_resolve_w with the weights computed here. */
FS_HD int fs_filter_resolve(const fs_record *r, const fs_filter_record *f,
                            const fs_filter_desc *fd, fs_filter_cut *cut)
{
    float w[FS_FILTER_CANDIDATES];
    fs_filter_weights(r, f, w);
    return fs_filter_resolve_w(r, f, fd, w, cut);
}

/* The kept candidates of a resolved row sorted by ascending id, into
 * ids / ss (FS_FILTER_CANDIDATES entries each); returns how many. */
FS_HD int fs_filter_kept_sorted(const fs_filter_record *f, const fs_filter_cut *c, int32_t *ids,
                                float *ss)
{
    int m = 0;
    for (int i = 0; i < f->n; ++i) {
        if (!fs_filter_keeps(c, f->s[i]))
            continue;
        int j = m++;
        while (j > 0 && ids[j - 1] > f->id[i]) {
            ids[j] = ids[j - 1];
            ss[j] = ss[j - 1];
            --j;
        }
        ids[j] = f->id[i];
        ss[j] = f->s[i];
    }
    return m;
}

/* The next noise block of sorted kept candidates from *at: its scores in
 * v[FS_NOISE_BLOCK] (-inf where no kept candidate is), *at moved past it;
 * returns the block's first id.  Call while *at < m. */
FS_HD int32_t fs_filter_kept_block(const int32_t *ids, const float *ss, int m, int *at, float *v)
{
    int i = *at;
    const int32_t block = ids[i] / FS_NOISE_BLOCK;
    for (int t = 0; t < FS_NOISE_BLOCK; ++t)
        v[t] = -INFINITY;
    while (i < m && ids[i] / FS_NOISE_BLOCK == block) {
        v[ids[i] % FS_NOISE_BLOCK] = ss[i];
        ++i;
    }
    *at = i;
    return block * FS_NOISE_BLOCK;
}

/* The kept record of a resolved row: its kept candidates pushed block by
 * block, in ascending id order, through fs_record_push_block with every other
 * token of the block at -inf -- exactly what a scan of the row under the mask
 * "allowed and kept" computes, with the same noise (for a verify row the
 * excluded draft still counts in the log-sum-exp only).  Tree rows build
 * theirs from the same blocks through fs_tree_record_push_block
 * (tree_filter.h). */
FS_HD void fs_filter_kept_record(const fs_filter_record *f, const fs_filter_cut *c,
                                 const fs_row_desc *d, fs_record *out)
{
    int32_t ids[FS_FILTER_CANDIDATES];
    float ss[FS_FILTER_CANDIDATES];
    const int m = fs_filter_kept_sorted(f, c, ids, ss);
    fs_record_init(out);
    int i = 0;
    while (i < m) {
        float v[FS_NOISE_BLOCK];
        const int32_t id0 = fs_filter_kept_block(ids, ss, m, &i, v);
        fs_record_push_block(out, d, id0, FS_NOISE_BLOCK, v);
    }
}

#endif
