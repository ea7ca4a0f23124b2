/* Shared helpers of the CPU test suite; see fs_test.h. */
#define _POSIX_C_SOURCE 200809L
#include "fs_test.h"

#include "cpu_backend.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gsl/gsl_cdf.h>

/* ---- dtypes ------------------------------------------------------------- */

uint16_t fst_f32_to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u)
        return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN, sign kept */
    return (uint16_t)((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
}

float fst_bf16_to_f32(uint16_t h)
{
    uint32_t x = (uint32_t)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

uint16_t fst_f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7FFFFFFFu;
    if (ax > 0x7F800000u)
        return sign | 0x7E00u;                /* NaN */
    if (ax >= 0x477FF000u)                    /* >= 65520 rounds (to even) past 65504 */
        return sign | 0x7C00u;
    if (ax < 0x38800000u) {                   /* below 2^-14: half subnormal, unit 2^-24 */
        float a;
        memcpy(&a, &ax, 4);
        double m = nearbyint((double)a * 16777216.0); /* exact product, RNE */
        return sign | (uint16_t)m;            /* m = 0x400 is the smallest normal: right */
    }
    uint32_t e = (ax >> 23) - 127u + 15u;
    uint32_t mant = ax & 0x7FFFFFu;
    uint32_t h = (e << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
        ++h; /* a carry into the exponent is the right answer */
    return sign | (uint16_t)h;
}

float fst_f16_to_f32(uint16_t h)
{
    int sign = (h >> 15) & 1;
    int e = (h >> 10) & 0x1F;
    int m = h & 0x3FF;
    double v;
    if (e == 0x1F)
        v = m ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp((double)m, -24);
    else
        v = ldexp((double)(1024 + m), e - 25);
    return (float)(sign ? -v : v);
}

size_t fst_dtype_size(fs_dtype dt)
{
    return dt == FS_DTYPE_F32 ? 4 : 2;
}

const char *fst_dtype_name(fs_dtype dt)
{
    return dt == FS_DTYPE_F32 ? "f32" : dt == FS_DTYPE_F16 ? "f16" : "bf16";
}

void fst_set(void *buf, size_t i, fs_dtype dt, float v)
{
    switch (dt) {
    case FS_DTYPE_F32: ((float *)buf)[i] = v; break;
    case FS_DTYPE_F16: ((uint16_t *)buf)[i] = fst_f32_to_f16(v); break;
    default: ((uint16_t *)buf)[i] = fst_f32_to_bf16(v); break;
    }
}

double fst_get(const void *buf, size_t i, fs_dtype dt)
{
    switch (dt) {
    case FS_DTYPE_F32: return ((const float *)buf)[i];
    case FS_DTYPE_F16: return fst_f16_to_f32(((const uint16_t *)buf)[i]);
    default: return fst_bf16_to_f32(((const uint16_t *)buf)[i]);
    }
}

void *fst_pack(const float *x, size_t n, fs_dtype dt)
{
    void *b = malloc(n * fst_dtype_size(dt) + 1);
    for (size_t i = 0; i < n; ++i)
        fst_set(b, i, dt, x[i]);
    return b;
}

/* ---- RNG ---------------------------------------------------------------- */

void fst_rng_seed(fst_rng *r, uint64_t seed)
{
    r->s = seed * 0x9E3779B97F4A7C15ull + 0x632BE59BD9B4E019ull;
}

uint64_t fst_next(fst_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

double fst_unif(fst_rng *r)
{
    return ((double)(fst_next(r) >> 11) + 0.5) / 9007199254740992.0;
}

double fst_normal(fst_rng *r)
{
    double u1 = fst_unif(r), u2 = fst_unif(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

int64_t fst_randint(fst_rng *r, int64_t n)
{
    return (int64_t)(fst_next(r) % (uint64_t)n);
}

void fst_shuffle(fst_rng *r, int64_t *perm, int64_t n)
{
    for (int64_t i = 0; i < n; ++i)
        perm[i] = i;
    for (int64_t i = n - 1; i > 0; --i) {
        int64_t j = fst_randint(r, i + 1);
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

/* ---- generators --------------------------------------------------------- */

float *fst_gen_logits(uint64_t seed, int64_t rows, int64_t V, double scale)
{
    fst_rng r;
    fst_rng_seed(&r, seed);
    float *l = malloc(sizeof(float) * (size_t)(rows * V));
    for (int64_t i = 0; i < rows * V; ++i) {
        double x = fst_normal(&r) * scale;
        if (fst_unif(&r) < 0.02)
            x += 2.0 * scale;
        l[i] = (float)x;
    }
    return l;
}

void fst_gen_head(uint64_t seed, int64_t V, int64_t D, int64_t rows, double logit_scale,
                  fs_dtype dt, void **weight, void **hidden)
{
    fst_rng r;
    fst_rng_seed(&r, seed ^ 0xABCDEF12345ull);
    float *w = malloc(sizeof(float) * (size_t)(V * D));
    float *h = malloc(sizeof(float) * (size_t)(rows * D));
    double ws = logit_scale / sqrt((double)D);
    for (int64_t i = 0; i < V * D; ++i)
        w[i] = (float)(fst_normal(&r) * ws);
    /* a few tokens with a larger norm, as real LM heads have */
    for (int64_t v = 0; v < V; ++v)
        if (fst_unif(&r) < 0.02)
            for (int64_t k = 0; k < D; ++k)
                w[v * D + k] *= 1.8f;
    for (int64_t i = 0; i < rows * D; ++i)
        h[i] = (float)fst_normal(&r);
    *weight = fst_pack(w, (size_t)(V * D), dt);
    *hidden = fst_pack(h, (size_t)(rows * D), dt);
    free(w);
    free(h);
}

float *fst_gen_bias(uint64_t seed, int64_t rows, int64_t V)
{
    fst_rng r;
    fst_rng_seed(&r, seed ^ 0xB1A5ull);
    float *b = malloc(sizeof(float) * (size_t)(rows * V));
    for (int64_t i = 0; i < rows * V; ++i)
        b[i] = fst_unif(&r) < 0.5 ? 0.0f : (float)(fst_randint(&r, 257) - 128) / 64.0f;
    return b;
}

uint32_t *fst_gen_allowed(uint64_t seed, int64_t rows, int64_t V, double keep)
{
    fst_rng r;
    fst_rng_seed(&r, seed ^ 0xA11014EDull);
    int64_t W = fst_mask_words(V);
    uint32_t *m = calloc((size_t)(rows * W), sizeof(uint32_t));
    for (int64_t row = 0; row < rows; ++row) {
        uint32_t *mr = m + row * W;
        int any = 0;
        for (int64_t v = 0; v < V; ++v)
            if (fst_unif(&r) < keep) {
                fst_set_allowed(mr, v, 1);
                any = 1;
            }
        if (!any)
            fst_set_allowed(mr, fst_randint(&r, V), 1);
        for (int64_t v = V; v < W * 32; ++v)
            fst_set_allowed(mr, v, 1); /* padding: must be ignored */
    }
    return m;
}

/* ---- chi-squared -------------------------------------------------------- */

double fst_chi2_test(const uint64_t *obs, const double *prob, int64_t k, fst_chi2 *res)
{
    fst_chi2 r;
    memset(&r, 0, sizeof r);
    r.worst_cell = -1;
    for (int64_t i = 0; i < k; ++i) {
        r.n += obs[i];
        if (prob[i] <= 0.0)
            r.impossible += obs[i];
    }
    double n = (double)r.n;
    if (r.impossible > 0 || r.n == 0) {
        r.p = r.impossible > 0 ? 0.0 : 1.0;
        r.stat = r.impossible > 0 ? INFINITY : 0.0;
        if (res)
            *res = r;
        return r.p;
    }
    /* regular cells, and the pool of small ones */
    double pool_e = 0.0, pool_o = 0.0;
    int cells = 0;
    int64_t smallest = -1;
    for (int64_t i = 0; i < k; ++i) {
        double e = n * prob[i];
        if (prob[i] <= 0.0)
            continue;
        if (e < 5.0) {
            pool_e += e;
            pool_o += (double)obs[i];
        } else if (smallest < 0 || e < n * prob[smallest]) {
            smallest = i;
        }
    }
    for (int64_t i = 0; i < k; ++i) {
        double e = n * prob[i];
        if (prob[i] <= 0.0 || e < 5.0)
            continue;
        if (pool_e > 0.0 && pool_e < 5.0 && i == smallest) {
            pool_e += e; /* the pool is too small on its own: absorb the smallest cell */
            pool_o += (double)obs[i];
            continue;
        }
        double d = (double)obs[i] - e;
        r.stat += d * d / e;
        double z = fabs(d) / sqrt(e);
        if (z > r.worst_z) {
            r.worst_z = z;
            r.worst_cell = i;
        }
        ++cells;
    }
    if (pool_e > 0.0) {
        double d = pool_o - pool_e;
        r.stat += d * d / pool_e;
        ++cells;
    }
    r.df = cells - 1;
    r.p = r.df >= 1 ? gsl_cdf_chisq_Q(r.stat, (double)r.df) : 1.0;
    if (res)
        *res = r;
    return r.p;
}

/* ---- ops ---------------------------------------------------------------- */

fs_context *fst_cpu_ctx(void)
{
    fs_context *ctx = NULL;
    if (fs_context_create(&ctx, FS_DEVICE_CPU, 0) != FS_OK || !ctx) {
        fprintf(stderr, "fst_cpu_ctx: fs_context_create failed\n");
        abort();
    }
    return ctx;
}

static void *ws_alloc(size_t bytes)
{
    return malloc(bytes ? bytes : 1);
}

fs_status fst_sample_logits(fs_context *ctx, const void *logits, fs_dtype dt, int64_t rows,
                            int64_t V, const fs_sampling *p, int32_t *tok, float *lp,
                            int32_t *st)
{
    size_t bytes = 0;
    fs_status s = fs_sample_workspace_size(ctx, rows, V, &bytes);
    if (s != FS_OK)
        return s;
    void *ws = ws_alloc(bytes);
    s = fs_sample_logits(ctx, logits, dt, rows, V, p, ws, bytes, tok, lp, st);
    free(ws);
    return s;
}

fs_status fst_sample(fs_context *ctx, const fs_lm_head *head, const void *hidden, int64_t rows,
                     const fs_sampling *p, int32_t *tok, float *lp, int32_t *st)
{
    size_t bytes = 0;
    fs_status s = fs_sample_workspace_size(ctx, rows, head->vocab_size, &bytes);
    if (s != FS_OK)
        return s;
    void *ws = ws_alloc(bytes);
    s = fs_sample(ctx, head, hidden, rows, p, ws, bytes, tok, lp, st);
    free(ws);
    return s;
}

fs_status fst_argmax_logits(fs_context *ctx, const void *logits, fs_dtype dt, int64_t rows,
                            int64_t V, int32_t *tok, float *val, int32_t *st)
{
    size_t bytes = 0;
    fs_status s = fs_draft_argmax_workspace_size(ctx, rows, V, &bytes);
    if (s != FS_OK)
        return s;
    void *ws = ws_alloc(bytes);
    s = fs_draft_argmax_logits(ctx, logits, dt, rows, V, ws, bytes, tok, val, st);
    free(ws);
    return s;
}

fs_status fst_argmax(fs_context *ctx, const fs_lm_head *head, const void *hidden, int64_t rows,
                     int32_t *tok, float *val, int32_t *st)
{
    size_t bytes = 0;
    fs_status s = fs_draft_argmax_workspace_size(ctx, rows, head->vocab_size, &bytes);
    if (s != FS_OK)
        return s;
    void *ws = ws_alloc(bytes);
    s = fs_draft_argmax(ctx, head, hidden, rows, ws, bytes, tok, val, st);
    free(ws);
    return s;
}

fs_status fst_verify_logits(fs_context *ctx, const void *logits, fs_dtype dt, int64_t V,
                            const fs_drafts *d, const fs_sampling *p, int32_t *tok,
                            int32_t *nem, float *lp, int32_t *st)
{
    size_t bytes = 0;
    fs_status s = fs_verify_workspace_size(ctx, d->num_requests, d->num_draft_tokens, V, &bytes);
    if (s != FS_OK)
        return s;
    void *ws = ws_alloc(bytes);
    s = fs_verify_logits(ctx, logits, dt, V, d, p, ws, bytes, tok, nem, lp, st);
    free(ws);
    return s;
}

fs_status fst_verify(fs_context *ctx, const fs_lm_head *head, const void *hidden,
                     const fs_drafts *d, const fs_sampling *p, int32_t *tok, int32_t *nem,
                     float *lp, int32_t *st)
{
    size_t bytes = 0;
    fs_status s = fs_verify_workspace_size(ctx, d->num_requests, d->num_draft_tokens,
                                           head->vocab_size, &bytes);
    if (s != FS_OK)
        return s;
    void *ws = ws_alloc(bytes);
    s = fs_verify(ctx, head, hidden, d, p, ws, bytes, tok, nem, lp, st);
    free(ws);
    return s;
}

double fst_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int fst_reset_hooks(void **state)
{
    (void)state;
    fs_cpu_set_tile_size(0);
    fs_cpu_set_faults(FS_FAULT_NONE);
    fs_cpu_set_filter_candidates(0);
    fs_cpu_set_filter_second_pass(0);
    fs_cpu_set_vocab_shards(0, NULL);
    return 0;
}

int fst_tok_before(const void *a, const void *b)
{
    const fst_tok *x = a, *y = b;
    if (x->s != y->s)
        return x->s > y->s ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}
