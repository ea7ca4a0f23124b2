/* The vocabulary-scan engine's summary record and its two operations:
 * push one token's score into a record, and merge two records.
 *
 * Every op (sample, draft argmax, verify) is the same scan: for each
 * (row, vocabulary tile) a record is built by pushing the tile's tokens, the
 * records of a row are merged, and a per-op finalizer reads the merged record.
 * Merge is associative and commutative on everything that picks a token (ties
 * are broken towards the lower token id, never by arrival order), so tile
 * size, tile order and the number of GPUs never change which token wins.
 * Only sum_exp carries order-dependent float rounding.
 *
 * Shared verbatim by the CPU backend and the CUDA kernels. */
#ifndef FS_RECORD_H
#define FS_RECORD_H

#include <math.h>
#include <stdint.h>

#include "fs_hd.h"
#include "philox.h"

enum fs_record_flags {
    FS_REC_NONFINITE = 1u /* an allowed token scored NaN or +inf */
};

typedef struct fs_record {
    float max_s;     /* max score over allowed tokens (-inf if none) */
    int32_t max_id;  /* its token id, lowest on ties; -1 if none */
    float sum_exp;   /* sum over allowed tokens of exp(s - max_s) */
    float best_key;  /* max of s + Gumbel over allowed, non-excluded tokens */
    int32_t best_id; /* its token id, lowest on ties; -1 if none */
    float best_s;    /* score of best_id */
    float sel_s;     /* score of the row's selected token if seen and allowed, else -inf */
    uint32_t flags;
} fs_record;

enum fs_row_flags {
    FS_ROWF_VALID = 1u,  /* the row is to be scanned; others are skipped */
    FS_ROWF_GREEDY = 2u  /* temperature 0: no noise, the finalizer uses the argmax */
};

/* What a scan needs to know about one row, resolved from the per-request
 * parameters before the scan (so the hot loop does no indirection). */
typedef struct fs_row_desc {
    float inv_temp;   /* 1/T; 1 for greedy rows */
    uint32_t flags;
    uint64_t seed;
    uint64_t offset;
    uint32_t position; /* position within the request (verify: draft index) */
    int32_t excluded;  /* global token id left out of the Gumbel candidate, -1 none */
    int32_t selected;  /* global token id whose score is kept in sel_s, -1 none */
    int32_t request;   /* request the row belongs to */
} fs_row_desc;

FS_HD void fs_record_init(fs_record *r)
{
    r->max_s = -INFINITY;
    r->max_id = -1;
    r->sum_exp = 0.0f;
    r->best_key = -INFINITY;
    r->best_id = -1;
    r->best_s = -INFINITY;
    r->sel_s = -INFINITY;
    r->flags = 0;
}

/* (a, ia) beats (b, ib): larger value, then lower id.  Ids of -1 never win. */
FS_HD int fs_beats(float a, int32_t ia, float b, int32_t ib)
{
    if (ia < 0)
        return 0;
    if (ib < 0)
        return 1;
    return a > b || (a == b && ia < ib);
}

/* Transformed score of an allowed token: (logit + bias) / T, computed as a
 * product with the precomputed 1/T so every backend rounds identically. */
FS_HD float fs_score(float logit, float bias, float inv_temp)
{
    return (logit + bias) * inv_temp;
}

/* Push one allowed token with score s and Gumbel noise g (ignored for greedy
 * rows and for the excluded token).  A disallowed token is simply not pushed;
 * s = -inf means probability zero and is skipped. */
FS_HD void fs_record_push(fs_record *r, const fs_row_desc *d, int32_t id, float s, float g)
{
    if (!(s > -INFINITY && s < INFINITY)) {
        if (s != -INFINITY)
            r->flags |= FS_REC_NONFINITE;
        return;
    }
    if (fs_beats(s, id, r->max_s, r->max_id)) {
        r->sum_exp = r->sum_exp * expf(r->max_s - s) + 1.0f;
        r->max_s = s;
        r->max_id = id;
    } else {
        r->sum_exp += expf(s - r->max_s);
    }
    if (id == d->selected)
        r->sel_s = s;
    if (!(d->flags & FS_ROWF_GREEDY) && id != d->excluded) {
        float key = s + g;
        if (fs_beats(key, id, r->best_key, r->best_id)) {
            r->best_key = key;
            r->best_id = id;
            r->best_s = s;
        }
    }
}

FS_HD void fs_record_merge(fs_record *a, const fs_record *b)
{
    if (b->max_id >= 0) {
        if (a->max_id < 0) {
            a->max_s = b->max_s;
            a->max_id = b->max_id;
            a->sum_exp = b->sum_exp;
        } else if (fs_beats(b->max_s, b->max_id, a->max_s, a->max_id)) {
            a->sum_exp = a->sum_exp * expf(a->max_s - b->max_s) + b->sum_exp;
            a->max_s = b->max_s;
            a->max_id = b->max_id;
        } else {
            a->sum_exp += b->sum_exp * expf(b->max_s - a->max_s);
        }
    }
    if (fs_beats(b->best_key, b->best_id, a->best_key, a->best_id)) {
        a->best_key = b->best_key;
        a->best_id = b->best_id;
        a->best_s = b->best_s;
    }
    if (b->sel_s > a->sel_s)
        a->sel_s = b->sel_s;
    a->flags |= b->flags;
}

/* log of the row's partition function. */
FS_HD float fs_record_lse(const fs_record *r)
{
    return r->max_s + logf(r->sum_exp);
}

#endif
