/* The candidate record of the top-k / top-p / min-p filters: what a scan keeps
 * per (row, tile) beside its fs_record when the row filters.
 *
 * It holds the row's top FS_FILTER_CANDIDATES tokens by (score desc, id
 * asc) and the number of finite allowed tokens seen.  That order is total, so
 * merge (the top of the union) is associative and commutative: tile size,
 * tile order and vocabulary shards never change which candidates a row ends
 * with.  Every filter keeps an upper set of scores, so a row whose kept set
 * lies inside its candidates is resolved from this record alone
 * (filter_finalize.h); docs/DESIGN.md ("Sampling filters") has the argument.
 *
 * Shared by the CPU backend and (marked FS_HD for) the CUDA kernels. */
#ifndef FS_FILTER_RECORD_H
#define FS_FILTER_RECORD_H

#include <math.h>
#include <stdint.h>

#include "fs_hd.h"
#include "record.h"

/* 64 covers the top_k values that generation configs ship (Gemma's 64
 * included) and a nucleus or min-p band of up to 64 tokens. */
#define FS_FILTER_CANDIDATES 64

typedef struct fs_filter_record {
    int32_t count; /* finite allowed tokens pushed, candidates or not */
    int32_t n;     /* candidates held, <= the cap */
    float s[FS_FILTER_CANDIDATES];  /* their scores, sorted by (score desc, id asc) */
    int32_t id[FS_FILTER_CANDIDATES];
} fs_filter_record;

FS_HD void fs_filter_record_init(fs_filter_record *f)
{
    f->count = 0;
    f->n = 0;
}

/* Insert a finite-scored token if it is among the top `cap` seen so far. */
FS_HD void fs_filter_insert(fs_filter_record *f, int32_t id, float s, int cap)
{
    int n = f->n;
    if (n == cap) {
        if (!fs_beats(s, id, f->s[n - 1], f->id[n - 1]))
            return;
        --n; /* the last one drops out */
    }
    int i = n;
    while (i > 0 && fs_beats(s, id, f->s[i - 1], f->id[i - 1])) {
        f->s[i] = f->s[i - 1];
        f->id[i] = f->id[i - 1];
        --i;
    }
    f->s[i] = s;
    f->id[i] = id;
    f->n = n + 1;
}

/* Push one token's score (-inf for a disallowed token; NaN and +inf are the
 * fs_record's business: they fail the row, so they are simply not kept). */
FS_HD void fs_filter_push(fs_filter_record *f, int32_t id, float s, int cap)
{
    if (!(s > -INFINITY && s < INFINITY))
        return;
    f->count++;
    fs_filter_insert(f, id, s, cap);
}

/* Push the n scores of ids id0 .. id0 + n - 1 (a noise block as the scan
 * holds it). */
FS_HD void fs_filter_push_block(fs_filter_record *f, int32_t id0, int n, const float *s, int cap)
{
    for (int i = 0; i < n; ++i)
        fs_filter_push(f, id0 + i, s[i], cap);
}

/* a = the top `cap` of a's and b's candidates (token sets disjoint), merged
 * in place from the back: first count how many each list contributes, then
 * fill the slots from the last, always with the lower of the two tails, so
 * no unread entry of a is overwritten. */
FS_HD void fs_filter_merge(fs_filter_record *a, const fs_filter_record *b, int cap)
{
    a->count += b->count;
    int i = 0, j = 0;
    while (i + j < cap && (i < a->n || j < b->n)) {
        if (j >= b->n || (i < a->n && fs_beats(a->s[i], a->id[i], b->s[j], b->id[j])))
            ++i;
        else
            ++j;
    }
    const int total = i + j;
    int w = total;
    while (j > 0) {
        --w;
        if (i > 0 && fs_beats(b->s[j - 1], b->id[j - 1], a->s[i - 1], a->id[i - 1])) {
            a->s[w] = a->s[i - 1];
            a->id[w] = a->id[i - 1];
            --i;
        } else {
            a->s[w] = b->s[j - 1];
            a->id[w] = b->id[j - 1];
            --j;
        }
    }
    a->n = total;
}

#endif
