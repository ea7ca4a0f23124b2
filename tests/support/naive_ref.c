/* The naive materialised oracle; see naive_ref.h. */
#include "naive_ref.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fs_test.h"
#include "philox.h" /* fs_block_words, fs_accept_uniform: the shared noise only */
#include "record.h" /* FS_NOISE_BLOCK */

double *ref_logits_stored(const void *logits, fs_dtype dt, int64_t rows, int64_t V)
{
    double *l = malloc(sizeof(double) * (size_t)(rows * V));
    for (int64_t i = 0; i < rows * V; ++i)
        l[i] = fst_get(logits, (size_t)i, dt);
    return l;
}

double *ref_logits_fused(const void *weight, const void *hidden, fs_dtype dt, int64_t rows,
                         int64_t V, int64_t D)
{
    double *w = malloc(sizeof(double) * (size_t)(V * D));
    double *h = malloc(sizeof(double) * (size_t)(rows * D));
    for (int64_t i = 0; i < V * D; ++i)
        w[i] = fst_get(weight, (size_t)i, dt);
    for (int64_t i = 0; i < rows * D; ++i)
        h[i] = fst_get(hidden, (size_t)i, dt);
    double *l = malloc(sizeof(double) * (size_t)(rows * V));
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t v = 0; v < V; ++v) {
            double acc = 0.0;
            for (int64_t k = 0; k < D; ++k)
                acc += h[r * D + k] * w[v * D + k];
            l[r * V + v] = acc;
        }
    free(w);
    free(h);
    return l;
}

int32_t ref_temperature_status(double T)
{
    if (isnan(T) || T < 0.0 || isinf(T) || (T > 0.0 && T < (double)FLT_MIN))
        return FS_ROW_BAD_TEMPERATURE;
    return FS_ROW_OK;
}

double ref_greedy_score(const double *l, const float *bias_row, const uint32_t *allowed_row,
                        int64_t v)
{
    if (!fst_allowed(allowed_row, v))
        return -INFINITY;
    return l[v] + (bias_row ? (double)bias_row[v] : 0.0);
}

int32_t ref_row_logp(const double *l, int64_t V, const float *bias_row,
                     const uint32_t *allowed_row, double T, double *logp)
{
    double inv = T > 0.0 ? 1.0 / T : 1.0;
    int any = 0, bad = 0;
    double m = -INFINITY;
    for (int64_t v = 0; v < V; ++v) {
        double s = ref_greedy_score(l, bias_row, allowed_row, v);
        if (!fst_allowed(allowed_row, v)) {
            logp[v] = -INFINITY;
            continue;
        }
        if (isnan(s) || s == INFINITY) {
            bad = 1;
            logp[v] = -INFINITY;
            continue;
        }
        s = s * inv;
        logp[v] = s;
        if (s > -INFINITY) {
            any = 1;
            if (s > m)
                m = s;
        }
    }
    if (bad)
        return FS_ROW_NONFINITE;
    if (!any)
        return FS_ROW_ALL_MASKED;
    /* materialise the probabilities, then their logs */
    double z = 0.0;
    for (int64_t v = 0; v < V; ++v)
        if (logp[v] > -INFINITY)
            z += exp(logp[v] - m);
    double lz = m + log(z);
    for (int64_t v = 0; v < V; ++v)
        if (logp[v] > -INFINITY)
            logp[v] -= lz;
    return FS_ROW_OK;
}

/* The library's sampler done naively in double (record.h): over log weights
 * lw (-inf = excluded), each noise block b of FS_NOISE_BLOCK ids gets the key
 * log(sum of its weights) + G_b; the best key wins (lowest block on ties) and
 * the token inside it is the first whose cumulative in-block probability
 * exceeds the block's second uniform. */
typedef struct block_draw {
    int32_t token;     /* -1 if no token has weight */
    int64_t block;     /* winning block */
    double best_key;   /* its key */
    double second_key; /* best key among the other blocks (-inf if none) */
    double target;     /* the in-block uniform */
} block_draw;

static double block_logweight(const double *lw, int64_t V, int64_t b)
{
    int64_t lo = b * FS_NOISE_BLOCK, hi = lo + FS_NOISE_BLOCK < V ? lo + FS_NOISE_BLOCK : V;
    double m = -INFINITY;
    for (int64_t v = lo; v < hi; ++v)
        if (lw[v] > m)
            m = lw[v];
    if (!(m > -INFINITY))
        return -INFINITY;
    double z = 0.0;
    for (int64_t v = lo; v < hi; ++v)
        if (lw[v] > -INFINITY)
            z += exp(lw[v] - m);
    return m + log(z);
}

static double block_key(const double *lw, int64_t V, uint64_t seed, uint64_t offset,
                        uint32_t pos, int64_t b, double *target)
{
    uint32_t wg, wu;
    fs_block_words(seed, offset, pos, (uint32_t)b, &wg, &wu);
    if (target)
        *target = (double)fs_uniform(wu);
    double w = block_logweight(lw, V, b);
    return w > -INFINITY ? w + (double)fs_gumbel(wg) : -INFINITY;
}

static block_draw block_gumbel(const double *lw, int64_t V, uint64_t seed, uint64_t offset,
                               uint32_t pos)
{
    block_draw r = {-1, -1, -INFINITY, -INFINITY, 0.0};
    double target = 0.0;
    for (int64_t b = 0; b * FS_NOISE_BLOCK < V; ++b) {
        double t, key = block_key(lw, V, seed, offset, pos, b, &t);
        if (!(key > -INFINITY))
            continue;
        if (r.block < 0 || key > r.best_key) { /* strict: ties keep the lower block */
            r.second_key = r.best_key;
            r.best_key = key;
            r.block = b;
            target = t;
        } else if (key > r.second_key) {
            r.second_key = key;
        }
    }
    if (r.block < 0)
        return r;
    r.target = target;
    int64_t lo = r.block * FS_NOISE_BLOCK, hi = lo + FS_NOISE_BLOCK < V ? lo + FS_NOISE_BLOCK : V;
    double lwb = block_logweight(lw, V, r.block), c = 0.0;
    for (int64_t v = lo; v < hi; ++v) {
        if (!(lw[v] > -INFINITY))
            continue;
        c += exp(lw[v] - lwb);
        r.token = (int32_t)v;
        if (target < c)
            break;
    }
    return r;
}

/* The smallest distance of the in-block uniform to a boundary of the
 * winner's cumulative interval that has another token behind it (how close
 * the draw came to a neighbour inside its block). */
static double block_cdf_margin(const double *lw, int64_t V, const block_draw *r)
{
    int64_t lo = r->block * FS_NOISE_BLOCK, hi = lo + FS_NOISE_BLOCK < V ? lo + FS_NOISE_BLOCK : V;
    double lwb = block_logweight(lw, V, r->block), c = 0.0, c_lo = 0.0, c_hi = 0.0;
    int before = 0, after = 0;
    for (int64_t v = lo; v < hi; ++v) {
        if (!(lw[v] > -INFINITY))
            continue;
        if (v < r->token) {
            before = 1;
        } else if (v == r->token) {
            c_lo = c;
            c_hi = c + exp(lw[v] - lwb);
        } else {
            after = 1;
        }
        c += exp(lw[v] - lwb);
    }
    double m = INFINITY;
    if (before)
        m = r->target - c_lo;
    if (after)
        m = fmin(m, c_hi - r->target);
    return m;
}

/* Decision margin of a draw: how close it came to another outcome (the
 * runner-up block's key, or a neighbour inside the block). */
static double block_margin(const double *lw, int64_t V, const block_draw *r)
{
    return fmin(r->best_key - r->second_key, block_cdf_margin(lw, V, r));
}

/* How far `token` is from being the draw: 0 if it is; the key gap of its
 * block if that block lost; the distance of the in-block uniform to its
 * cumulative interval if its block won; inf if it has no weight. */
static double block_gap(const double *lw, int64_t V, uint64_t seed, uint64_t offset,
                        uint32_t pos, int32_t token)
{
    if (token < 0 || token >= V || !(lw[token] > -INFINITY))
        return INFINITY;
    block_draw r = block_gumbel(lw, V, seed, offset, pos);
    if (r.token == token)
        return 0.0;
    int64_t b = token / FS_NOISE_BLOCK;
    if (b != r.block)
        return r.best_key - block_key(lw, V, seed, offset, pos, b, NULL);
    int64_t lo = b * FS_NOISE_BLOCK;
    double lwb = block_logweight(lw, V, b), c = 0.0;
    for (int64_t v = lo; v < token; ++v)
        if (lw[v] > -INFINITY)
            c += exp(lw[v] - lwb);
    double c1 = c + exp(lw[token] - lwb);
    return r.target < c ? c - r.target : r.target - c1;
}

/* argmax of l + b over allowed (lowest id on ties); second = runner-up score */
static int32_t greedy_max(const double *l, int64_t V, const float *b, const uint32_t *a,
                          double *best_s, double *second_s)
{
    int32_t best = -1;
    double bs = -INFINITY, ss = -INFINITY;
    for (int64_t v = 0; v < V; ++v) {
        double s = ref_greedy_score(l, b, a, v);
        if (!(s > -INFINITY))
            continue;
        if (best < 0 || s > bs) {
            ss = bs;
            bs = s;
            best = (int32_t)v;
        } else if (s > ss) {
            ss = s;
        }
    }
    if (best_s)
        *best_s = bs;
    if (second_s)
        *second_s = ss;
    return best;
}

static const float *bias_row(const fs_sampling *p, int64_t row, int64_t V)
{
    return p && p->logit_bias ? p->logit_bias + row * V : NULL;
}

static const uint32_t *allowed_row(const fs_sampling *p, int64_t row, int64_t V)
{
    return p && p->allowed ? p->allowed + row * fst_mask_words(V) : NULL;
}

static uint64_t offset_of(const fs_sampling *p, int64_t r)
{
    return p->offset ? p->offset[r] : 0;
}

void ref_sample(const double *logits, int64_t rows, int64_t V, const fs_sampling *p,
                int32_t *tokens, double *logprobs, int32_t *status, double *margin)
{
    double *logp = malloc(sizeof(double) * (size_t)V);
    for (int64_t r = 0; r < rows; ++r) {
        const double *l = logits + r * V;
        double T = p->temperature[r];
        int32_t st = ref_temperature_status(T);
        if (st == FS_ROW_OK)
            st = ref_row_logp(l, V, bias_row(p, r, V), allowed_row(p, r, V), T, logp);
        status[r] = st;
        if (st != FS_ROW_OK) {
            tokens[r] = -1;
            if (logprobs)
                logprobs[r] = NAN;
            if (margin)
                margin[r] = INFINITY;
            continue;
        }
        int32_t t;
        double m;
        if (T == 0.0) {
            double bk, sk;
            t = greedy_max(l, V, bias_row(p, r, V), allowed_row(p, r, V), &bk, &sk);
            m = bk - sk;
        } else {
            block_draw dr = block_gumbel(logp, V, p->seed[r], offset_of(p, r), 0);
            t = dr.token;
            m = block_margin(logp, V, &dr);
        }
        tokens[r] = t;
        if (logprobs)
            logprobs[r] = logp[t];
        if (margin)
            margin[r] = m;
    }
    free(logp);
}

double ref_sample_gap(const double *logits, int64_t V, const fs_sampling *p, int64_t r,
                      int32_t token)
{
    if (token < 0 || token >= V)
        return INFINITY;
    const double *l = logits + r * V;
    double T = p->temperature[r];
    if (T == 0.0) {
        double bk, key;
        greedy_max(l, V, bias_row(p, r, V), allowed_row(p, r, V), &bk, NULL);
        key = ref_greedy_score(l, bias_row(p, r, V), allowed_row(p, r, V), token);
        return key > -INFINITY ? bk - key : INFINITY;
    }
    double *logp = malloc(sizeof(double) * (size_t)V);
    ref_row_logp(l, V, bias_row(p, r, V), allowed_row(p, r, V), T, logp);
    double gap = block_gap(logp, V, p->seed[r], offset_of(p, r), 0, token);
    free(logp);
    return gap;
}

void ref_argmax(const double *logits, int64_t rows, int64_t V, int32_t *tokens, double *values,
                int32_t *status, double *margin)
{
    for (int64_t r = 0; r < rows; ++r) {
        const double *l = logits + r * V;
        int32_t st = FS_ROW_OK;
        for (int64_t v = 0; v < V; ++v)
            if (isnan(l[v]) || l[v] == INFINITY)
                st = FS_ROW_NONFINITE;
        double bs = -INFINITY, ss = -INFINITY;
        int32_t t = st == FS_ROW_OK ? greedy_max(l, V, NULL, NULL, &bs, &ss) : -1;
        if (st == FS_ROW_OK && t < 0)
            st = FS_ROW_ALL_MASKED;
        status[r] = st;
        tokens[r] = st == FS_ROW_OK ? t : -1;
        if (values)
            values[r] = st == FS_ROW_OK ? bs : NAN;
        if (margin)
            margin[r] = st == FS_ROW_OK ? bs - ss : INFINITY;
    }
}

/* Everything the oracle decides for one verify request. */
typedef struct req_view {
    int32_t status;
    int64_t begin, n, row0; /* drafts [begin, begin+n), target rows row0 .. row0+n */
} req_view;

static req_view view_request(const double *logits, int64_t V, const fs_drafts *d,
                             const fs_sampling *p, int64_t r, double *logp_scratch)
{
    req_view q = {FS_ROW_OK, 0, 0, 0};
    const int32_t *o = d->draft_offsets;
    int64_t R = d->num_requests;
    if (o[0] != 0 || (int64_t)o[R] != d->num_draft_tokens) {
        q.status = FS_ROW_BAD_OFFSETS;
        return q;
    }
    int64_t b = o[r], e = o[r + 1];
    if (b < 0 || e < b || e > d->num_draft_tokens || e - b > d->max_drafts) {
        q.status = FS_ROW_BAD_OFFSETS;
        return q;
    }
    for (int64_t i = b; i < e; ++i)
        if (d->draft_tokens[i] < 0 || d->draft_tokens[i] >= V) {
            q.status = FS_ROW_BAD_DRAFT;
            return q;
        }
    q.status = ref_temperature_status(p->temperature[r]);
    if (q.status != FS_ROW_OK)
        return q;
    q.begin = b;
    q.n = e - b;
    q.row0 = b + r;
    /* every target row the request owns must be usable */
    for (int64_t j = 0; j <= q.n && q.status == FS_ROW_OK; ++j) {
        int64_t row = q.row0 + j;
        q.status = ref_row_logp(logits + row * V, V, bias_row(p, row, V), allowed_row(p, row, V),
                                p->temperature[r], logp_scratch);
    }
    return q;
}

/* One step of the walk: the oracle's decision at position j of request r.
 * Fills logp (target) and returns 1 if the draft is accepted; otherwise sets
 * *emit to the recovered (j < n) or bonus (j == n) token.  accept_margin and
 * emit_margin are the decision margins. */
static int decide(const double *logits, int64_t V, const fs_drafts *d, const fs_sampling *p,
                  int64_t r, const req_view *q, int64_t j, double *logp, double *resid,
                  int32_t *emit, double *accept_margin, double *emit_margin)
{
    int64_t row = q->row0 + j;
    const double *l = logits + row * V;
    const float *b = bias_row(p, row, V);
    const uint32_t *a = allowed_row(p, row, V);
    double T = p->temperature[r];
    uint64_t seed = p->seed[r], off = offset_of(p, r);
    ref_row_logp(l, V, b, a, T, logp);
    *accept_margin = INFINITY;
    *emit_margin = INFINITY;
    int32_t x = j < q->n ? d->draft_tokens[q->begin + j] : -1;
    if (T == 0.0) {
        double bs, ss;
        int32_t am = greedy_max(l, V, b, a, &bs, &ss);
        if (x >= 0) {
            double sx = ref_greedy_score(l, b, a, x);
            if (am == x) {
                *accept_margin = bs - ss;
                return 1;
            }
            *accept_margin = bs - sx;
        }
        *emit = am;
        *emit_margin = bs - ss;
        return 0;
    }
    if (x >= 0) {
        double px = exp(logp[x]);
        double u = (double)fs_accept_uniform(seed, off, (uint32_t)j);
        *accept_margin = fabs(u - px);
        if (u <= px)
            return 1;
        /* residual: p with x zeroed, renormalised, materialised */
        double z = 0.0;
        for (int64_t v = 0; v < V; ++v)
            z += v == x ? 0.0 : exp(logp[v]);
        double lz = log(z);
        for (int64_t v = 0; v < V; ++v)
            resid[v] = v == x || !(logp[v] > -INFINITY) ? -INFINITY : logp[v] - lz;
    } else {
        memcpy(resid, logp, sizeof(double) * (size_t)V);
    }
    block_draw dr = block_gumbel(resid, V, seed, off, (uint32_t)j);
    *emit = dr.token;
    *emit_margin = block_margin(resid, V, &dr);
    return 0;
}

void ref_verify(const double *logits, int64_t V, const fs_drafts *d, const fs_sampling *p,
                int32_t *tokens, int32_t *num_emitted, double *logprobs, int32_t *status,
                double *margin)
{
    int64_t stride = d->max_drafts + 1;
    double *logp = malloc(sizeof(double) * (size_t)V);
    double *resid = malloc(sizeof(double) * (size_t)V);
    for (int64_t r = 0; r < d->num_requests; ++r) {
        int32_t *t = tokens + r * stride;
        double *lp = logprobs ? logprobs + r * stride : NULL;
        for (int64_t k = 0; k < stride; ++k) {
            t[k] = -1;
            if (lp)
                lp[k] = NAN;
        }
        req_view q = view_request(logits, V, d, p, r, logp);
        status[r] = q.status;
        num_emitted[r] = 0;
        if (margin)
            margin[r] = INFINITY;
        if (q.status != FS_ROW_OK)
            continue;
        double mm = INFINITY;
        int64_t k = 0;
        for (int64_t j = 0; j <= q.n; ++j) {
            int32_t e = -1;
            double am, em;
            int acc = decide(logits, V, d, p, r, &q, j, logp, resid, &e, &am, &em);
            if (am < mm)
                mm = am;
            if (acc) {
                int32_t x = d->draft_tokens[q.begin + j];
                t[k] = x;
                if (lp)
                    lp[k] = logp[x];
                ++k;
                continue;
            }
            if (em < mm)
                mm = em;
            t[k] = e;
            if (lp)
                lp[k] = logp[e];
            ++k;
            break;
        }
        num_emitted[r] = (int32_t)k;
        if (margin)
            margin[r] = mm;
    }
    free(logp);
    free(resid);
}

double ref_verify_gap(const double *logits, int64_t V, const fs_drafts *d, const fs_sampling *p,
                      int64_t r, const int32_t *other, int32_t other_n)
{
    double *logp = malloc(sizeof(double) * (size_t)V);
    double *resid = malloc(sizeof(double) * (size_t)V);
    double gap = INFINITY;
    req_view q = view_request(logits, V, d, p, r, logp);
    if (q.status != FS_ROW_OK || other_n < 1 || other_n > q.n + 1)
        goto done;
    for (int64_t j = 0; j <= q.n; ++j) {
        int other_acc = j < other_n - 1;
        if (other_acc && other[j] != d->draft_tokens[q.begin + j])
            goto done; /* an "accepted" token that is not the draft */
        int32_t e = -1;
        double am, em;
        int acc = decide(logits, V, d, p, r, &q, j, logp, resid, &e, &am, &em);
        if (acc != other_acc) {
            gap = am;
            goto done;
        }
        if (acc)
            continue;
        if (other[j] == e) {
            gap = 0.0;
            goto done;
        }
        /* both stopped here with different tokens: key gap of the other's choice */
        int32_t o = other[j];
        if (o < 0 || o >= V)
            goto done;
        if (p->temperature[r] == 0.0) {
            int64_t row = q.row0 + j;
            double bs;
            greedy_max(logits + row * V, V, bias_row(p, row, V), allowed_row(p, row, V), &bs,
                       NULL);
            double so = ref_greedy_score(logits + row * V, bias_row(p, row, V),
                                         allowed_row(p, row, V), o);
            gap = so > -INFINITY ? bs - so : INFINITY;
        } else {
            gap = block_gap(resid, V, p->seed[r], offset_of(p, r), (uint32_t)j, o);
        }
        goto done;
    }
done:
    free(logp);
    free(resid);
    return gap;
}

/* ---- the draw primitives, for the tree oracle (naive_tree.c) ------------ */

int32_t ref_block_draw(const double *lw, int64_t V, uint64_t seed, uint64_t offset, uint32_t pos,
                       double *margin)
{
    block_draw r = block_gumbel(lw, V, seed, offset, pos);
    if (margin)
        *margin = r.token >= 0 ? block_margin(lw, V, &r) : INFINITY;
    return r.token;
}

int32_t ref_greedy_max(const double *l, int64_t V, const float *bias_row,
                       const uint32_t *allowed_row, double *best_s, double *second_s)
{
    return greedy_max(l, V, bias_row, allowed_row, best_s, second_s);
}
