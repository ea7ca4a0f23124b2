/* A candidate list: the GPU scans' share of the filters' one pass, carried by
 * every epilogue thread beside its fs_record for rows with top-k / top-p /
 * min-p (FS_ROWF_FILTER).  Plain C (FS_HD) so that the CPU tests check the
 * exact code the kernels run (tests/test_cand_list.c); the warp shuffles are
 * in kernels/filter_cands.cuh.
 *
 * A list keeps the thread's best FS_CAND_LIST tokens by (score desc, id asc)
 * and `drop`, the largest score it ever let go (or never took).  Invariant:
 * every finite allowed token the thread saw with a score above drop is in the
 * list.  Merging two lists keeps the best of the union and the larger drop,
 * so the invariant survives any merge order, and over all the lists of a row
 * the tokens scoring above D = max(drop) are exactly the row's tokens above
 * D -- an exact prefix of the row's sorted scores, whatever the tiling.  The
 * resolve (kernels/filter_resolve.cuh) turns that prefix into the row's
 * fs_filter_record (filter_record.h) and the shared decision code takes over.
 *
 * Four entries per thread: the lists live in registers through the mainloop
 * (everything below is unrolled), and with ~1000 lists per row (the Hopper
 * tile kernel: 132 CTAs x up to 8 threads per row) the prefix above D holds a
 * few hundred tokens of an LM-shaped row -- far more than the 64 candidates
 * the decision needs.  An empty entry is (-inf, id -1); entries with an id
 * hold a score above -inf. */
#ifndef FS_CAND_LIST_H
#define FS_CAND_LIST_H

#include <math.h>
#include <stdint.h>

#include "fs_hd.h"
#include "record.h"

#define FS_CAND_LIST 4

typedef struct fs_cand_list {
    float s[FS_CAND_LIST];
    int32_t id[FS_CAND_LIST];
    float drop;    /* largest score let go; -inf when none */
    int32_t count; /* finite allowed tokens seen */
} fs_cand_list;

/* fs_cand_place below is written out for four entries (C and C++ alike). */
typedef char fs_cand_list_holds_four[FS_CAND_LIST == 4 ? 1 : -1];

FS_HD void fs_cand_init(fs_cand_list *c)
{
    for (int i = 0; i < FS_CAND_LIST; ++i) {
        c->s[i] = -INFINITY;
        c->id[i] = -1;
    }
    c->drop = -INFINITY;
    c->count = 0;
}

/* (x, id) ranks before entry k.  x > -inf: an empty entry (-inf) ranks
 * after it by score alone, so its id -1 is never compared.  Bitwise, not
 * short-circuit: the compiler would branch on each term. */
FS_HD int fs_cand_before(const fs_cand_list *c, int k, float x, int32_t id)
{
    return (x > c->s[k]) | ((x == c->s[k]) & (id < c->id[k]));
}

/* Put (x, id), which ranks before the last entry (x > -inf), in its place;
 * the last entry goes to drop (-inf when empty: drop unchanged).  The three
 * comparisons are independent and the moves are selects, so the insert is a
 * few dependent steps, not a chain of conditional swaps. */
FS_HD void fs_cand_place(fs_cand_list *c, float x, int32_t id)
{
    const int b0 = fs_cand_before(c, 0, x, id);
    const int b1 = fs_cand_before(c, 1, x, id); /* b0 implies b1 implies b2 */
    const int b2 = fs_cand_before(c, 2, x, id);
    c->drop = fmaxf(c->drop, c->s[3]);
    c->s[3] = b2 ? c->s[2] : x;
    c->id[3] = b2 ? c->id[2] : id;
    c->s[2] = b1 ? c->s[1] : b2 ? x : c->s[2];
    c->id[2] = b1 ? c->id[1] : b2 ? id : c->id[2];
    c->s[1] = b0 ? c->s[0] : b1 ? x : c->s[1];
    c->id[1] = b0 ? c->id[0] : b1 ? id : c->id[1];
    c->s[0] = b0 ? x : c->s[0];
    c->id[0] = b0 ? id : c->id[0];
}

/* Offer one token with score x > -inf (its count is the caller's business). */
FS_HD void fs_cand_insert(fs_cand_list *c, float x, int32_t id)
{
    if (fs_cand_before(c, FS_CAND_LIST - 1, x, id))
        fs_cand_place(c, x, id);
    else
        c->drop = fmaxf(c->drop, x);
}

/* Push the scores of ids id0 .. id0 + 15 (-inf: disallowed or past the
 * vocabulary).  NaN and +inf fail the row through its fs_record, whose status
 * every resolve checks first, so the list does not sort them out: NaN is not
 * counted, and what a block holding one keeps is not read.
 *
 * The block's tokens enter best first, (score desc, id asc), while they rank
 * before the list's last entry, and the best of the rest only raises drop:
 * the list and drop end as if every token had been offered (the tokens not
 * offered rank below one that was let go).  A block that does not enter the
 * list costs its max and one comparison; one that does costs an insert per
 * token that enters -- usually one -- not an unrolled insert of all 16.  The
 * epilogue threads of a warp carry different rows, so a warp runs the insert
 * path whenever any of its lanes does, as often as its busiest lane: offering
 * all 16 tokens there made the lists cost the Hopper tile kernel 7% at 64 rows
 * (ncu, 151936 x 4096: 446 vs 418 us without lists; 431 us offering them best
 * first).  So the insert path works on the block as 8 pairs: each pair's
 * larger and smaller score and which of the two is the larger (a bit), so
 * that taking a token out only moves its pair's smaller score up -- a step
 * over 8 pairs, not a search, a knock-out and a max over 16 scores (the tile
 * kernel's insert loop 161 -> 93 instructions; H100, 151936 x 4096:
 * filtered verify of 320 rows, two 160-row chunks whose threads push 8
 * blocks a tile, 1.113 -> 1.087 ms; 1-80 rows, 2-4 blocks a thread and
 * tile, unchanged).  At most FS_CAND_LIST of a block's tokens can enter:
 * after that many, the list's last is the block's FS_CAND_LIST-th best,
 * which the next one does not precede. */
FS_HD void fs_cand_push_block(fs_cand_list *c, int32_t id0, const float *s)
{
    enum { P = FS_NOISE_BLOCK / 2 };
    int fin[P];
    for (int j = 0; j < P; ++j)
        fin[j] = (s[2 * j] > -INFINITY ? 1 : 0) + (s[2 * j + 1] > -INFINITY ? 1 : 0);
    for (int w = P / 2; w > 0; w >>= 1)
        for (int j = 0; j < w; ++j)
            fin[j] += fin[j + w];
    c->count += fin[0];
    float m = fs_block_max(s);
    if (!(m > -INFINITY && m >= c->s[FS_CAND_LIST - 1])) {
        c->drop = fmaxf(c->drop, m); /* fmaxf(drop, -inf) = drop */
        return;
    }
    float hi[P], lo[P];
    uint32_t right = 0; /* bit j: pair j's larger score is its second token */
    for (int j = 0; j < P; ++j) {
        const int r = s[2 * j + 1] > s[2 * j]; /* a tie: the lower id first */
        hi[j] = r ? s[2 * j + 1] : s[2 * j];
        lo[j] = r ? s[2 * j] : s[2 * j + 1];
        right |= (uint32_t)r << j;
    }
    FS_ROLLED
    for (int k = 0; k < FS_CAND_LIST && m > -INFINITY && m >= c->s[FS_CAND_LIST - 1]; ++k) {
        /* the first pair whose larger score is m holds the lowest id scoring m */
        int at[P / 2];
        for (int j = 0; j < P / 2; ++j)
            at[j] = hi[2 * j] == m ? 2 * j : hi[2 * j + 1] == m ? 2 * j + 1 : P;
        for (int w = P / 4; w > 0; w >>= 1)
            for (int j = 0; j < w; ++j)
                at[j] = at[j] < at[j + w] ? at[j] : at[j + w];
        const int p = at[0];
        if (p >= P)
            break; /* m from a pair holding NaN: a failed row */
        const int32_t id = id0 + 2 * p + (int)((right >> p) & 1u);
        if (!fs_cand_before(c, FS_CAND_LIST - 1, m, id))
            break; /* a tie with the last entry, on a larger id */
        fs_cand_place(c, m, id);
        for (int j = 0; j < P; ++j) {
            hi[j] = j == p ? lo[j] : hi[j];
            lo[j] = j == p ? -INFINITY : lo[j];
        }
        right ^= 1u << p;
        float t[P / 2]; /* the pairs' max by a tree */
        for (int j = 0; j < P / 2; ++j)
            t[j] = fmaxf(hi[2 * j], hi[2 * j + 1]);
        for (int w = P / 4; w > 0; w >>= 1)
            for (int j = 0; j < w; ++j)
                t[j] = fmaxf(t[2 * j], t[2 * j + 1]);
        m = t[0];
    }
    c->drop = fmaxf(c->drop, m);
}

FS_HD void fs_cand_merge(fs_cand_list *a, const fs_cand_list *b)
{
    for (int i = 0; i < FS_CAND_LIST; ++i)
        if (b->id[i] >= 0)
            fs_cand_insert(a, b->s[i], b->id[i]);
    a->drop = fmaxf(a->drop, b->drop);
    a->count += b->count;
}

#endif
