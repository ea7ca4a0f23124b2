/* Hopper (sm_90a) fused LM-head scan for large row batches: rows as the
 * wgmma M dimension.
 *
 *   logits = H . W^T, rows = wgmma M (64 per consumer warpgroup), vocabulary
 *   = wgmma N (256 per tile), K = D.
 *
 * Why a second kernel: the vocabulary-as-M kernel (scan_hopper.cu) keeps a
 * tile's logits in an fp32 shared-memory buffer for its epilogue, which caps
 * its tile at 128 tokens and re-reads H from L2 for every 128 tokens; from
 * ~128 rows up that traffic binds (L2 serves ~7 TB/s, and the W stream
 * itself costs twice its size there: fill + read).  With rows as M a
 * thread's accumulators hold 2 rows x 64 tokens, the four lanes of a quad
 * hold all 256 tokens of those rows, and the epilogue works from registers.
 *
 *   CTA        2 consumer warpgroups, 256 threads, one CTA per SM; thread 0
 *              also issues the TMA.  (A separate producer warp would make 9
 *              warps, 3 of them on one SM sub-partition, whose 16K registers
 *              cap every thread at 168 -- too few for 128 accumulators.)
 *   work       CTA = (row block of 128 rows, slot).  The vocabulary is cut into
 *              128-token units, and slot s owns a contiguous range of them
 *              (the slots' ranges differ by at most one unit), taken as
 *              256-token tiles plus a last half tile when the count is odd: the
 *              W bytes per CTA are balanced to one unit, where 256-token tiles
 *              alone leave the last wave half empty at 128 rows.  The row
 *              blocks of one slot run side by side and share W through L2.
 *   pipeline   4 stages of { W 256 x 64 (two 128-row TMA boxes; one for a half
 *              tile), H 128 x 64 }, 128-byte swizzle, full/empty mbarriers.
 *              A stage is refilled as soon as all warps are past it; the last
 *              stage of a tile is released before the epilogue, so 4 k-blocks
 *              of the next tile stream in under it.
 *   epilogue   per row and tile, from registers: scores in place, the
 *              thread's max / argmax / sum of exp over its 64 tokens (one
 *              exponential per token) into its carried record; then the noise
 *              blocks (record.h): the quad's partial block sums are
 *              reduce-scattered so each lane owns 4 of the row's 16 blocks,
 *              draws their Gumbel keys, and a key that beats the row's best
 *              is resolved to a token by an inverse CDF across the quad.
 *   records    one per (row, slot): the merge of its lanes' records.
 *   tail       the last CTA merges and finalizes the op (op_tail.cuh).
 *
 * The tensor cores idle during the epilogue; the TMA keeps streaming. */
#include "scan_hopper_rows.cuh"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "hopper_ptx.cuh"
#include "op_tail.cuh"
#include "pdl.cuh"
#include "philox.h"
#include "record.h"
#include "record_shfl.cuh"
#include "wgmma.cuh"

namespace fshr {

using namespace fshp;

constexpr int BR = 128;            /* rows per CTA: 2 consumer warpgroups x 64 */
constexpr int BV = 256;            /* tokens per tile (wgmma N) */
constexpr int UNIT = 128;          /* tokens per unit of work (one W TMA box) */
constexpr int NCW = 8;             /* consumer warps: every warp */
constexpr int NCT = NCW * 32;      /* consumer threads: every thread */
constexpr int THREADS = NCT;
constexpr int W_BYTES = BV * BK * 2;
constexpr int H_BYTES = BR * BK * 2;
constexpr int STAGE_BYTES = W_BYTES + H_BYTES;
constexpr int STAGES = 4;
constexpr int BAR_BYTES = 2 * STAGES * 8 + 16;
constexpr int DESC_BYTES = BR * (int)sizeof(fs_row_desc);
constexpr int SMEM = 1024 + STAGES * STAGE_BYTES + BAR_BYTES + DESC_BYTES;
static_assert(SMEM <= SMEM_MAX, "smem");

struct Args {
    const fs_row_desc *descs;
    const float *bias;
    const uint32_t *allowed;
    fs_record *recs; /* record (row, slot) at row * slots + slot */
    int64_t rows, V, vocab_offset, global_vocab, words;
    int n_rb, slots, units, kblocks, tail_on;
    fs_tail_args tail;
};

/* Units [u0, u1) of slot `slot`. */
__host__ __device__ __forceinline__ void slot_range(int slot, int slots, int units, int *u0,
                                                    int *u1)
{
    *u0 = (int)((int64_t)slot * units / slots);
    *u1 = (int)((int64_t)(slot + 1) * units / slots);
}

#if FSH_SM90A

constexpr int NB = BV / FS_NOISE_BLOCK; /* noise blocks per tile and row */

/* One row's state in one thread: its partial record (carried across the
 * CTA's tiles) and the pruning bar shared by the quad.  The descriptor stays
 * in shared memory: registers go to the accumulators. */
struct RowState {
    fs_record rec;
    const fs_row_desc *d; /* shared memory */
    int row;
    int scan;  /* row in range and FS_ROWF_VALID */
    int noisy; /* scan and not greedy */
    float bar; /* best key seen by the quad for this row: a block below it cannot win */
};

__device__ __forceinline__ float quad_max(float x)
{
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
    return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}

/* Accumulator of row HALF, column 8 j + 2 gc + e. */
#define FSHR_ACC(j, e) acc[4 * (j) + 2 * HALF + (e)]

/* 2^x on the special-function unit (what __expf uses). */
__device__ __forceinline__ float ex2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* The epilogue works in logit units: a token's score is v * it (it = 1/T),
 * where v is its logit (plus its bias when the call has a bias; -inf when
 * masked, out of range or removed), so the fast path writes nothing back and
 * exp(s - m) is one FFMA and one ex2.  This makes v ready in place: masks,
 * bias and the tile's range, and the exceptional tokens -- the excluded one
 * leaves (its score goes into the record alone), the selected one's score is
 * kept.  Slow paths only where a warp needs them. */
template <int HALF>
__device__ __forceinline__ void prepare(RowState &r, float (&acc)[128], int64_t v0, int ncols,
                                        int gc, const Args &a)
{
    const int64_t g0 = a.vocab_offset + v0;
    const float it = r.d->inv_temp;
    if (a.allowed || a.bias) {
        /* ids fit in 32 bits (global_vocab <= INT32_MAX) */
        const uint32_t *arow = a.allowed ? a.allowed + (int64_t)r.row * a.words : nullptr;
        const float *brow = a.bias ? a.bias + (int64_t)r.row * a.global_vocab : nullptr;
        const int id0 = (int)g0 + 2 * gc;
#pragma unroll
        for (int j = 0; j < 32; ++j) {
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int col = 8 * j + 2 * gc + e, id = id0 + 8 * j + e;
                bool ok = r.scan && col < ncols;
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
    } else if (ncols < BV) {
        /* column 8 j + 2 gc + e is in range iff 8 j + e < lim */
        const int lim = ncols - 2 * gc;
#pragma unroll
        for (int j = 0; j < 32; ++j)
#pragma unroll
            for (int e = 0; e < 2; ++e)
                FSHR_ACC(j, e) = 8 * j + e < lim ? FSHR_ACC(j, e) : -INFINITY;
    }
    /* the excluded / selected token, if this thread holds it in this tile */
    const int64_t cx = (int64_t)r.d->excluded - g0, cs = (int64_t)r.d->selected - g0;
    const bool hx = r.scan && cx >= 0 && cx < ncols && ((cx >> 1) & 3) == gc;
    const bool hs = r.scan && cs >= 0 && cs < ncols && ((cs >> 1) & 3) == gc;
    if (__any_sync(0xffffffffu, hx || hs)) {
#pragma unroll
        for (int j = 0; j < 32; ++j)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int col = 8 * j + 2 * gc + e;
                const float x = fs_score(FSHR_ACC(j, e), 0.0f, it);
                if (hs && col == cs && x > -INFINITY && x < INFINITY)
                    r.rec.sel_s = x;
                if (hx && col == cx) {
                    fs_record_push(&r.rec, r.d, (int32_t)(g0 + col), x);
                    FSHR_ACC(j, e) = -INFINITY;
                }
            }
    }
}

/* The thread's max m (logit units) and its lowest column, and per-block
 * sums S4[k] of exp(s - m * it) over its 4 tokens of block k.  Max and argmax
 * run as 8 independent chains: one chain of 64 compares is latency-bound. */
template <int HALF>
__device__ __forceinline__ void lse_part(const float (&acc)[128], float c, float &m, int &mcol,
                                         int gc, float (&S4)[NB])
{
    float mk[8];
#pragma unroll
    for (int k = 0; k < 8; ++k)
        mk[k] = fmaxf(fmaxf(FSHR_ACC(k, 0), FSHR_ACC(k, 1)), fmaxf(FSHR_ACC(k + 8, 0), FSHR_ACC(k + 8, 1)));
#pragma unroll
    for (int k = 0; k < 8; ++k)
        mk[k] = fmaxf(mk[k], fmaxf(fmaxf(FSHR_ACC(k + 16, 0), FSHR_ACC(k + 16, 1)),
                                   fmaxf(FSHR_ACC(k + 24, 0), FSHR_ACC(k + 24, 1))));
    m = fmaxf(fmaxf(fmaxf(mk[0], mk[1]), fmaxf(mk[2], mk[3])),
              fmaxf(fmaxf(mk[4], mk[5]), fmaxf(mk[6], mk[7])));
    /* the lowest column holding m: columns ascend with (j, e) */
    int ck[8];
#pragma unroll
    for (int k = 0; k < 8; ++k) {
        ck[k] = 1 << 20;
#pragma unroll
        for (int q = 3; q >= 0; --q)
#pragma unroll
            for (int e = 1; e >= 0; --e)
                ck[k] = FSHR_ACC(k + 8 * q, e) == m ? 8 * (k + 8 * q) + 2 * gc + e : ck[k];
    }
    mcol = min(min(min(ck[0], ck[1]), min(ck[2], ck[3])), min(min(ck[4], ck[5]), min(ck[6], ck[7])));
    const float nb = m > -INFINITY ? -m * c : 0.0f;
#pragma unroll
    for (int k = 0; k < NB; ++k)
        S4[k] = (ex2(fmaf(FSHR_ACC(2 * k, 0), c, nb)) + ex2(fmaf(FSHR_ACC(2 * k, 1), c, nb))) +
                (ex2(fmaf(FSHR_ACC(2 * k + 1, 0), c, nb)) + ex2(fmaf(FSHR_ACC(2 * k + 1, 1), c, nb)));
}

/* Reduce-scatter of the quad's block sums: lane gc ends with the whole sums
 * of blocks 2 gc, 2 gc + 1, 2 gc + 8, 2 gc + 9 (own[0..3]).  Two rounds: lanes
 * gc ^ 2 swap the halves of the blocks {0-3, 8-11} / {4-7, 12-15}, then lanes
 * gc ^ 1 swap pairs. */
__device__ __forceinline__ void reduce_scatter(const float (&S4)[NB], int gc, float (&own)[4])
{
    const bool hi2 = gc & 2, hi1 = gc & 1;
    float k8[8]; /* round 1: blocks {0..3, 8..11} (lanes 0, 1) or {4..7, 12..15} (lanes 2, 3) */
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int lo = (i & 3) + (i >> 2) * 8; /* blocks of lanes 0, 1 */
        const float mine = hi2 ? S4[lo + 4] : S4[lo];
        const float give = hi2 ? S4[lo] : S4[lo + 4];
        k8[i] = mine + __shfl_xor_sync(0xffffffffu, give, 2);
    }
    /* round 2: within k8 (blocks b, b+1, b+2, b+3, b+8, ...: base 0 or 4), lane
       bit 1 picks {2, 3, 10, 11} of the base, bit 0 clear {0, 1, 8, 9} */
#pragma unroll
    for (int i = 0; i < 4; ++i) {
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
template <int HALF>
__device__ __forceinline__ int quad_pick(const float (&acc)[128], int K, float c, float nb, int gc,
                                         float T, float *value)
{
    float x0 = -INFINITY, x1 = -INFINITY, x2 = -INFINITY, x3 = -INFINITY;
#pragma unroll
    for (int k = 0; k < NB; ++k) {
        x0 = k == K ? FSHR_ACC(2 * k, 0) : x0;
        x1 = k == K ? FSHR_ACC(2 * k, 1) : x1;
        x2 = k == K ? FSHR_ACC(2 * k + 1, 0) : x2;
        x3 = k == K ? FSHR_ACC(2 * k + 1, 1) : x3;
    }
    const float w0 = ex2(fmaf(x0, c, nb)), w1 = ex2(fmaf(x1, c, nb));
    const float w2 = ex2(fmaf(x2, c, nb)), w3 = ex2(fmaf(x3, c, nb));
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

/* The Gumbel keys of the blocks this lane owns; the quad's best key of the
 * tile, if it beats the row's best so far, is resolved to a token (only the
 * tile's best block can).  Whole warps call this. */
template <int HALF>
__device__ __forceinline__ void noise(RowState &r, const float (&acc)[128], int64_t g0, int gc,
                                      float Ml, float c, float it, const float (&own)[4])
{
    /* the quad reference in score units (own[] are sums of exp(s - M)) */
    const float M = Ml * it, nb = Ml > -INFINITY ? -Ml * c : 0.0f;
    /* global block of local block 0 (a multiple of 16 when the shard offset
       is) and the Philox words of the owned blocks */
    const uint32_t B0 = (uint32_t)(g0 / FS_NOISE_BLOCK);
    float bk = -INFINITY, bT = 0.0f;
    int bb = NB;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const uint32_t b = B0 + (uint32_t)own_block(gc, 2 * h);
        const bool any = r.noisy && (own[2 * h] > 0.0f || own[2 * h + 1] > 0.0f);
        uint32_t wg[2] = {0u, 0u}, wu[2] = {0u, 0u};
        if (any) {
            if ((b & 1u) == 0u) { /* blocks b, b + 1: one Philox call */
                const fs_u32x4 w = fs_philox_draw(r.d->seed, r.d->offset, r.d->position,
                                                  FS_PURPOSE_GUMBEL, b >> 1);
                wg[0] = w.v[0];
                wu[0] = w.v[1];
                wg[1] = w.v[2];
                wu[1] = w.v[3];
            } else {
                fs_block_words(r.d->seed, r.d->offset, r.d->position, b, &wg[0], &wu[0]);
                fs_block_words(r.d->seed, r.d->offset, r.d->position, b + 1, &wg[1], &wu[1]);
            }
        }
#pragma unroll
        for (int q = 0; q < 2; ++q) {
            const int i = 2 * h + q;
            if (any && own[i] > 0.0f) {
                const float lw = M + logf(own[i]);
                if (!fs_block_hopeless(lw, r.bar)) {
                    const float key = lw + fs_gumbel(wg[q]);
                    if (key > bk) { /* own blocks ascend within h; h = 0 blocks are lower */
                        bk = key;
                        bb = own_block(gc, i);
                        bT = fs_uniform(wu[q]) * own[i];
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
    const int col = quad_pick<HALF>(acc, bb, c, nb, gc, bT, &vc);
    const float sc = fs_score(vc, 0.0f, it);
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

/* One row's epilogue for one tile. */
template <int HALF>
__device__ __forceinline__ void row_tile(RowState &r, float (&acc)[128], int64_t v0, int ncols,
                                         int gc, const Args &a)
{
    const int64_t g0 = a.vocab_offset + v0;
    prepare<HALF>(r, acc, v0, ncols, gc, a);
    const float it = r.d->inv_temp, c = it * 1.4426950408889634f;
    float m, S4[NB];
    int mcol;
    lse_part<HALF>(acc, c, m, mcol, gc, S4);
    float tot = 0.0f;
#pragma unroll
    for (int k = 0; k < NB; ++k)
        tot += S4[k];
    /* a NaN or +inf value makes the max infinite or the sum NaN: the row's
       status is then FS_ROW_NONFINITE whatever else the record holds */
    if (r.scan) {
        if (m == INFINITY || !(tot == tot))
            r.rec.flags |= FS_REC_NONFINITE;
        else if (m > -INFINITY)
            fs_record_add_lse(&r.rec, fs_score(m, 0.0f, it), (int32_t)(g0 + mcol), tot);
    }
    if (!__any_sync(0xffffffffu, r.noisy))
        return;
    /* the quad's common reference for the block sums */
    const float Ml = quad_max(m);
    const float f = m > -INFINITY ? ex2((m - Ml) * c) : 0.0f;
#pragma unroll
    for (int k = 0; k < NB; ++k)
        S4[k] *= f;
    float own[4];
    reduce_scatter(S4, gc, own);
    noise<HALF>(r, acc, g0, gc, Ml, c, it, own);
}

#undef FSHR_ACC

/* s_desc: the CTA's row descriptors in shared memory (loaded by the caller). */
__device__ __forceinline__ void row_init(RowState &r, int row, const fs_row_desc *s_desc,
                                         int local, const Args &a)
{
    fs_record_init(&r.rec);
    r.row = row;
    r.d = s_desc + local;
    r.bar = -INFINITY;
    r.scan = row < a.rows && (r.d->flags & FS_ROWF_VALID) ? 1 : 0;
    r.noisy = r.scan && !(r.d->flags & FS_ROWF_GREEDY);
}

/* Merge the quad's records of the row (all 32 lanes take part) and write it
 * from lane gc == 0. */
__device__ __forceinline__ void row_finish(RowState &r, int gc, int slot, const Args &a)
{
    fs_record rec = r.rec;
#pragma unroll
    for (int m = 1; m < 4; m <<= 1) {
        const fs_record o = fs_record_shfl_xor(rec, m);
        fs_record_merge(&rec, &o);
    }
    if (gc == 0 && r.row < a.rows)
        a.recs[(int64_t)r.row * a.slots + slot] = rec;
}

constexpr int WU_BYTES = UNIT * BK * 2; /* one W TMA box */

/* Producer side of the pipeline, run by thread 0: step j of this CTA's
 * sequence (tile j / KB, k-block j % KB) into stage j % STAGES. */
__device__ __forceinline__ void issue_step(int j, const CUtensorMap *tmw, const CUtensorMap *tmh,
                                           uint32_t sW, uint32_t sH, uint32_t full, int rb, int u0,
                                           int u1, const Args &a)
{
    /* a W unit is read by the n_rb CTAs of its slot, about together; even
       with one row block evict_normal beats evict_first (see scan_hopper.cu);
       the policies are made here, not kept in registers across the epilogue */
    const uint64_t pol_w = policy_evict_normal();
    const uint64_t pol_h = policy_evict_last();
    const int t = j / a.kblocks, kb = j - t * a.kblocks;
    const int u = u0 + 2 * t, nu = u1 - u >= 2 ? 2 : 1;
    const int st = j % STAGES;
    mbar_expect_tx(full, (uint32_t)(nu * WU_BYTES + H_BYTES));
    for (int i = 0; i < nu; ++i)
        tma_load_2d(sW + st * W_BYTES + i * WU_BYTES, tmw, kb * BK, (u + i) * UNIT, full, pol_w);
    tma_load_2d(sH + st * H_BYTES, tmh, kb * BK, rb * BR, full, pol_h);
}

template <bool BF16>
__global__ void __launch_bounds__(THREADS, 1)
    fshr_scan_kernel(const __grid_constant__ CUtensorMap tmw, const __grid_constant__ CUtensorMap tmh,
                     const Args a)
{
    extern __shared__ unsigned char smem_raw[];
    unsigned char *smem =
        reinterpret_cast<unsigned char *>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~(uintptr_t)1023);
    const uint32_t sbase = smem_u32(smem);
    const uint32_t sW = sbase;
    const uint32_t sH = sbase + STAGES * W_BYTES;
    const uint32_t sBar = sbase + STAGES * STAGE_BYTES;
    unsigned int *tail_flag =
        reinterpret_cast<unsigned int *>(smem + STAGES * STAGE_BYTES + 2 * STAGES * 8);
    fs_row_desc *s_desc = reinterpret_cast<fs_row_desc *>(smem + STAGES * STAGE_BYTES + BAR_BYTES);
#define FSHR_FULL(s) (sBar + 8u * (uint32_t)(s))
#define FSHR_EMPTY(s) (sBar + 8u * (uint32_t)(STAGES + (s)))

    const int KB = a.kblocks;
    const int rb = blockIdx.x % a.n_rb, slot = blockIdx.x / a.n_rb;
    int u0, u1;
    slot_range(slot, a.slots, a.units, &u0, &u1);
    const int n_tiles = (u1 - u0 + 1) / 2;
    const int steps = n_tiles * KB;
    const bool producer = threadIdx.x == 0;
    if (producer) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(FSHR_FULL(s), 1);
            mbar_init(FSHR_EMPTY(s), NCW);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&tmw)) : "memory");
        asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&tmh)) : "memory");
        /* W and H do not depend on the prep kernel: start streaming now */
        for (int j = 0; j < STAGES && j < steps; ++j)
            issue_step(j, &tmw, &tmh, sW, sH, FSHR_FULL(j), rb, u0, u1, a);
    }
    __syncthreads();
    /* the row descriptors come from the prep kernel, which may still be
       running (programmatic launch) */
    fs_pdl_wait();
    fs_pdl_launch_dependents();

    const int ct = threadIdx.x, lane = ct & 31;
    const int cw = ct >> 7, wi = (ct >> 5) & 3;
    const int ga = lane >> 2, gc = lane & 3;
    if (ct < BR) {
        const int row = rb * BR + ct;
        if (row < a.rows) {
            s_desc[ct] = a.descs[row];
        } else {
            s_desc[ct].flags = 0;
            s_desc[ct].inv_temp = 1.0f;
            s_desc[ct].excluded = -1;
            s_desc[ct].selected = -1;
        }
    }
    __syncthreads();
    const int lr = cw * 64 + 16 * wi + ga; /* local row of r0; r1 is lr + 8 */
    RowState r0, r1;
    row_init(r0, rb * BR + lr, s_desc, lr, a);
    row_init(r1, rb * BR + lr + 8, s_desc, lr + 8, a);

    float acc[128];
#pragma unroll
    for (int i = 0; i < 128; ++i)
        acc[i] = 0.0f;
    /* step i's stage is free once all 8 warps are past it: refill it with
       step i + STAGES */
    auto release = [&](int i) {
        const int ps = i % STAGES;
        if (lane == 0)
            mbar_arrive(FSHR_EMPTY(ps));
        if (producer && i + STAGES < steps) {
            mbar_wait(FSHR_EMPTY(ps), (uint32_t)(i / STAGES) & 1u);
            issue_step(i + STAGES, &tmw, &tmh, sW, sH, FSHR_FULL(ps), rb, u0, u1, a);
        }
        __syncwarp();
    };
    int j = 0; /* next step */
    for (int t = 0; t < n_tiles; ++t) {
        for (int kb = 0; kb < KB; ++kb, ++j) {
            const int s = j % STAGES;
            mbar_wait(FSHR_FULL(s), (uint32_t)(j / STAGES) & 1u);
            __syncwarp();
            wg_fence();
            mma_kblock<256, BF16>(acc, sH + s * H_BYTES + cw * (64 * BK * 2), sW + s * W_BYTES,
                                  kb == 0);
            wg_commit();
            wg_wait<1>();
            fence_acc(acc);
            if (kb > 0)
                release(j - 1);
        }
        wg_wait<0>();
        fence_acc(acc);
        release(j - 1); /* before the epilogue: the next tile streams in under it */
        const int u = u0 + 2 * t;
        const int64_t v0 = (int64_t)u * UNIT;
        int64_t nc = (int64_t)(u1 - u) * UNIT;
        nc = nc < BV ? nc : BV;
        nc = nc < a.V - v0 ? nc : a.V - v0;
#if FSHR_PROBE_NO_EPI /* timing probe: the mainloop alone (wrong results) */
        r0.rec.best_key = fmaxf(r0.rec.best_key, fmaxf(acc[0], acc[127]) + (float)nc);
#else
        row_tile<0>(r0, acc, v0, (int)nc, gc, a);
        row_tile<1>(r1, acc, v0, (int)nc, gc, a);
#endif
    }
    row_finish(r0, gc, slot, a);
    row_finish(r1, gc, slot, a);
    if (a.tail_on)
        fs_op_tail(a.tail, a.recs, a.slots, a.rows, a.descs, ct, NCT, 1, tail_flag,
                   reinterpret_cast<fs_record *>(smem), /* the stages: all consumed */
                   (STAGES * STAGE_BYTES) / (int)sizeof(fs_record));
#undef FSHR_FULL
#undef FSHR_EMPTY
}

#else /* not sm_90a: the kernel exists (for the host stub) but is empty */

template <bool BF16>
__global__ void __launch_bounds__(THREADS, 1)
    fshr_scan_kernel(const __grid_constant__ CUtensorMap tmw, const __grid_constant__ CUtensorMap tmh,
                     const Args a)
{
}

#endif /* FSH_SM90A */

template <bool BF16> cudaError_t configure(int device)
{
    static unsigned long long done = 0;
    return set_smem_once(reinterpret_cast<const void *>(fshr_scan_kernel<BF16>), SMEM, &done,
                         device);
}

int64_t row_blocks(int64_t rows)
{
    return (rows + BR - 1) / BR;
}

} // namespace fshr

extern "C" int64_t fs_hopper_rows_slots(int64_t V_local, int64_t rows, int sm_count)
{
    if (V_local <= 0 || rows <= 0)
        return 0;
    const int64_t units = (V_local + fshr::UNIT - 1) / fshr::UNIT;
    int64_t slots = sm_count / fshr::row_blocks(rows);
    if (slots < 1)
        slots = 1;
    return slots < units ? slots : units;
}

extern "C" int fs_hopper_rows_launch(const void *W, const void *H, int is_bf16, int64_t V_local,
                                     int64_t D, int64_t rows, int64_t vocab_offset,
                                     int64_t global_vocab, const fs_row_desc *descs,
                                     const float *logit_bias, const uint32_t *allowed,
                                     fs_record *recs, int64_t slots, const fs_tail_args *tail,
                                     int device, cudaStream_t stream)
{
    using namespace fshr;
    const int64_t n_rb = row_blocks(rows);
    const int64_t units = (V_local + UNIT - 1) / UNIT;
    const int64_t grid = slots * n_rb;
    if (slots < 1 || slots > units || grid > INT32_MAX || rows > INT32_MAX || units > INT32_MAX)
        return (int)cudaErrorInvalidValue;
    Args a;
    fill_scan_args(a, descs, logit_bias, allowed, recs, rows, V_local, vocab_offset, global_vocab,
                   D, tail);
    a.n_rb = (int)n_rb;
    a.slots = (int)slots;
    a.units = (int)units;

    CUtensorMap tw, th;
    cudaError_t e = make_map(&tw, W, is_bf16, D, V_local, UNIT);
    if (e == cudaSuccess)
        e = make_map(&th, H, is_bf16, D, rows, BR);
    if (e != cudaSuccess)
        return (int)e;
    /* programmatic launch: overlaps the prep kernel (see fs_pdl_wait above) */
    fs_pdl_config pc(dim3((unsigned)grid), dim3(THREADS), SMEM, stream, true);
    if (is_bf16) {
        if ((e = configure<true>(device)) != cudaSuccess)
            return (int)e;
        e = cudaLaunchKernelEx(&pc.cfg, fshr_scan_kernel<true>, tw, th, a);
    } else {
        if ((e = configure<false>(device)) != cudaSuccess)
            return (int)e;
        e = cudaLaunchKernelEx(&pc.cfg, fshr_scan_kernel<false>, tw, th, a);
    }
    return (int)(e != cudaSuccess ? e : cudaGetLastError());
}
