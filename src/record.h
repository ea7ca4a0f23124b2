/* The vocabulary-scan engine's summary record and its operations: push one
 * token's score into a record, push one noise block's sampling candidate,
 * and merge two records.
 *
 * Every op (sample, draft argmax, verify) is the same scan: for each
 * (row, vocabulary tile) a record is built by pushing the tile's tokens, the
 * records of a row are merged, and a per-op finalizer reads the merged record.
 * Merge is associative and commutative on everything that picks a token (ties
 * are broken towards the lower token id, never by arrival order), so tile
 * size, tile order and the number of GPUs never change which token wins.
 * Only sum_exp carries order-dependent float rounding.
 *
 * Sampling is exact two-level Gumbel-max over noise blocks of FS_NOISE_BLOCK
 * consecutive global ids (block b = id / 16).  For a row with scores s_i:
 *   S_b   = sum over the block's eligible tokens of exp(s_i - m_b), m_b their max
 *   key_b = m_b + log S_b + G_b,   G_b = -log(-log u_b)   (Gumbel, Philox)
 *   the block with the largest key wins (the lowest on ties), and inside it
 *   the token is drawn by inverse CDF with a second uniform v_b:
 *   the first eligible i (ascending id) with v_b S_b < sum_{j <= i} exp(s_j - m_b).
 * P(block b) = S_b e^{m_b} / Z because the max of Gumbel-perturbed log
 * weights is a softmax draw, and P(i | b) = e^{s_i} / (S_b e^{m_b}), so
 * P(i) = softmax(s)_i exactly.  Per token this costs one exponential (which
 * the log-sum-exp needs anyway) instead of a Philox draw and two logarithms;
 * the noise, the logs and the inverse CDF are per block.  Tiles and shards
 * hold whole blocks, so records still merge in any order.  "Eligible":
 * finite score, allowed, and not the row's excluded token.
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
    int32_t max_id;  /* its token id, lowest on ties; -1 if none.  In rows
                        that are not greedy, any id of its noise block
                        (fs_record_push_block: only greedy rows read it) */
    float sum_exp;   /* sum over allowed tokens of exp(s - max_s) */
    float best_key;  /* largest block key (see above) over blocks with an eligible token */
    int32_t best_id; /* the token drawn inside that block; -1 if none */
    float best_s;    /* score of best_id */
    float sel_s;     /* score of the row's selected token if seen and allowed, else -inf */
    uint32_t flags;
} fs_record;

enum fs_row_flags {
    FS_ROWF_VALID = 1u,  /* the row is to be scanned; others are skipped */
    FS_ROWF_GREEDY = 2u, /* temperature 0: no noise, the finalizer uses the argmax */
    FS_ROWF_FILTER = 4u  /* CUDA scans: the row's filters are active, keep its candidate
                            lists (src/cand_list.h) */
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

#if defined(__CUDACC__)
/* 2^x on the special-function unit, denormal results flushed to 0 (what
 * __expf compiles to under -ftz). */
__device__ __forceinline__ float fs_ex2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

/* max that is NaN when either input is (fmaxf drops a NaN): the argmax-only
 * epilogues have no sum of exponentials to carry a NaN. */
__device__ __forceinline__ float fs_fmax_nan(float a, float b)
{
    float y;
    asm("max.NaN.f32 %0, %1, %2;" : "=f"(y) : "f"(a), "f"(b));
    return y;
}
#endif

/* exp for the per-token and per-block weights: the hardware exponential on
 * the GPU (relative error ~1e-6, far inside the near-tie tolerance the CPU
 * oracle is compared with), libm on the host.  ex2.approx.ftz, as __expf
 * compiles under -ftz: a weight below 2^-126 (a token e^-87 times less
 * likely than its block's max) is 0, and each exponential is two
 * instructions, where __expf's denormal handling made it five -- the scan
 * epilogue takes one a token. */
FS_HD float fs_exp(float x)
{
#if defined(__CUDA_ARCH__)
    return fs_ex2(x * 1.4426950408889634f);
#else
    return expf(x);
#endif
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

/* The score of a row without bias: fs_score(logit, 0, inv_temp) but for a
 * logit of -0, whose score stays -0 (l + 0 is +0).  The two zeros compare
 * equal and give the same exponentials, so only the sign of a zero logit
 * that draft argmax reports can differ; the add the compiler may not drop
 * was one instruction a token in the GPU epilogue. */
FS_HD float fs_score_nobias(float logit, float inv_temp)
{
    return logit * inv_temp;
}

/* Fold a set of tokens whose max score is m (first reached at id mid) and
 * whose sum of exp(s - m) is S into the log-sum-exp and the argmax. */
FS_HD void fs_record_add_lse(fs_record *r, float m, int32_t mid, float S)
{
    if (r->max_id < 0) {
        r->max_s = m;
        r->max_id = mid;
        r->sum_exp = S;
    } else if (fs_beats(m, mid, r->max_s, r->max_id)) {
        r->sum_exp = r->sum_exp * fs_exp(r->max_s - m) + S;
        r->max_s = m;
        r->max_id = mid;
    } else {
        r->sum_exp += S * fs_exp(m - r->max_s);
    }
}

/* Push one allowed token with score s into the log-sum-exp, the argmax and
 * the selected score, without noise (greedy use, and the excluded token of a
 * block).  A disallowed token is simply not pushed; s = -inf means
 * probability zero and is skipped; NaN and +inf flag the record. */
FS_HD void fs_record_push(fs_record *r, const fs_row_desc *d, int32_t id, float s)
{
    if (!(s > -INFINITY && s < INFINITY)) {
        if (s != -INFINITY)
            r->flags |= FS_REC_NONFINITE;
        return;
    }
    fs_record_add_lse(r, s, id, 1.0f);
    if (id == d->selected)
        r->sel_s = s;
}

#define FS_NOISE_BLOCK 16

/* A block key is at most m_b + log 16 + 16.64 (the largest Gumbel value,
 * -log(-log(1 - 2^-24))): a block whose max is this far below the record's
 * best key cannot win, and its Philox draw and logarithms are skipped.  The
 * relative term covers the rounding of m_b + log S_b + G_b for large |m_b|. */
#define FS_BLOCK_KEY_REACH 19.5f

FS_HD int fs_block_hopeless(float m, float best_key)
{
    return m - best_key < -(FS_BLOCK_KEY_REACH + 4e-6f * (fabsf(m) + fabsf(best_key)));
}

/* Inverse CDF inside a block, over its weights w_i = exp(s_i - m) (0 for a
 * token that takes no part: -inf, disallowed, excluded, or underflowed): the
 * first i of positive weight with target < c_i, where c_i adds the weights
 * one at a time in token order; when rounding leaves the target past the
 * total, the last token of positive weight (-1 if none).  Adding a weight of
 * 0 leaves c as it is, so the running sum is the one that skips those tokens
 * (the CPU's and every kernel's, bit for bit: kept_block_draw in
 * kernels/filter_resolve.cuh repeats it).  Selects, not a loop that exits at
 * the pick: a warp runs this whenever one of its lanes' keys can win, and
 * the exiting loop -- an exponential and a branch per step -- put 16
 * dependent steps on its path.  Returns the index, and the token's score v_i
 * in *picked_s. */
FS_HD int fs_block_pick(const float *v, const float *w, float target, float *picked_s)
{
    float c = 0.0f, first_s = -INFINITY, last_s = -INFINITY;
    int first = -1, last = -1;
    FS_UNROLL_HOT
    for (int i = 0; i < FS_NOISE_BLOCK; ++i) {
        c += w[i];
        const int pos = w[i] > 0.0f, take = first < 0 && pos && target < c;
        last = pos ? i : last;
        last_s = pos ? v[i] : last_s;
        first = take ? i : first;
        first_s = take ? v[i] : first_s;
    }
    /* the score by selects in the loop, not v[first]: an index known only
       at run time would put the block's scores in local memory */
    *picked_s = first >= 0 ? first_s : last_s;
    return first >= 0 ? first : last;
}

/* Offer a block's candidate with its noise words wg, wu (fs_block_words):
 * key m + log S + G for the block whose max score is m, weights w and sum S,
 * drawing the token only when the key can win the record.  v: the values the
 * pick reads, the block's scores (scale 1) or its logits (scale the row's
 * inverse temperature: the picked token's score, v_i * scale, goes to best_s
 * as fs_score_nobias gives it).  The Hopper tile kernels' plain blocks
 * (kernels/scan_hopper.cu) call it with logits and words drawn for two
 * blocks at once. */
FS_HD void fs_record_offer_words(fs_record *r, int32_t id0, const float *v, const float *w,
                                 float m, float S, uint32_t wg, uint32_t wu, float scale)
{
    const float key = m + logf(S) + fs_gumbel(wg);
    if (!(key >= r->best_key))
        return;
    float vi;
    const int i = fs_block_pick(v, w, fs_uniform(wu) * S, &vi);
    if (i >= 0 && fs_beats(key, id0 + i, r->best_key, r->best_id)) {
        r->best_key = key;
        r->best_id = id0 + i;
        r->best_s = vi * scale;
    }
}

/* fs_record_offer_words for a block of scores v (weights w, fs_block_weights),
 * its words drawn here. */
FS_HD void fs_record_offer_block(fs_record *r, const fs_row_desc *d, int32_t id0, const float *v,
                                 const float *w, float m, float S)
{
    uint32_t wg, wu;
    fs_block_words(d->seed, d->offset, d->position, (uint32_t)id0 / FS_NOISE_BLOCK, &wg, &wu);
    fs_record_offer_words(r, id0, v, w, m, S, wg, wu, 1.0f);
}

/* The largest of a block's FS_NOISE_BLOCK scores, by a tree of fmaxf (not
 * a 16-step dependency chain: the GPU epilogue waits on it). */
FS_HD float fs_block_max(const float *v)
{
    float mx[FS_NOISE_BLOCK / 2];
    for (int i = 0; i < FS_NOISE_BLOCK / 2; ++i)
        mx[i] = fmaxf(v[2 * i], v[2 * i + 1]);
    for (int w = FS_NOISE_BLOCK / 4; w > 0; w >>= 1)
        for (int i = 0; i < w; ++i)
            mx[i] = fmaxf(mx[2 * i], mx[2 * i + 1]);
    return mx[0];
}

/* The lowest position of a block's scores holding m (FS_NOISE_BLOCK if
 * none), by a tree. */
FS_HD int fs_block_first_at(const float *v, float m)
{
    int at[FS_NOISE_BLOCK / 2];
    for (int i = 0; i < FS_NOISE_BLOCK / 2; ++i)
        at[i] = v[2 * i] == m ? 2 * i : v[2 * i + 1] == m ? 2 * i + 1 : FS_NOISE_BLOCK;
    for (int w = FS_NOISE_BLOCK / 4; w > 0; w >>= 1)
        for (int i = 0; i < w; ++i)
            at[i] = at[2 * i] < at[2 * i + 1] ? at[2 * i] : at[2 * i + 1];
    return at[0];
}

/* The weights exp(v_i - m) of a block's scores (m their max; 0 where v_i is
 * -inf), one exponential a token: the block's sum and its inverse CDF both
 * read them. */
FS_HD void fs_block_weights(const float *v, float m, float *w)
{
    FS_UNROLL_HOT
    for (int i = 0; i < FS_NOISE_BLOCK; ++i)
        w[i] = fs_exp(v[i] - m);
}

/* The sum of a block's weights, by a tree of pairs.  The GPU resolve's
 * kept_block_draw (kernels/filter_resolve.cuh) repeats these pairs and this
 * tree unrolled, in a unit that keeps this loop rolled: a block's key must
 * round alike on both paths, which test_gpu_filter's token-for-token
 * agreement with the CPU checks. */
FS_HD float fs_block_sum(const float *w)
{
    float e[FS_NOISE_BLOCK / 2];
    for (int i = 0; i < FS_NOISE_BLOCK / 2; ++i)
        e[i] = w[2 * i] + w[2 * i + 1];
    for (int k = FS_NOISE_BLOCK / 4; k > 0; k >>= 1)
        for (int i = 0; i < k; ++i)
            e[i] = e[2 * i] + e[2 * i + 1];
    return e[0];
}

/* Push one noise block: tokens id0 .. id0 + n - 1, all in block
 * id0 / FS_NOISE_BLOCK (the whole block, or its part inside the vocabulary),
 * with scores s (-inf for disallowed tokens).  Everything a record holds --
 * log-sum-exp, argmax, selected score, non-finite flag and the block's
 * sampling candidate -- with one exponential per token.  The excluded token
 * goes through fs_record_push: it counts in the log-sum-exp but not in the
 * noise, and the block's sum is taken relative to the max of the others so
 * that it cannot underflow when the excluded token dominates.
 * fs_record_push_block_draw with draw = 0 leaves the sampling candidate out
 * (best_* stay as they are): a filtered row's candidate comes from its kept
 * set alone (the resolve's kept record, or the second pass), so the Hopper
 * tile kernel's filtered rows skip the block's Philox draw, logarithm and
 * pick; everything else is the same bits as the full push. */
FS_HD void fs_record_push_block_draw(fs_record *r, const fs_row_desc *d, int32_t id0, int n,
                                     const float *s, int draw)
{
    /* v: the scores that take part in the block's max, sum and noise
       (finite, in range, not excluded); the reductions are trees, not
       16-step dependency chains (the GPU epilogue waits on them).  Whether
       the excluded or selected token lies in the block is asked once: in
       most blocks neither does, and those test finiteness per block, not
       per token -- a NaN or +inf score flags the record, and the row's
       status is then FS_ROW_NONFINITE whatever else the record holds, so
       such a block need not add the rest */
    float v[FS_NOISE_BLOCK];
    float m, w[FS_NOISE_BLOCK], S;
    const int64_t xo = (int64_t)d->excluded - id0, so = (int64_t)d->selected - id0;
    if ((xo < 0 || xo >= n) && (so < 0 || so >= n)) {
        FS_UNROLL_HOT
        for (int i = 0; i < FS_NOISE_BLOCK; ++i)
            v[i] = i < n ? s[i] : -INFINITY;
        /* fs_block_max drops NaN unless every score is NaN or -inf: m is
           +inf if a score is, finite if one is, else -inf or NaN */
        m = fs_block_max(v);
        if (!(m > -INFINITY && m < INFINITY)) {
            FS_UNROLL_HOT
            for (int i = 0; i < FS_NOISE_BLOCK; ++i)
                if (!(v[i] < INFINITY) && !(v[i] == -INFINITY))
                    r->flags |= FS_REC_NONFINITE;
            return;
        }
        fs_block_weights(v, m, w);
        S = fs_block_sum(w);
        /* with m finite, a weight is in [0, 1] unless its score is NaN */
        if (!(S == S)) {
            r->flags |= FS_REC_NONFINITE;
            return;
        }
    } else {
        FS_UNROLL_HOT
        for (int i = 0; i < FS_NOISE_BLOCK; ++i) {
            float x = i < n ? s[i] : -INFINITY;
            if (!(x > -INFINITY && x < INFINITY)) {
                if (x != -INFINITY)
                    r->flags |= FS_REC_NONFINITE;
                x = -INFINITY;
            } else if (i == xo) {
                fs_record_push(r, d, id0 + i, x);
                x = -INFINITY;
            } else if (i == so) {
                r->sel_s = x;
            }
            v[i] = x;
        }
        m = fs_block_max(v);
        if (!(m > -INFINITY))
            return;
        fs_block_weights(v, m, w);
        S = fs_block_sum(w);
    }
    /* the argmax's id is read for greedy rows alone (their token) and as
       "some token is allowed" (fs_record_status): in other rows the block's
       first id stands in for it, which saves the epilogue its search (32
       compares and selects a block).  Ties between blocks still go to the
       lowest, so every merge order keeps the same one */
    const int greedy = (d->flags & FS_ROWF_GREEDY) != 0;
    fs_record_add_lse(r, m, id0 + (greedy ? fs_block_first_at(v, m) : 0), S);
    if (draw && !greedy && !fs_block_hopeless(m, r->best_key))
        fs_record_offer_block(r, d, id0, v, w, m, S);
}

FS_HD void fs_record_push_block(fs_record *r, const fs_row_desc *d, int32_t id0, int n,
                                const float *s)
{
    fs_record_push_block_draw(r, d, id0, n, s, 1);
}

FS_HD void fs_record_merge(fs_record *a, const fs_record *b)
{
    if (b->max_id >= 0)
        fs_record_add_lse(a, b->max_s, b->max_id, b->sum_exp);
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
