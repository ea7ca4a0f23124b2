/* The rows-as-M Hopper scan's epilogue (scan_hopper_rows.cu): one row's
 * share of a vocabulary tile, straight from the wgmma accumulators.
 *
 * Layout (wgmma m64nN, fp32): a thread holds NA = N / 2 accumulators of one
 * m64 block, for 2 rows (HALF 0 / 1: rows ga and ga + 8 of its warp's 16) and
 * the columns 8 j + 2 gc + e (j < N / 8, e < 2), gc = lane % 4.  So the 4
 * lanes of a quad hold a row's N tokens between them, N / 4 each, and every
 * 16-token noise block (record.h) lies in one quad: 4 tokens per lane, j =
 * 2 k, 2 k + 1 for local block k.
 *
 * Per row and tile: scores in place, the thread's max / argmax / sum of exp
 * over its tokens (one exponential per token) into its carried record; then
 * the noise blocks: the quad's partial block sums are reduce-scattered so each
 * lane owns N / 64 of the row's N / 16 blocks, draws their Gumbel keys, and a
 * key that beats the row's best is resolved to a token by an inverse CDF
 * across the quad.  Templated on NA so that one code serves any tile width
 * that is a multiple of 64 tokens.  With filters (FILT) each thread also
 * keeps candidate lists of its rows' tokens (cand_tile). */
#ifndef FS_ROWS_EPILOGUE_CUH
#define FS_ROWS_EPILOGUE_CUH

#include <math.h>
#include <stdint.h>

#include "cand_list.h"
#include "philox.h"
#include "record.h"
#include "record_shfl.cuh"
#include "tree_record.h"

#ifndef FSHR_PROBE_NO_LISTS
#define FSHR_PROBE_NO_LISTS 0
#endif
#ifndef FSHR_PROBE_NO_EX2
#define FSHR_PROBE_NO_EX2 0
#endif
#ifndef FSHR_PROBE_NO_NOISE /* timing probe: no reduce-scatter, keys or pick (wrong draws) */
#define FSHR_PROBE_NO_NOISE 0
#endif

namespace fshr {
/* Tokens per unit of work: one W TMA box; a job is a range of units and a
 * tile one or two of them (scan_hopper_rows.cu). */
constexpr int UNIT = 128;

/* A row that takes sampling noise: valid, not greedy and not filtered (a
 * filtered row -- a chain row: tree verify's filtered rows take the tile
 * kernel -- draws from its kept set alone, in the merge's resolve or the
 * second pass, so its scan candidate would go unread).  The producer draws
 * noise for exactly these rows (noise_fill) and the consumers read it for
 * exactly these (RowState::noisy), so both ask here. */
__device__ __forceinline__ bool takes_noise(uint32_t flags)
{
    return (flags & (FS_ROWF_VALID | FS_ROWF_GREEDY | FS_ROWF_FILTER)) == FS_ROWF_VALID;
}

/* A row's slot in shared memory: its descriptor and, in tree verify's
 * kernels, which tiles of the job hold one of its children (tree_tile_mask)
 * -- beside the descriptor, so that a row reaches it through the pointer it
 * already holds, without another register. */
struct RowSlot {
    fs_row_desc d;
    uint64_t tile_mask;
};

/* One row's state in one thread: its partial record (carried across the
 * CTA's tiles) and the pruning bar shared by the quad.  The descriptor stays
 * in shared memory: registers go to the accumulators. */
struct RowState {
    fs_record rec;
    const fs_row_desc *d; /* shared memory: the first member of the row's RowSlot */
    int row;
    float bar; /* best key seen by the quad for this row: a block below it cannot win */
    /* row in range and FS_ROWF_VALID (a row out of range has flags 0): read
       from the descriptor, not carried, to spare the consumers' registers */
    __device__ __forceinline__ int scan() const { return (d->flags & FS_ROWF_VALID) ? 1 : 0; }
    /* scan, not greedy, not filtered (takes_noise) */
    __device__ __forceinline__ int noisy() const { return takes_noise(d->flags) ? 1 : 0; }
    __device__ __forceinline__ uint64_t tile_mask() const
    {
        return reinterpret_cast<const RowSlot *>(d)->tile_mask;
    }
};

__device__ __forceinline__ float quad_max(float x)
{
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
    return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}

/* Accumulator of row HALF, column 8 j + 2 gc + e. */
#define FSHR_ACC(j, e) acc[4 * (j) + 2 * HALF + (e)]

/* Tree verify: which tiles of a job hold one of the row's children.  The
 * job covers units u0 .. u1 - 1 of the shard (UNIT tokens each, clipped to
 * its V), in tiles of upt units from u0; bit (u % 64) is set when the tile
 * whose first unit is u holds a child.  A job of more than 64 units wraps
 * around, so a set bit may stand for several tiles -- some of them without
 * a child, never the other way round.  Built once a job into the row's
 * slot, so that in a tile without a child of the row the epilogue reads
 * one word of shared memory (its bit found from the tile's start) where it
 * read the row's children from global memory. */
__device__ __forceinline__ uint64_t tree_tile_mask(const fs_tree_row *t, int64_t vocab_offset,
                                                   int u0, int u1, int64_t V, int upt)
{
    const int64_t lo = (int64_t)u0 * UNIT, hi0 = (int64_t)u1 * UNIT, hi = hi0 < V ? hi0 : V;
    uint64_t m = 0;
    const int nc = t->num_children;
    for (int k = 0; k < nc; ++k) {
        const int64_t c = (int64_t)t->children[k] - vocab_offset;
        if (c >= lo && c < hi) {
            const int u = (int)(c / UNIT);
            m |= 1ull << ((u0 + (u - u0) / upt * upt) & 63);
        }
    }
    return m;
}

/* Tree verify (tree_scan.cuh): the children of the row's node that this
 * thread holds in this tile.  Each child's score goes to child_s (one
 * thread in the grid holds a given (row, child) token, so no merge), and an
 * excluded child leaves the accumulators for the record alone, like
 * verify's excluded token: it counts in the log-sum-exp and argmax, not in
 * the noise blocks.  Only where the row's tile mask (tree_tile_mask; v0:
 * the tile's first token in the shard) says it has a child here are its
 * children looked up by id (a row has at most FS_TREE_MAX_CHILDREN).  The
 * mask gates the loads and leaves the rest of the test (a vote, a loop of
 * no iterations) to run: a branch around it, a gated count or the bit taken
 * from the tile's global start all left ptxas's 16-28-byte spill in the
 * 128-row tree kernels as it is, so the simplest form stays.  The
 * accumulators are read through select chains under a warp-uniform loop, as
 * prepare's excluded token is, and only in the tiles where some lane of the
 * warp holds a child. */
template <int HALF, int NA, class A>
__device__ __forceinline__ void tree_children(RowState &r, float (&acc)[NA], int64_t v0, int64_t g0,
                                              int ncols, int gc, float it, const A &a)
{
    constexpr int NJ = NA / 4;
    const bool tc = (r.tile_mask() >> (((uint32_t)v0 / UNIT) & 63u)) & 1u;
    const fs_tree_row *t = a.tree_rows + r.row;
    const int nc = tc && r.scan() ? t->num_children : 0;
    uint32_t held = 0; /* bit k: this thread holds children[k] in this tile */
    for (int k = 0; k < nc; ++k) {
        const int64_t c = (int64_t)t->children[k] - g0;
        if (c >= 0 && c < ncols && ((c >> 1) & 3) == gc)
            held |= 1u << k;
    }
    uint32_t any = __reduce_or_sync(0xffffffffu, held);
    while (any) { /* warp-uniform */
        const int k = __ffs(any) - 1;
        any &= any - 1u;
        const bool h = (held >> k) & 1u;
        const int col = h ? (int)((int64_t)t->children[k] - g0) : -1;
        const bool ex = h && ((t->excluded_mask >> k) & 1u);
        float v = -INFINITY;
#pragma unroll
        for (int j = 0; j < NJ; ++j)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int cc = 8 * j + 2 * gc + e;
                v = cc == col ? FSHR_ACC(j, e) : v;
                FSHR_ACC(j, e) = ex && cc == col ? -INFINITY : FSHR_ACC(j, e);
            }
        const float sc = fs_score_nobias(v, it);
        if (h && sc > -INFINITY && sc < INFINITY)
            a.tree_child_s[(int64_t)r.row * FS_TREE_MAX_CHILDREN + k] = sc;
        if (ex)
            fs_record_push(&r.rec, r.d, (int32_t)(g0 + col), sc);
    }
}

/* The epilogue works in logit units: a token's score is v * it (it = 1/T),
 * where v is its logit (plus its bias when the call has a bias; -inf when
 * masked, out of range or removed), so the fast path writes nothing back and
 * exp(s - m) is one FFMA and one ex2.  This makes v ready in place: masks,
 * bias and the tile's range, and the exceptional tokens -- the excluded one
 * leaves (its score goes into the record alone), the selected one's score is
 * kept.  Slow paths only where a warp needs them. */
template <int HALF, int NA, bool TREE, bool FILT, class A>
__device__ __forceinline__ void prepare(RowState &r, float (&acc)[NA], int64_t v0, int ncols,
                                        int gc, const A &a, fs_cand_list *cl)
{
    constexpr int NJ = NA / 4;
    const int64_t g0 = a.vocab_offset + v0;
    const float it = r.d->inv_temp;
    if (a.allowed || a.bias) {
        /* ids fit in 32 bits (global_vocab <= INT32_MAX); the row is
           laundered so that the row offsets are not hoisted out of the tile
           loop (4 64-bit values the consumers would hold across the mainloop) */
        int row = r.row;
        asm volatile("" : "+r"(row));
        const uint32_t *arow = a.allowed ? a.allowed + (int64_t)row * a.words : nullptr;
        const float *brow = a.bias ? a.bias + (int64_t)row * a.global_vocab : nullptr;
        const int id0 = (int)g0 + 2 * gc;
#pragma unroll
        for (int j = 0; j < NJ; ++j) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int col = 8 * j + 2 * gc + e, id = id0 + 8 * j + e;
                bool ok = r.scan() && col < ncols;
                float b = 0.0f;
                if (ok && arow)
                    ok = (__ldg(&arow[id >> 5]) >> (id & 31)) & 1u;
                if (ok && brow)
                    b = __ldg(&brow[id]);
                FSHR_ACC(j, e) = ok ? FSHR_ACC(j, e) + b : -INFINITY;
            }
            /* keep the compiler from hoisting all 64 loads at once */
            if ((j & 3) == 3)
                asm volatile("" ::: "memory");
        }
    } else if (ncols < 8 * NJ) {
        /* column 8 j + 2 gc + e is in range iff 8 j + e < lim */
        const int lim = ncols - 2 * gc;
#pragma unroll
        for (int j = 0; j < NJ; ++j)
#pragma unroll
            for (int e = 0; e < 2; ++e)
                FSHR_ACC(j, e) = 8 * j + e < lim ? FSHR_ACC(j, e) : -INFINITY;
    }
    /* the excluded / selected token, if this thread holds it in this tile */
    const int64_t cx = (int64_t)r.d->excluded - g0, cs = (int64_t)r.d->selected - g0;
    const bool hx = r.scan() && cx >= 0 && cx < ncols && ((cx >> 1) & 3) == gc;
    const bool hs = r.scan() && cs >= 0 && cs < ncols && ((cs >> 1) & 3) == gc;
    if (__any_sync(0xffffffffu, hx || hs)) {
        /* select chains, then one push: the held tokens' values without a
           divergent read of the accumulators, and a few dozen instructions
           where a push per column made this path ~5000 (with those, verify
           at 320 rows was 18% slower than sampling; now even) */
        const int ix = hx ? (int)cx : -1, is = hs ? (int)cs : -1;
        float vx = -INFINITY, vs = -INFINITY;
#pragma unroll
        for (int j = 0; j < NJ; ++j)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int col = 8 * j + 2 * gc + e;
                vx = col == ix ? FSHR_ACC(j, e) : vx;
                vs = col == is ? FSHR_ACC(j, e) : vs;
                FSHR_ACC(j, e) = col == ix ? -INFINITY : FSHR_ACC(j, e);
            }
        const float xs = fs_score_nobias(vs, it);
        if (hs && xs > -INFINITY && xs < INFINITY)
            r.rec.sel_s = xs;
        if (hx)
            fs_record_push(&r.rec, r.d, (int32_t)(g0 + ix), fs_score_nobias(vx, it));
        if (FILT && hx && (r.d->flags & FS_ROWF_FILTER)) {
            /* the filtered target keeps the draft's token: its list takes
               it (the accumulators no longer hold it) */
            const float xs = fs_score_nobias(vx, it);
            fs_cand_list *c = cl + ((ix >> 4) & 1);
            if (xs > -INFINITY) {
                c->count += 1;
                fs_cand_insert(c, xs, (int32_t)(g0 + ix));
            }
        }
    }
    if (TREE)
        tree_children<HALF, NA>(r, acc, v0, g0, ncols, gc, it, a);
}

template <bool NANP> __device__ __forceinline__ float vmax(float a, float b)
{
    return NANP ? fs_fmax_nan(a, b) : fmaxf(a, b);
}

/* The thread's max m (logit units) and, when col, its lowest column (else
 * mcol = 0); NANP: m is NaN if a token is.  Max and argmax run as 8
 * independent chains: one chain of 64 compares is latency-bound.  FILT (the
 * filters' candidate lists, cand_tile): also the max of each list's tokens
 * (mp[p]: noise blocks 2 i + p, whose columns 8 j + .. have bit 1 of j equal
 * to p, so chains k with (k >> 1) & 1 == p) and the min of all, mn. */
template <int HALF, int NA, bool NANP, bool FILT = false>
__device__ __forceinline__ void max_part(const float (&acc)[NA], float &m, int &mcol, int gc,
                                         bool col, float (&mp)[2], float &mn)
{
    constexpr int NJ = NA / 4;
    float mk[8], nk[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) {
        mk[k] = vmax<NANP>(vmax<NANP>(FSHR_ACC(k, 0), FSHR_ACC(k, 1)),
                           vmax<NANP>(FSHR_ACC(k + 8, 0), FSHR_ACC(k + 8, 1)));
        if (FILT)
            nk[k] = fminf(fminf(FSHR_ACC(k, 0), FSHR_ACC(k, 1)),
                          fminf(FSHR_ACC(k + 8, 0), FSHR_ACC(k + 8, 1)));
    }
#pragma unroll
    for (int q = 2; q < NJ / 8; q += 2)
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            mk[k] = vmax<NANP>(mk[k], vmax<NANP>(vmax<NANP>(FSHR_ACC(k + 8 * q, 0), FSHR_ACC(k + 8 * q, 1)),
                                                 vmax<NANP>(FSHR_ACC(k + 8 * q + 8, 0),
                                                            FSHR_ACC(k + 8 * q + 8, 1))));
            if (FILT)
                nk[k] = fminf(nk[k], fminf(fminf(FSHR_ACC(k + 8 * q, 0), FSHR_ACC(k + 8 * q, 1)),
                                           fminf(FSHR_ACC(k + 8 * q + 8, 0),
                                                 FSHR_ACC(k + 8 * q + 8, 1))));
        }
    /* grouped by list (the max is the same bits in any order) */
    mp[0] = vmax<NANP>(vmax<NANP>(mk[0], mk[1]), vmax<NANP>(mk[4], mk[5]));
    mp[1] = vmax<NANP>(vmax<NANP>(mk[2], mk[3]), vmax<NANP>(mk[6], mk[7]));
    m = vmax<NANP>(mp[0], mp[1]);
    mn = FILT ? fminf(fminf(fminf(nk[0], nk[1]), fminf(nk[2], nk[3])),
                      fminf(fminf(nk[4], nk[5]), fminf(nk[6], nk[7])))
              : 0.0f;
    mcol = 0;
    if (!col)
        return;
    /* the lowest column holding m: columns ascend with (j, e) */
    int ck[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) {
        ck[k] = 1 << 20;
#pragma unroll
        for (int q = NJ / 8 - 1; q >= 0; --q)
#pragma unroll
            for (int e = 1; e >= 0; --e)
                ck[k] = FSHR_ACC(k + 8 * q, e) == m ? 8 * (k + 8 * q) + 2 * gc + e : ck[k];
    }
    mcol = min(min(min(ck[0], ck[1]), min(ck[2], ck[3])), min(min(ck[4], ck[5]), min(ck[6], ck[7])));
}

/* The filters' candidate lists in the rows kernel (FILT): each thread keeps
 * two lists (src/cand_list.h) per row in shared memory, list P taking its
 * tokens of the noise blocks 2 g + P (its 4-token groups g < 8: 32 of its
 * 64 a tile), so that a row has 8 lists per (row, slot) -- as many as the
 * tile kernel's FS_HOPPER_TILE_LISTS per CTA -- and its exact prefix is as
 * long as the lists are many.
 *
 * Offer list P of this thread's row its tokens of one tile: mp, their max
 * (logit units); `on`: the row filters (the other lanes of the warp take
 * part and change nothing).  A list whose last entry ranks above every
 * token costs one comparison (drop rises to the max).  Otherwise its groups
 * whose best reaches the last entry are the candidates: every token of a
 * candidate group is offered (fs_cand_insert: the list ends as the best
 * FS_CAND_LIST of all it was offered, in any order), and the best of the
 * other groups, which the last entry -- only rising -- ranks above, goes to
 * drop.  A warp loops as often as its lane with the most candidate groups:
 * each round reads one group's four accumulators through selects under a
 * warp-uniform loop (a divergent read would serialise the next tile's
 * wgmma) and inserts from registers.  Taking the tokens best first instead,
 * each round a search of all 32, made 320-row verify 3-6% slower on an
 * H200. */
template <int HALF, int NA, int P>
__device__ __forceinline__ void cand_list_tile(const float (&acc)[NA], fs_cand_list *cl, float mp,
                                               int64_t g0, int gc, float it, bool on)
{
    constexpr int NG = NA / 16; /* the list's groups: blocks 2 g + P, j = 4 g + 2 P (+ 1) */
    static_assert(NG <= 32, "a 32-bit mask of the list's groups");
    const float m = fs_score_nobias(mp, it); /* the max score: scores rise with logits */
    const float last = cl->s[FS_CAND_LIST - 1];
    const bool live = on && m > -INFINITY && m >= last;
    if (!__any_sync(0xffffffffu, live)) {
        if (on)
            cl->drop = fmaxf(cl->drop, m);
        return;
    }
    uint32_t cand = 0;
    float rest = -INFINITY; /* the best score of the groups that are not candidates */
#pragma unroll
    for (int g = 0; g < NG; ++g) {
        const int j = 4 * g + 2 * P;
        const float gm = fmaxf(fmaxf(FSHR_ACC(j, 0), FSHR_ACC(j, 1)),
                               fmaxf(FSHR_ACC(j + 1, 0), FSHR_ACC(j + 1, 1)));
        const float sg = fs_score_nobias(gm, it);
        const bool c = live && sg >= last;
        cand |= (c ? 1u : 0u) << g;
        rest = c ? rest : fmaxf(rest, sg);
    }
    fs_cand_list c = *cl;
    c.drop = fmaxf(c.drop, rest);
    while (__any_sync(0xffffffffu, cand != 0u)) {
        const int g = cand ? __ffs((int)cand) - 1 : -1;
        cand &= cand - 1u;
        float x0 = -INFINITY, x1 = -INFINITY, x2 = -INFINITY, x3 = -INFINITY;
#pragma unroll
        for (int q = 0; q < NG; ++q) {
            const int j = 4 * q + 2 * P;
            x0 = q == g ? FSHR_ACC(j, 0) : x0;
            x1 = q == g ? FSHR_ACC(j, 1) : x1;
            x2 = q == g ? FSHR_ACC(j + 1, 0) : x2;
            x3 = q == g ? FSHR_ACC(j + 1, 1) : x3;
        }
        if (g >= 0) {
            /* columns 8 j + 2 gc + e of block 2 g + P: 16 (2 g + P) + 2 gc + {0, 1, 8, 9} */
            const int32_t id = (int32_t)(g0 + 16 * (2 * g + P) + 2 * gc);
            fs_cand_insert(&c, fs_score_nobias(x0, it), id);
            fs_cand_insert(&c, fs_score_nobias(x1, it), id + 1);
            fs_cand_insert(&c, fs_score_nobias(x2, it), id + 8);
            fs_cand_insert(&c, fs_score_nobias(x3, it), id + 9);
        }
    }
    if (on)
        *cl = c;
}

/* The filters' lists of this thread's row for one tile (rows that filter:
 * FS_ROWF_FILTER): its finite tokens counted into list 0 (all 64 unless the
 * min says otherwise: a mask, a bias, the tile's end or the excluded token,
 * which prepare offers on its own), then each list offered its tokens.
 * cl: the row's two lists. */
template <int HALF, int NA>
__device__ __forceinline__ void cand_tile(const RowState &r, const float (&acc)[NA], fs_cand_list *cl,
                                          const float (&mp)[2], float mn, int64_t g0, int gc,
                                          float it)
{
    constexpr int NJ = NA / 4;
#if FSHR_PROBE_NO_LISTS /* timing probe: the lists' kernels without the lists (wrong results) */
    return;
#endif
    const bool on = r.scan() && (r.d->flags & FS_ROWF_FILTER);
    int n = NA / 2;
    if (__any_sync(0xffffffffu, on && !(mn > -INFINITY))) {
        n = 0;
#pragma unroll
        for (int j = 0; j < NJ; ++j)
#pragma unroll
            for (int e = 0; e < 2; ++e)
                n += FSHR_ACC(j, e) > -INFINITY ? 1 : 0;
    }
    if (on)
        cl[0].count += n;
    cand_list_tile<HALF, NA, 0>(acc, cl, mp[0], g0, gc, it, on);
    cand_list_tile<HALF, NA, 1>(acc, cl + 1, mp[1], g0, gc, it, on);
}

/* Per-block sums S4[k] of exp(s - m * it) over the thread's 4 tokens of
 * block k (c = it / ln 2). */
template <int HALF, int NA>
__device__ __forceinline__ void block_sums(const float (&acc)[NA], float c, float m,
                                           float (&S4)[NA / 8])
{
    constexpr int NB = NA / 8;
    const float nb = m > -INFINITY ? -m * c : 0.0f;
#if FSHR_PROBE_NO_EX2 /* timing probe: the block sums without the MUFU (wrong results) */
#pragma unroll
    for (int k = 0; k < NB; ++k)
        S4[k] = (fmaxf(fmaf(FSHR_ACC(2 * k, 0), c, nb), 0.0f) +
                 fmaxf(fmaf(FSHR_ACC(2 * k, 1), c, nb), 0.0f)) +
                (fmaxf(fmaf(FSHR_ACC(2 * k + 1, 0), c, nb), 0.0f) +
                 fmaxf(fmaf(FSHR_ACC(2 * k + 1, 1), c, nb), 0.0f)) + 1.0f;
#else
#pragma unroll
    for (int k = 0; k < NB; ++k)
        S4[k] = (fs_ex2(fmaf(FSHR_ACC(2 * k, 0), c, nb)) +
                 fs_ex2(fmaf(FSHR_ACC(2 * k, 1), c, nb))) +
                (fs_ex2(fmaf(FSHR_ACC(2 * k + 1, 0), c, nb)) +
                 fs_ex2(fmaf(FSHR_ACC(2 * k + 1, 1), c, nb)));
#endif
}

/* Reduce-scatter of the quad's block sums, in groups of 8 blocks (NB / 8
 * groups): lane gc ends with the whole sums of blocks 2 gc, 2 gc + 1 of each
 * group (own[2 g], own[2 g + 1] for group g; 16 blocks: 2 gc, 2 gc + 1,
 * 2 gc + 8, 2 gc + 9).  Two rounds: lanes gc ^ 2 swap the halves of each
 * group ({0-3} / {4-7}), then lanes gc ^ 1 swap pairs. */
template <int NB>
__device__ __forceinline__ void reduce_scatter(const float (&S4)[NB], int gc, float (&own)[NB / 4])
{
    const bool hi2 = gc & 2, hi1 = gc & 1;
    float k8[NB / 2]; /* round 1: blocks {0..3, 8..11, ..} (lanes 0, 1) or {4..7, 12..15, ..} */
#pragma unroll
    for (int i = 0; i < NB / 2; ++i) {
        const int lo = (i & 3) + (i >> 2) * 8; /* blocks of lanes 0, 1 */
        const float mine = hi2 ? S4[lo + 4] : S4[lo];
        const float give = hi2 ? S4[lo] : S4[lo + 4];
        k8[i] = mine + __shfl_xor_sync(0xffffffffu, give, 2);
    }
    /* round 2: within k8 (blocks b, b+1, b+2, b+3, b+8, ...: base 0 or 4), lane
       bit 1 picks {2, 3, 10, 11} of the base, bit 0 clear {0, 1, 8, 9} */
#pragma unroll
    for (int i = 0; i < NB / 4; ++i) {
        const int lo = (i & 1) + (i >> 1) * 4; /* k8 index kept by hi1 == 0 */
        const float mine = hi1 ? k8[lo + 2] : k8[lo];
        const float give = hi1 ? k8[lo] : k8[lo + 2];
        own[i] = mine + __shfl_xor_sync(0xffffffffu, give, 1);
    }
}

/* Local block of own[i] for lane gc: 2 gc + (i & 1) + 8 (i >> 1). */
__device__ __forceinline__ int own_block(int gc, int i)
{
    return 2 * gc + (i & 1) + 8 * (i >> 1);
}

/* Inverse CDF inside local block K (any lane's value, the same in the
 * quad) of this row, run by the whole quad with target T (relative to the
 * quad reference: weights exp2(v c + nb), nb = -M c in logit units): every
 * lane returns the chosen column (-1 if the block has no weight) and that
 * token's value v.  Token order: first half
 * (columns 16K + 0..7: lane 0's two, lane 1's, ...), then the second half
 * (16K + 8..15).  The accumulators are read through selects on K so that
 * every lane runs the same code (reading them on a divergent path would
 * serialise the next tile's wgmma). */
template <int HALF, int NA>
__device__ __forceinline__ int quad_pick(const float (&acc)[NA], int K, float c, float nb, int gc,
                                         float T, float *value)
{
    constexpr int NB = NA / 8;
    float x0 = -INFINITY, x1 = -INFINITY, x2 = -INFINITY, x3 = -INFINITY;
#pragma unroll
    for (int k = 0; k < NB; ++k) {
        x0 = k == K ? FSHR_ACC(2 * k, 0) : x0;
        x1 = k == K ? FSHR_ACC(2 * k, 1) : x1;
        x2 = k == K ? FSHR_ACC(2 * k + 1, 0) : x2;
        x3 = k == K ? FSHR_ACC(2 * k + 1, 1) : x3;
    }
    const float w0 = fs_ex2(fmaf(x0, c, nb)), w1 = fs_ex2(fmaf(x1, c, nb));
    const float w2 = fs_ex2(fmaf(x2, c, nb)), w3 = fs_ex2(fmaf(x3, c, nb));
    /* inclusive scans across the quad of each half's pair sums */
    const float ha = w0 + w1, hb = w2 + w3;
    float sa = ha, sb = hb;
#pragma unroll
    for (int d = 1; d < 4; d <<= 1) {
        const float ua = __shfl_up_sync(0xffffffffu, sa, d, 4);
        const float ub = __shfl_up_sync(0xffffffffu, sb, d, 4);
        if (gc >= d) {
            sa += ua;
            sb += ub;
        }
    }
    const float A = __shfl_sync(0xffffffffu, sa, 3, 4); /* first half's total */
    const float ea = sa - ha, eb = A + sb - hb;         /* exclusive starts */
    const float c0 = ea + w0, c1 = c0 + w1, c2 = eb + w2, c3 = c2 + w3;
    /* bit = order position: set where the cumulative sum passes T */
    uint32_t past = (T < c0 ? 1u : 0u) << (2 * gc) | (T < c1 ? 1u : 0u) << (2 * gc + 1) |
                    (T < c2 ? 1u : 0u) << (8 + 2 * gc) | (T < c3 ? 1u : 0u) << (9 + 2 * gc);
    uint32_t pos = (w0 > 0.0f ? 1u : 0u) << (2 * gc) | (w1 > 0.0f ? 1u : 0u) << (2 * gc + 1) |
                   (w2 > 0.0f ? 1u : 0u) << (8 + 2 * gc) | (w3 > 0.0f ? 1u : 0u) << (9 + 2 * gc);
    past &= pos;
    past |= __shfl_xor_sync(0xffffffffu, past, 1);
    past |= __shfl_xor_sync(0xffffffffu, past, 2);
    pos |= __shfl_xor_sync(0xffffffffu, pos, 1);
    pos |= __shfl_xor_sync(0xffffffffu, pos, 2);
    /* the first token past T, or (rounding) the last one with weight */
    const int p = past ? __ffs(past) - 1 : pos ? 31 - __clz(pos) : 0;
    /* its score, from the lane that holds order position p */
    const int h = (p & 7) >> 1, second = p >> 3, e = p & 1;
    const float mine = second ? (e ? x3 : x2) : (e ? x1 : x0);
    *value = __shfl_sync(0xffffffffu, mine, ((threadIdx.x & 31) & ~3) + h);
    return pos ? 16 * K + p : -1; /* order position p is column 16 K + p */
}

/* The noise of one vocabulary tile for the CTA's BR rows (NBT noise blocks a
 * row), drawn by the producer warpgroup's spare warps while the consumers run
 * the tile's MMA: for local row lr and local blocks 2 p, 2 p + 1, buf[lr NBT
 * / 2 + p] = {Gumbel noise, inverse-CDF uniform} of each (record.h's words,
 * so the samples are the CPU reference's).  row_of(lr): the row that local
 * row lr holds, or -1 (nothing to draw).  Rows that take no noise are
 * skipped: their consumers never read them.  Threads t0, t0 + nt, ... of
 * the caller. */
template <int BR, int NBT, class A, class RowOf>
__device__ __forceinline__ void noise_fill(float4 *buf, int64_t g0, int t0, int nt, const A &a,
                                           RowOf row_of)
{
    constexpr int NP = NBT / 2;
    const uint32_t B0 = (uint32_t)(g0 / FS_NOISE_BLOCK);
    for (int i = t0; i < BR * NP; i += nt) {
        const int lr = i / NP;
        const int64_t row = row_of(lr);
        if (row < 0)
            continue;
        /* written by the prep kernel, which may have run alongside: no .nc loads */
        const fs_row_desc *d = a.descs + row;
        if (!takes_noise(d->flags))
            continue;
        const uint32_t b = B0 + 2u * (uint32_t)(i - lr * NP);
        uint32_t wg0, wu0, wg1, wu1;
        if ((b & 1u) == 0u) { /* blocks b, b + 1: one Philox call */
            const fs_u32x4 w =
                fs_philox_draw(d->seed, d->offset, d->position, FS_PURPOSE_GUMBEL, b >> 1);
            wg0 = w.v[0];
            wu0 = w.v[1];
            wg1 = w.v[2];
            wu1 = w.v[3];
        } else {
            fs_block_words(d->seed, d->offset, d->position, b, &wg0, &wu0);
            /* one Philox at a time: interleaved, the two do not fit the producer */
            asm volatile("" : "+r"(wg0), "+r"(wu0));
            fs_block_words(d->seed, d->offset, d->position, b + 1, &wg1, &wu1);
        }
        buf[i] = make_float4(fs_gumbel(wg0), fs_uniform(wu0), fs_gumbel(wg1), fs_uniform(wu1));
    }
}

/* The Gumbel keys of the blocks this lane owns, from the row's noise nz
 * (noise_fill); the quad's best key of the tile, if it beats the row's best
 * so far, is resolved to a token (only the tile's best block can).  Whole
 * warps call this. */
template <int HALF, int NA>
__device__ __forceinline__ void noise(RowState &r, const float (&acc)[NA], int64_t g0, int gc,
                                      float Ml, float c, float it, const float (&own)[NA / 32],
                                      const float4 *nz)
{
    constexpr int NB = NA / 8;
    /* the quad reference in score units (own[] are sums of exp(s - M)) */
    const float M = Ml * it, nb = Ml > -INFINITY ? -Ml * c : 0.0f;
    float bk = -INFINITY, bT = 0.0f;
    int bb = NB;
#pragma unroll
    for (int h = 0; h < NB / 8; ++h) {
        /* own blocks 2 gc + 8 h and the next: pair gc + 4 h of the row */
        const bool any = r.noisy() && (own[2 * h] > 0.0f || own[2 * h + 1] > 0.0f);
        const float4 w = any ? nz[gc + 4 * h] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
#pragma unroll
        for (int q = 0; q < 2; ++q) {
            const int i = 2 * h + q;
            if (any && own[i] > 0.0f) {
                const float lw = M + logf(own[i]);
                if (!fs_block_hopeless(lw, r.bar)) {
                    const float key = lw + (q ? w.z : w.x);
                    if (key > bk) { /* own blocks ascend within h, and with h */
                        bk = key;
                        bb = own_block(gc, i);
                        bT = (q ? w.w : w.y) * own[i];
                    }
                }
            }
        }
    }
    /* the quad's best (key, block): lowest block on equal keys */
#pragma unroll
    for (int m = 1; m < 4; m <<= 1) {
        const float ok = __shfl_xor_sync(0xffffffffu, bk, m);
        const int ob = __shfl_xor_sync(0xffffffffu, bb, m);
        const float oT = __shfl_xor_sync(0xffffffffu, bT, m);
        if (ok > bk || (ok == bk && ob < bb)) {
            bk = ok;
            bb = ob;
            bT = oT;
        }
    }
    float vc;
    const int col = quad_pick<HALF, NA>(acc, bb, c, nb, gc, bT, &vc);
    const float sc = fs_score_nobias(vc, it);
    if (col >= 0 && bb < NB && (bk > r.bar || bk == r.bar)) {
        const int32_t id = (int32_t)(g0 + col);
        if (fs_beats(bk, id, r.rec.best_key, r.rec.best_id)) {
            r.rec.best_key = bk;
            r.rec.best_id = id;
            r.rec.best_s = sc;
        }
        r.bar = fmaxf(r.bar, bk);
    }
}

/* One row's epilogue for one tile.  LSE = false (draft argmax: only the max
 * and its id are read) skips the exponentials; the record's sum_exp is then
 * meaningless.  TREE: the rows are tree verify's (tree_children).  FILT: the
 * op has filters; cl, the row's two candidate lists (cand_tile). */
template <int HALF, int NA, bool LSE, bool TREE, bool FILT, class A>
__device__ __forceinline__ void row_tile(RowState &r, float (&acc)[NA], int64_t v0, int ncols,
                                         int gc, const A &a, const float4 *nz, bool col,
                                         fs_cand_list *cl)
{
    constexpr int NB = NA / 8;
    const int64_t g0 = a.vocab_offset + v0;
    prepare<HALF, NA, TREE, FILT>(r, acc, v0, ncols, gc, a, cl);
    const float it = r.d->inv_temp, c = it * 1.4426950408889634f;
    /* The argmax's id is read only for greedy rows (the token of sample,
       verify and tree verify at T = 0) and as "some token is allowed" (>= 0,
       fs_record_status); the log-sum-exp merge's tie-break by id leaves the
       sum alone.  So where no row of the warp is greedy, the tile's first
       token stands in for it, which saves the column search's compare and
       select per token in the sampling epilogue (col: the caller's
       greedy_rows). */
    float m, mp[2], mn;
    int mcol;
    max_part<HALF, NA, !LSE, FILT>(acc, m, mcol, gc, col, mp, mn);
    if (FILT)
        cand_tile<HALF, NA>(r, acc, cl, mp, mn, g0, gc, it);
    float S4[NB], tot = 1.0f; /* argmax only: any positive sum */
    if (LSE) {
        block_sums<HALF, NA>(acc, c, m, S4);
        tot = 0.0f;
#pragma unroll
        for (int k = 0; k < NB; ++k)
            tot += S4[k];
    }
    /* a NaN or +inf value makes the max infinite or NaN (argmax only) or the
       sum NaN: the row's status is then FS_ROW_NONFINITE whatever else the
       record holds */
    const float nan_witness = LSE ? tot : m;
    if (r.scan()) {
        if (m == INFINITY || !(nan_witness == nan_witness))
            r.rec.flags |= FS_REC_NONFINITE;
        else if (m > -INFINITY)
            fs_record_add_lse(&r.rec, fs_score_nobias(m, it), (int32_t)(g0 + mcol), tot);
    }
    if (!LSE || FSHR_PROBE_NO_NOISE || !__any_sync(0xffffffffu, r.noisy()))
        return;
    /* the quad's common reference for the block sums */
    const float Ml = quad_max(m);
    const float f = m > -INFINITY ? fs_ex2((m - Ml) * c) : 0.0f;
#pragma unroll
    for (int k = 0; k < NB; ++k)
        S4[k] *= f;
    float own[NB / 4];
    reduce_scatter<NB>(S4, gc, own);
    noise<HALF, NA>(r, acc, g0, gc, Ml, c, it, own, nz);
}

#undef FSHR_ACC

/* Whether the warp holds a greedy row (RowState of rows ga, ga + 8): the
 * only rows whose argmax id is read (row_tile's col).  FILT: a filtered row
 * takes no noise and is not greedy, so the flag is asked itself; the other
 * kernels keep the test on noisy() (the flag's test there made ptxas spill
 * 20 bytes instead of 8 in the unfiltered multi-job LSE kernels). */
template <bool FILT>
__device__ __forceinline__ bool greedy_rows(const RowState &r0, const RowState &r1)
{
    if (FILT)
        return __any_sync(0xffffffffu, (r0.scan() && (r0.d->flags & FS_ROWF_GREEDY)) ||
                                           (r1.scan() && (r1.d->flags & FS_ROWF_GREEDY)));
    return __any_sync(0xffffffffu, (r0.scan() && !r0.noisy()) || (r1.scan() && !r1.noisy()));
}

/* d: the row's descriptor in shared memory, with flags 0 for a row out of
 * range (scan() and noisy() read them). */
__device__ __forceinline__ void row_init(RowState &r, int row, const fs_row_desc *d)
{
    fs_record_init(&r.rec);
    r.row = row;
    r.d = d;
    r.bar = -INFINITY;
}

/* The merge of the quad's records of the row; all 32 lanes take part and
 * every lane gets it. */
__device__ __forceinline__ fs_record quad_record(const RowState &r)
{
    fs_record rec = r.rec;
#pragma unroll
    for (int m = 1; m < 4; m <<= 1) {
        const fs_record o = fs_record_shfl_xor(rec, m);
        fs_record_merge(&rec, &o);
    }
    return rec;
}

} // namespace fshr

#endif
