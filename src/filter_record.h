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

/* ---- tensor parallelism: a shard's candidates and their merge ----------- */

/* What a vocabulary shard exports of a filtered row: its best n (<= the
 * cap) finite tokens by (score desc, id asc), its count of finite allowed
 * tokens, and a bound lo: every finite token of the shard that is not among
 * the n scores <= lo (-inf when the n are all of them).  The CPU backend's
 * shard record is the shard's exact top n (lo = its last score when count >
 * n); the CUDA scan's is the top of the exact prefix its candidate lists
 * hold, which can be shorter than the cap (lo = the lists' largest dropped
 * score D, or the last score when the prefix was longer than the cap). */
typedef struct fs_filter_summary {
    int32_t count;
    int32_t n;
    float lo;
    int32_t reserved; /* 0; keeps s at a 16-byte offset */
    float s[FS_FILTER_CANDIDATES];
    int32_t id[FS_FILTER_CANDIDATES];
} fs_filter_summary;

/* The summary of an exact top-n record (the CPU's per-shard record). */
FS_HD void fs_filter_summary_of(const fs_filter_record *f, fs_filter_summary *out)
{
    out->count = f->count;
    out->n = f->n;
    out->lo = f->n > 0 && f->count > f->n ? f->s[f->n - 1] : -INFINITY;
    out->reserved = 0;
    for (int i = 0; i < f->n; ++i) {
        out->s[i] = f->s[i];
        out->id[i] = f->id[i];
    }
}

/* How many of a summary's entries beat (v, id) in the order (score desc, id
 * asc): they are its first ones (the entries are sorted), found by
 * bisection. */
FS_HD int fs_filter_summary_above(const fs_filter_summary *m, float v, int32_t id)
{
    int lo = 0, hi = m->n;
    while (lo < hi) {
        const int mid = (lo + hi) / 2;
        if (fs_beats(m->s[mid], m->id[mid], v, id))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* L: the largest lo of the ranks' summaries of a row (summary k at
 * sums[k * stride]).  Every token that no summary holds scores <= L. */
FS_HD float fs_filter_summary_floor(const fs_filter_summary *sums, int64_t stride, int ranks)
{
    float L = -INFINITY;
    for (int k = 0; k < ranks; ++k)
        L = sums[k * stride].lo > L ? sums[k * stride].lo : L;
    return L;
}

/* The merge keeps the union's entries scoring >= L -- below L a shard may
 * hold tokens it did not export, so an entry there could be ranked above
 * tokens nobody sees -- and of those the best `cap`.  Then every token
 * outside the merged candidates scores <= their last one, the invariant
 * fs_filter_resolve relies on (ties at L are its "last group may continue"
 * case).  Entry i of rank k, when kept, has rank i + (entries of the other
 * ranks that beat it) among the kept ones (all of which score >= its score
 * >= L); -1 when it scores below L.  Every rank computes the same. */
FS_HD int fs_filter_summary_rank(const fs_filter_summary *sums, int64_t stride, int ranks, int k,
                                 int i, float L)
{
    const fs_filter_summary *m = &sums[k * stride];
    const float v = m->s[i];
    if (!(v >= L))
        return -1;
    int rank = i;
    for (int o = 0; o < ranks; ++o)
        if (o != k)
            rank += fs_filter_summary_above(&sums[o * stride], v, m->id[i]);
    return rank;
}

/* Entries of the union that the merge keeps before the cap (score >= L). */
FS_HD int fs_filter_summary_kept(const fs_filter_summary *sums, int64_t stride, int ranks, float L)
{
    int n = 0;
    for (int k = 0; k < ranks; ++k)
        n += fs_filter_summary_above(&sums[k * stride], L, INT32_MAX);
    return n;
}

/* The row's fs_filter_record from the ranks' summaries (token sets
 * disjoint): count = the sum of the counts, the candidates = the best `cap`
 * of the union's entries scoring >= L, in order.  The GPU runs the same
 * rule with a thread per entry. */
FS_HD void fs_filter_summary_merge(const fs_filter_summary *sums, int64_t stride, int ranks,
                                   int cap, fs_filter_record *out)
{
    const float L = fs_filter_summary_floor(sums, stride, ranks);
    const int kept = fs_filter_summary_kept(sums, stride, ranks, L);
    out->count = 0;
    out->n = kept < cap ? kept : cap;
    for (int k = 0; k < ranks; ++k) {
        const fs_filter_summary *m = &sums[k * stride];
        out->count += m->count;
        for (int i = 0; i < m->n; ++i) {
            const int r = fs_filter_summary_rank(sums, stride, ranks, k, i, L);
            if (r >= 0 && r < cap) {
                out->s[r] = m->s[i];
                out->id[r] = m->id[i];
            }
        }
    }
}

#endif
