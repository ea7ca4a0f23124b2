/* Radix select over scores, for the second pass of the filters: the largest
 * score value t such that the tokens scoring >= t reach a count (top-k) or a
 * mass (top-p), found without materialising the row.
 *
 * A finite score maps to an order-preserving 32-bit key.  Three levels fix
 * its bits 31..21, 20..10 and 9..0: at each level the backend histograms
 * (count, mass) of the tokens whose key matches the prefix fixed so far, and
 * fs_select_step walks the buckets from the top, adding them to what lies
 * above the prefix, and descends into the first bucket where the predicate
 * holds.  After the last level the key -- hence t -- is exact, so ties at t
 * are resolved by value (all kept), with no id refinement.  Histograms of
 * vocabulary shards add up (counts exactly), so the select is the same over
 * any split of the vocabulary.
 *
 * Shared by the CPU backend and (marked FS_HD for) the CUDA kernels. */
#ifndef FS_FILTER_SELECT_H
#define FS_FILTER_SELECT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "fs_hd.h"

#define FS_SELECT_LEVELS 3
#define FS_SELECT_BUCKETS 2048 /* 2^11: the widest level */

FS_HD int fs_select_shift(int level)
{
    return level == 0 ? 21 : level == 1 ? 10 : 0;
}

FS_HD uint32_t fs_select_digits(int level)
{
    return level < 2 ? 2048u : 1024u;
}

/* Order-preserving key of a finite score (-0 and +0 share one key, as they
 * compare equal). */
FS_HD uint32_t fs_select_key(float s)
{
    if (s == 0.0f)
        s = 0.0f;
    uint32_t u;
    memcpy(&u, &s, sizeof u);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

FS_HD float fs_select_score(uint32_t key)
{
    uint32_t u = (key & 0x80000000u) ? (key & 0x7FFFFFFFu) : ~key;
    float s;
    memcpy(&s, &u, sizeof s);
    return s;
}

typedef struct fs_select {
    int level;           /* the level to histogram next; FS_SELECT_LEVELS when done */
    uint32_t prefix;     /* key bits fixed by the levels before */
    int32_t need_count;  /* > 0: predicate count{s >= t} >= need_count */
    float need_mass;     /* need_count == 0: predicate mass{s >= t} >= need_mass */
    int32_t above_count; /* tokens whose key lies above the prefix's range */
    float above_mass;
    float threshold;     /* the answer when done (-inf if there was no token) */
    float mass;          /* when done: mass of the tokens >= threshold */
} fs_select;

FS_HD void fs_select_init(fs_select *q, int32_t need_count, float need_mass)
{
    q->level = 0;
    q->prefix = 0;
    q->need_count = need_count;
    q->need_mass = need_mass;
    q->above_count = 0;
    q->above_mass = 0.0f;
    q->threshold = -INFINITY;
    q->mass = 0.0f;
}

FS_HD int fs_select_done(const fs_select *q)
{
    return q->level >= FS_SELECT_LEVELS;
}

/* The bucket of a token's key at the current level, or -1 when the key's
 * higher bits differ from the prefix (the token lies above or below). */
FS_HD int fs_select_bucket(const fs_select *q, uint32_t key)
{
    const int sh = fs_select_shift(q->level);
    if (q->level > 0) {
        const int hi = fs_select_shift(q->level - 1);
        if ((key >> hi) != (q->prefix >> hi))
            return -1;
    }
    return (int)((key >> sh) & (fs_select_digits(q->level) - 1u));
}

/* Consume the current level's histogram (count[b], mass[b] for the buckets
 * b of fs_select_bucket) and fix its digit.  When rounding leaves the
 * predicate unmet even with every bucket (a mass target equal to the total),
 * the lowest bucket present is taken: everything stays. */
FS_HD void fs_select_step(fs_select *q, const int32_t *count, const float *mass)
{
    const int nb = (int)fs_select_digits(q->level);
    int32_t c = 0, c_before = 0;
    float w = 0.0f, w_before = 0.0f;
    int pick = -1;
    for (int b = nb - 1; b >= 0; --b) {
        if (count[b] == 0)
            continue;
        c_before = c;
        w_before = w;
        c += count[b];
        w += mass[b];
        pick = b;
        int ok = q->need_count > 0 ? q->above_count + c >= q->need_count
                                   : q->above_mass + w >= q->need_mass;
        if (ok)
            break;
    }
    if (pick < 0) { /* no token at all */
        q->level = FS_SELECT_LEVELS;
        q->threshold = -INFINITY;
        q->mass = q->above_mass;
        return;
    }
    q->above_count += c_before;
    q->above_mass += w_before;
    q->prefix |= (uint32_t)pick << fs_select_shift(q->level);
    if (++q->level == FS_SELECT_LEVELS) {
        q->threshold = fs_select_score(q->prefix);
        q->mass = q->above_mass + mass[pick];
    }
}

#endif
