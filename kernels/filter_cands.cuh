/* The GPU scans' share of the filters' one pass: a short candidate list per
 * epilogue thread, carried beside its fs_record for rows with top-k / top-p /
 * min-p (FS_ROWF_FILTER).
 *
 * A list keeps the thread's best FS_CAND_LIST tokens by (score desc, id asc)
 * and `drop`, the largest score it ever let go (or never took).  Invariant:
 * every finite allowed token the thread saw with a score above drop is in the
 * list.  Merging two lists keeps the best of the union and the larger drop,
 * so the invariant survives any merge order, and over all the lists of a row
 * the tokens scoring above D = max(drop) are exactly the row's tokens above
 * D -- an exact prefix of the row's sorted scores, whatever the tiling.  The
 * resolve kernel (filter_resolve.cu) turns that prefix into the row's
 * fs_filter_record (filter_record.h) and the shared decision code takes over.
 *
 * Four entries per thread: the lists live in registers through the mainloop
 * (the insert below is fully unrolled), and with ~1000 lists per row (the
 * Hopper tile kernel: 132 CTAs x up to 8 threads per row) the prefix above D
 * holds a few hundred tokens of an LM-shaped row -- far more than the 64
 * candidates the decision needs. */
#ifndef FS_FILTER_CANDS_CUH
#define FS_FILTER_CANDS_CUH

#include <math.h>
#include <stdint.h>

#include "record.h"

#define FS_CAND_LIST 4

typedef struct fs_cand_list {
    float s[FS_CAND_LIST];
    int32_t id[FS_CAND_LIST];
    float drop;    /* largest score let go; -inf when none */
    int32_t count; /* finite allowed tokens seen */
} fs_cand_list;

#ifdef __CUDACC__

static __device__ __forceinline__ void fs_cand_init(fs_cand_list &c)
{
#pragma unroll
    for (int i = 0; i < FS_CAND_LIST; ++i) {
        c.s[i] = -INFINITY;
        c.id[i] = -1;
    }
    c.drop = -INFINITY;
    c.count = 0;
}

/* Offer one finite token (its count is the caller's business). */
static __device__ __forceinline__ void fs_cand_insert(fs_cand_list &c, float x, int32_t id)
{
    constexpr int L = FS_CAND_LIST - 1;
    if (!fs_beats(x, id, c.s[L], c.id[L])) {
        c.drop = fmaxf(c.drop, x);
        return;
    }
    if (c.id[L] >= 0)
        c.drop = fmaxf(c.drop, c.s[L]);
    c.s[L] = x;
    c.id[L] = id;
#pragma unroll
    for (int i = L; i > 0; --i) {
        if (fs_beats(c.s[i], c.id[i], c.s[i - 1], c.id[i - 1])) {
            const float ts = c.s[i];
            const int32_t ti = c.id[i];
            c.s[i] = c.s[i - 1];
            c.id[i] = c.id[i - 1];
            c.s[i - 1] = ts;
            c.id[i - 1] = ti;
        }
    }
}

/* Push the scores of ids id0 .. id0 + n - 1 (-inf: disallowed).  NaN and
 * +inf fail the row through its fs_record, whose status every resolve checks
 * first, so the list does not sort them out: NaN is neither counted nor kept
 * (fmaxf passes over it), +inf may be -- in a row that no resolve reads.
 * The scans pass n = FS_NOISE_BLOCK with -inf past the block's end, which
 * compiles the i < n tests away.  The block's tokens
 * are offered best first, (score desc, id asc), while they beat the list's
 * last entry, and the best of the rest only raises drop: the list and drop
 * end as if every token had been offered (the tokens not offered rank below
 * one that was let go).  A block that does not enter the list costs its max
 * and one comparison; one that does costs an insert per token that enters
 * -- usually one -- not an unrolled insert of all 16.  The epilogue threads
 * of a warp carry different rows, so a warp runs the insert path whenever
 * any of its lanes does: offering all 16 tokens there made the lists cost
 * the Hopper tile kernel 7% at 64 rows (ncu, 151936 x 4096: 446 vs 418 us
 * without lists; 431 us offering them best first).  At most FS_CAND_LIST
 * of a block's tokens can enter in a row: after that many, the list's last
 * is the block's FS_CAND_LIST-th best, which the next one does not beat. */
static __device__ __forceinline__ void fs_cand_push_block(fs_cand_list &c, int32_t id0, int n,
                                                          const float *s)
{
    constexpr int L = FS_CAND_LIST - 1;
    float v[FS_NOISE_BLOCK];
    int finite = 0;
#pragma unroll
    for (int i = 0; i < FS_NOISE_BLOCK; ++i) {
        v[i] = i < n ? s[i] : -INFINITY;
        finite += v[i] > -INFINITY ? 1 : 0;
    }
    c.count += finite;
    float m = fs_block_max(v);
#pragma unroll 1
    for (int k = 0; k <= FS_CAND_LIST && m > -INFINITY && m >= c.s[L]; ++k) {
        const int at = fs_block_first_at(v, m);
        if (!fs_beats(m, id0 + at, c.s[L], c.id[L]))
            break; /* a tie with the last entry, on a larger id */
        fs_cand_insert(c, m, id0 + at);
#pragma unroll
        for (int i = 0; i < FS_NOISE_BLOCK; ++i)
            v[i] = i == at ? -INFINITY : v[i];
        m = fs_block_max(v);
    }
    if (m > -INFINITY)
        c.drop = fmaxf(c.drop, m);
}

static __device__ __forceinline__ void fs_cand_merge(fs_cand_list &a, const fs_cand_list &b)
{
#pragma unroll
    for (int i = 0; i < FS_CAND_LIST; ++i)
        if (b.id[i] >= 0)
            fs_cand_insert(a, b.s[i], b.id[i]);
    a.drop = fmaxf(a.drop, b.drop);
    a.count += b.count;
}

/* The list of lane (lane ^ mask); every lane named by `mask_lanes` takes part. */
static __device__ __forceinline__ fs_cand_list fs_cand_shfl_xor(const fs_cand_list &c, int mask,
                                                               unsigned mask_lanes = 0xffffffffu)
{
    fs_cand_list o;
#pragma unroll
    for (int i = 0; i < FS_CAND_LIST; ++i) {
        o.s[i] = __shfl_xor_sync(mask_lanes, c.s[i], mask);
        o.id[i] = __shfl_xor_sync(mask_lanes, c.id[i], mask);
    }
    o.drop = __shfl_xor_sync(mask_lanes, c.drop, mask);
    o.count = __shfl_xor_sync(mask_lanes, c.count, mask);
    return o;
}

/* Merge a full warp's lists into every lane. */
static __device__ __forceinline__ void fs_cand_warp_reduce(fs_cand_list &c)
{
#pragma unroll
    for (int mask = 16; mask > 0; mask >>= 1) {
        const fs_cand_list o = fs_cand_shfl_xor(c, mask);
        fs_cand_merge(c, o);
    }
}

#endif /* __CUDACC__ */

#endif
