/* Header-only helpers of the GPU tests (tests/test_gpu_*.c): one description
 * of an op's host inputs that runs unchanged on a CPU context (host
 * pointers) or a CUDA context (uploaded copies), device memory helpers, and
 * the near-tie explanations of GPU/CPU disagreements, measured on the naive
 * double-precision oracle (tests/support/naive_ref.h). */
#ifndef FS_GPU_UTIL_H
#define FS_GPU_UTIL_H

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "flashspec.h"
#include "fs_test.h"
#include "naive_ref.h"

/* Built without CUDA: a test's whole body is left out and main() skips. */
#define GT_MAIN_WITHOUT_CUDA(name)                                                           \
    int main(void)                                                                           \
    {                                                                                        \
        printf("%s: SKIP: flashspec was built without CUDA\n", name);                        \
        return 77;                                                                           \
    }

#ifdef FS_HAVE_CUDA
#include <cuda_runtime_api.h>

/* In main(): ctest counts exit code 77 as skipped. */
#define GT_SKIP_WITHOUT_GPU(name)                                                            \
    do {                                                                                     \
        if (!fs_cuda_available()) {                                                          \
            printf("%s: SKIP: no CUDA device visible (or built without CUDA)\n", name);      \
            return 77;                                                                       \
        }                                                                                    \
    } while (0)

#define GT_CUDA(x)                                                                           \
    do {                                                                                     \
        cudaError_t gt_e_ = (x);                                                             \
        if (gt_e_ != cudaSuccess)                                                            \
            fail_msg("%s:%d: %s: %s", __FILE__, __LINE__, #x, cudaGetErrorString(gt_e_));    \
    } while (0)

#define GT_FS(ctx, x)                                                                        \
    do {                                                                                     \
        fs_status gt_s_ = (x);                                                               \
        if (gt_s_ != FS_OK)                                                                  \
            fail_msg("%s:%d: %s: %s (%s)", __FILE__, __LINE__, #x, fs_status_string(gt_s_),  \
                     fs_context_last_error(ctx));                                            \
    } while (0)

/* FS_GPU_TEST_SMALL=1 (the sanitizer runs): tests shrink their shapes. */
static inline int gt_small_mode(void)
{
    const char *e = getenv("FS_GPU_TEST_SMALL");
    return e && e[0] && e[0] != '0';
}

/* Row cap of the small mode: 65 (the tile kernel and verify's 3-row-block
 * rows kernel), or FS_GPU_TEST_SMALL_ROWS (e.g. 200: the rows kernel's
 * 192-row CTA at 129-192 rows and its 2-CTA clusters above, for a sanitizer
 * run of their own). */
static inline int64_t gt_small_rows(void)
{
    const char *e = getenv("FS_GPU_TEST_SMALL_ROWS");
    const long long n = e && e[0] ? atoll(e) : 0;
    return n > 0 ? (int64_t)n : 65;
}

static inline fs_context *gt_gpu_ctx(void)
{
    fs_context *ctx = NULL;
    fs_status s = fs_context_create(&ctx, FS_DEVICE_CUDA, 0);
    if (s != FS_OK || !ctx)
        fail_msg("fs_context_create(CUDA, 0): %s", fs_status_string(s));
    return ctx;
}

/* ---- device memory ------------------------------------------------------ */

static inline void *gt_dmalloc(size_t bytes)
{
    void *d = NULL;
    GT_CUDA(cudaMalloc(&d, bytes ? bytes : 1));
    return d;
}

/* Device copy of a host array; NULL stays NULL. */
static inline void *gt_dup(const void *h, size_t bytes)
{
    if (!h)
        return NULL;
    void *d = gt_dmalloc(bytes);
    GT_CUDA(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
    return d;
}

static inline void gt_down(void *h, const void *d, size_t bytes)
{
    if (h && d)
        GT_CUDA(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
}

static inline void gt_dfree(const void *d)
{
    if (d)
        GT_CUDA(cudaFree((void *)d));
}

/* ---- one op's inputs, runnable on either backend ------------------------ */

enum gt_op { GT_SAMPLE = 0, GT_ARGMAX = 1, GT_VERIFY = 2 };

static inline const char *gt_op_name(int op)
{
    return op == GT_SAMPLE ? "sample" : op == GT_ARGMAX ? "argmax" : "verify";
}

typedef struct gt_in {
    int op;    /* enum gt_op */
    int fused; /* 1: LM head + hidden, 0: logits */
    fs_dtype dt;
    int64_t V, D;
    int64_t rows;     /* scanned rows (verify: num_draft_tokens + requests) */
    int64_t requests; /* = rows except for verify */
    const void *weight, *hidden, *logits; /* host */
    fs_sampling p;                        /* host pointers (not used by argmax) */
    fs_drafts d;                          /* host pointers (verify) */
} gt_in;

typedef struct gt_out {
    fs_status ret;
    int64_t ntok, nreq;
    int32_t *tok, *st, *nem;
    float *val;
} gt_out;

static inline int64_t gt_tok_count(const gt_in *in)
{
    return in->op == GT_VERIFY ? in->requests * (in->d.max_drafts + 1) : in->rows;
}

static inline void gt_out_alloc(const gt_in *in, gt_out *o)
{
    memset(o, 0, sizeof *o);
    o->ntok = gt_tok_count(in);
    o->nreq = in->requests;
    o->tok = malloc(sizeof(int32_t) * (size_t)o->ntok);
    o->val = malloc(sizeof(float) * (size_t)o->ntok);
    o->st = malloc(sizeof(int32_t) * (size_t)o->nreq);
    o->nem = malloc(sizeof(int32_t) * (size_t)o->nreq);
    memset(o->tok, 0x5a, sizeof(int32_t) * (size_t)o->ntok);
    memset(o->val, 0x5a, sizeof(float) * (size_t)o->ntok);
    memset(o->st, 0x5a, sizeof(int32_t) * (size_t)o->nreq);
    memset(o->nem, 0x5a, sizeof(int32_t) * (size_t)o->nreq);
}

static inline void gt_out_free(gt_out *o)
{
    free(o->tok);
    free(o->val);
    free(o->st);
    free(o->nem);
    memset(o, 0, sizeof *o);
}

static inline size_t gt_workspace_bytes(fs_context *ctx, const gt_in *in)
{
    size_t b = 0;
    fs_status s;
    if (in->op == GT_SAMPLE)
        s = fs_sample_workspace_size(ctx, in->rows, in->V, &b);
    else if (in->op == GT_ARGMAX)
        s = fs_draft_argmax_workspace_size(ctx, in->rows, in->V, &b);
    else
        s = fs_verify_workspace_size(ctx, in->d.num_requests, in->d.num_draft_tokens, in->V, &b);
    if (s != FS_OK)
        fail_msg("workspace query: %s (%s)", fs_status_string(s), fs_context_last_error(ctx));
    return b;
}

/* Call the op on ctx with the given (backend-side) pointers. */
static inline fs_status gt_call(fs_context *ctx, const gt_in *in, const void *w, const void *h,
                                const void *l, const fs_sampling *p, const fs_drafts *d,
                                void *ws, size_t ws_bytes, int32_t *tok, float *val,
                                int32_t *nem, int32_t *st)
{
    fs_lm_head head = {w, in->V, in->D, in->dt};
    switch (in->op) {
    case GT_SAMPLE:
        return in->fused ? fs_sample(ctx, &head, h, in->rows, p, ws, ws_bytes, tok, val, st)
                         : fs_sample_logits(ctx, l, in->dt, in->rows, in->V, p, ws, ws_bytes,
                                            tok, val, st);
    case GT_ARGMAX:
        return in->fused ? fs_draft_argmax(ctx, &head, h, in->rows, ws, ws_bytes, tok, val, st)
                         : fs_draft_argmax_logits(ctx, l, in->dt, in->rows, in->V, ws, ws_bytes,
                                                  tok, val, st);
    default:
        return in->fused ? fs_verify(ctx, &head, h, d, p, ws, ws_bytes, tok, nem, val, st)
                         : fs_verify_logits(ctx, l, in->dt, in->V, d, p, ws, ws_bytes, tok,
                                            nem, val, st);
    }
}

/* Device copies of every input of `in`. */
typedef struct gt_dev_in {
    void *w, *h, *l;
    fs_sampling p;
    fs_drafts d;
} gt_dev_in;

static inline void gt_upload(const gt_in *in, gt_dev_in *g)
{
    memset(g, 0, sizeof *g);
    size_t es = fst_dtype_size(in->dt);
    if (in->fused) {
        g->w = gt_dup(in->weight, es * (size_t)(in->V * in->D));
        g->h = gt_dup(in->hidden, es * (size_t)(in->rows * in->D));
    } else {
        g->l = gt_dup(in->logits, es * (size_t)(in->rows * in->V));
    }
    if (in->op != GT_ARGMAX) {
        size_t R = (size_t)in->requests, rows = (size_t)in->rows, V = (size_t)in->V;
        g->p.temperature = gt_dup(in->p.temperature, sizeof(float) * R);
        g->p.seed = gt_dup(in->p.seed, sizeof(uint64_t) * R);
        g->p.offset = gt_dup(in->p.offset, sizeof(uint64_t) * R);
        g->p.logit_bias = gt_dup(in->p.logit_bias, sizeof(float) * rows * V);
        g->p.allowed = gt_dup(in->p.allowed, sizeof(uint32_t) * rows * (size_t)fst_mask_words(in->V));
        g->p.top_k = gt_dup(in->p.top_k, sizeof(int32_t) * R);
        g->p.top_p = gt_dup(in->p.top_p, sizeof(float) * R);
        g->p.min_p = gt_dup(in->p.min_p, sizeof(float) * R);
        /* an output: poisoned, downloaded by gt_run */
        if (in->p.out_filter_fallback) {
            g->p.out_filter_fallback = gt_dmalloc(sizeof(int32_t) * R);
            GT_CUDA(cudaMemset(g->p.out_filter_fallback, 0x5a, sizeof(int32_t) * R));
        }
    }
    if (in->op == GT_VERIFY) {
        g->d = in->d;
        g->d.draft_tokens = in->d.num_draft_tokens > 0
                                ? gt_dup(in->d.draft_tokens,
                                         sizeof(int32_t) * (size_t)in->d.num_draft_tokens)
                                : NULL;
        g->d.draft_offsets =
            gt_dup(in->d.draft_offsets, sizeof(int32_t) * (size_t)(in->d.num_requests + 1));
    }
}

static inline void gt_free_dev(gt_dev_in *g)
{
    gt_dfree(g->w);
    gt_dfree(g->h);
    gt_dfree(g->l);
    gt_dfree(g->p.temperature);
    gt_dfree(g->p.seed);
    gt_dfree(g->p.offset);
    gt_dfree(g->p.logit_bias);
    gt_dfree(g->p.allowed);
    gt_dfree(g->p.top_k);
    gt_dfree(g->p.top_p);
    gt_dfree(g->p.min_p);
    gt_dfree(g->p.out_filter_fallback);
    gt_dfree(g->d.draft_tokens);
    gt_dfree(g->d.draft_offsets);
    memset(g, 0, sizeof *g);
}

/* Run `in` on ctx (CPU: host pointers; CUDA: uploaded copies, synchronised
 * and downloaded).  o must come from gt_out_alloc. */
static inline void gt_run(fs_context *ctx, const gt_in *in, gt_out *o)
{
    size_t ws_bytes = gt_workspace_bytes(ctx, in);
    if (fs_context_device(ctx) == FS_DEVICE_CPU) {
        void *ws = malloc(ws_bytes ? ws_bytes : 1);
        o->ret = gt_call(ctx, in, in->weight, in->hidden, in->logits, &in->p, &in->d, ws,
                         ws_bytes, o->tok, o->val, in->op == GT_VERIFY ? o->nem : NULL, o->st);
        free(ws);
        return;
    }
    gt_dev_in g;
    gt_upload(in, &g);
    void *ws = gt_dmalloc(ws_bytes);
    int32_t *tok = gt_dmalloc(sizeof(int32_t) * (size_t)o->ntok);
    float *val = gt_dmalloc(sizeof(float) * (size_t)o->ntok);
    int32_t *st = gt_dmalloc(sizeof(int32_t) * (size_t)o->nreq);
    int32_t *nem = gt_dmalloc(sizeof(int32_t) * (size_t)o->nreq);
    o->ret = gt_call(ctx, in, g.w, g.h, g.l, &g.p, &g.d, ws, ws_bytes, tok, val,
                     in->op == GT_VERIFY ? nem : NULL, st);
    /* FS_ERR_INVALID_ROWS: per-row statuses were written, the caller compares them */
    if (o->ret != FS_OK && o->ret != FS_ERR_INVALID_ROWS)
        fail_msg("GPU %s: %s (%s)", gt_op_name(in->op), fs_status_string(o->ret),
                 fs_context_last_error(ctx));
    GT_CUDA(cudaDeviceSynchronize());
    gt_down(o->tok, tok, sizeof(int32_t) * (size_t)o->ntok);
    gt_down(o->val, val, sizeof(float) * (size_t)o->ntok);
    gt_down(o->st, st, sizeof(int32_t) * (size_t)o->nreq);
    if (in->op == GT_VERIFY)
        gt_down(o->nem, nem, sizeof(int32_t) * (size_t)o->nreq);
    gt_down(in->p.out_filter_fallback, g.p.out_filter_fallback, sizeof(int32_t) * (size_t)o->nreq);
    gt_dfree(ws);
    gt_dfree(tok);
    gt_dfree(val);
    gt_dfree(st);
    gt_dfree(nem);
    gt_free_dev(&g);
}

/* ---- near-tie explanations on the double oracle ------------------------- */

/* Logits of `count` consecutive rows from `row0`, in double (malloc'd). */
static inline double *gt_ref_rows(const gt_in *in, int64_t row0, int64_t count)
{
    double *l = malloc(sizeof(double) * (size_t)(count * in->V));
    for (int64_t r = 0; r < count; ++r)
        for (int64_t v = 0; v < in->V; ++v) {
            double acc = 0.0;
            if (in->fused) {
                for (int64_t k = 0; k < in->D; ++k)
                    acc += fst_get(in->hidden, (size_t)((row0 + r) * in->D + k), in->dt) *
                           fst_get(in->weight, (size_t)(v * in->D + k), in->dt);
            } else {
                acc = fst_get(in->logits, (size_t)((row0 + r) * in->V + v), in->dt);
            }
            l[r * in->V + v] = acc;
        }
    return l;
}

/* Sampling parameters of request r alone, with its rows starting at row0. */
static inline fs_sampling gt_sub_params(const gt_in *in, int64_t r, int64_t row0)
{
    fs_sampling q = in->p;
    q.temperature = in->p.temperature + r;
    q.seed = in->p.seed + r;
    q.offset = in->p.offset ? in->p.offset + r : NULL;
    q.logit_bias = in->p.logit_bias ? in->p.logit_bias + row0 * in->V : NULL;
    q.allowed = in->p.allowed ? in->p.allowed + row0 * fst_mask_words(in->V) : NULL;
    return q;
}

/* max |score| of the allowed tokens of rows l[0..count) (the scale of the
 * rounding error a near-tie is measured against). */
static inline double gt_scale(const gt_in *in, const double *l, int64_t count, int64_t row0,
                              double T)
{
    double inv = T > 0.0 ? 1.0 / T : 1.0, m = 0.0;
    int64_t words = fst_mask_words(in->V);
    for (int64_t r = 0; r < count; ++r)
        for (int64_t v = 0; v < in->V; ++v) {
            const uint32_t *a = in->op != GT_ARGMAX && in->p.allowed
                                    ? in->p.allowed + (row0 + r) * words
                                    : NULL;
            if (!fst_allowed(a, v))
                continue;
            double b = in->op != GT_ARGMAX && in->p.logit_bias
                           ? in->p.logit_bias[(row0 + r) * in->V + v]
                           : 0.0;
            double s = fabs((l[r * in->V + v] + b) * inv);
            if (isfinite(s) && s > m)
                m = s;
        }
    return m;
}

/* Both tokens of a disagreeing row/request are within a rounding-level
 * margin of winning on the oracle.  Returns the larger of the two margins
 * and sets *tol to the allowed margin. */
static inline double gt_sample_tie(const gt_in *in, int64_t r, int32_t a, int32_t b, double *tol)
{
    double *l = gt_ref_rows(in, r, 1);
    fs_sampling q = gt_sub_params(in, r, r);
    double ga = ref_sample_gap(l, in->V, &q, 0, a), gb = ref_sample_gap(l, in->V, &q, 0, b);
    *tol = 1e-3 * (1.0 + gt_scale(in, l, 1, r, in->p.temperature[r]));
    free(l);
    return ga > gb ? ga : gb;
}

static inline double gt_argmax_tie(const gt_in *in, int64_t r, int32_t a, int32_t b, double *tol)
{
    double *l = gt_ref_rows(in, r, 1);
    double m = -INFINITY;
    for (int64_t v = 0; v < in->V; ++v)
        if (l[v] > m)
            m = l[v];
    double ga = a >= 0 && a < in->V ? m - l[a] : INFINITY;
    double gb = b >= 0 && b < in->V ? m - l[b] : INFINITY;
    *tol = 1e-3 * (1.0 + fabs(m));
    free(l);
    return ga > gb ? ga : gb;
}

/* verify: margins (|u - p(x)| or key gaps) of both outputs of request r. */
static inline double gt_verify_tie(const gt_in *in, int64_t r, const int32_t *ta, int32_t na,
                                   const int32_t *tb, int32_t nb, double *tol)
{
    const int32_t *o = in->d.draft_offsets;
    int64_t begin = o[r], n = o[r + 1] - begin, row0 = begin + r;
    double *l = gt_ref_rows(in, row0, n + 1);
    fs_sampling q = gt_sub_params(in, r, row0);
    int32_t sub_off[2] = {0, (int32_t)n};
    fs_drafts d1 = {1, n, in->d.max_drafts, in->d.draft_tokens + begin, sub_off};
    double ga = ref_verify_gap(l, in->V, &d1, &q, 0, ta, na);
    double gb = ref_verify_gap(l, in->V, &d1, &q, 0, tb, nb);
    *tol = 1e-3 * (1.0 + gt_scale(in, l, n + 1, row0, in->p.temperature[r]));
    free(l);
    return ga > gb ? ga : gb;
}

/* |a - b| small relative to |a| (NaN equals NaN). */
static inline int gt_close(float a, float b, double rel)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return fabs((double)a - (double)b) <= rel * (1.0 + fabs((double)a));
}

/* ---- agreement of a GPU run with a CPU run ------------------------------ */

typedef struct gt_agree {
    int64_t units;     /* rows (sample, argmax) or requests (verify) compared */
    int64_t differ;    /* tokens differing, each explained as a near-tie */
    int64_t value_bad; /* logprob / logit mismatches where tokens agree */
    double worst_tie;  /* largest margin / tolerance among the near-ties */
} gt_agree;

/* Compare cpu and gpu outputs of `in`; every failure is a cmocka failure
 * except near-ties, which are counted. */
static inline gt_agree gt_compare(const gt_in *in, const gt_out *c, const gt_out *g,
                                  const char *label)
{
    gt_agree a = {0, 0, 0, 0.0};
    a.units = in->requests;
    for (int64_t r = 0; r < in->requests; ++r) {
        if (c->st[r] != g->st[r])
            fail_msg("%s: %s %lld: status CPU %d, GPU %d", label, gt_op_name(in->op),
                     (long long)r, c->st[r], g->st[r]);
        if (in->op != GT_VERIFY) {
            if (c->tok[r] == g->tok[r]) {
                if (!gt_close(c->val[r], g->val[r], 1e-3)) {
                    ++a.value_bad;
                    fprintf(stderr, "%s: %s row %lld: value CPU %.9g GPU %.9g\n", label,
                            gt_op_name(in->op), (long long)r, c->val[r], g->val[r]);
                }
                continue;
            }
            if (c->st[r] != FS_ROW_OK)
                fail_msg("%s: row %lld: bad row with tokens %d / %d", label, (long long)r,
                         c->tok[r], g->tok[r]);
            double tol, m = in->op == GT_SAMPLE ? gt_sample_tie(in, r, c->tok[r], g->tok[r], &tol)
                                                : gt_argmax_tie(in, r, c->tok[r], g->tok[r], &tol);
            printf("  %s: %s row %lld: CPU %d, GPU %d: near-tie margin %.3g (tolerance %.3g)\n",
                   label, gt_op_name(in->op), (long long)r, c->tok[r], g->tok[r], m, tol);
            if (!(m <= tol))
                fail_msg("%s: %s row %lld: CPU token %d, GPU token %d, margin %.3g > %.3g",
                         label, gt_op_name(in->op), (long long)r, c->tok[r], g->tok[r], m, tol);
            ++a.differ;
            if (m / tol > a.worst_tie)
                a.worst_tie = m / tol;
            continue;
        }
        int64_t stride = in->d.max_drafts + 1;
        const int32_t *ct = c->tok + r * stride, *gtk = g->tok + r * stride;
        int same = c->nem[r] == g->nem[r] && memcmp(ct, gtk, sizeof(int32_t) * (size_t)stride) == 0;
        if (same) {
            for (int64_t k = 0; k < stride; ++k)
                if (!gt_close(c->val[r * stride + k], g->val[r * stride + k], 1e-3)) {
                    ++a.value_bad;
                    fprintf(stderr, "%s: verify request %lld slot %lld: logprob CPU %.9g GPU %.9g\n",
                            label, (long long)r, (long long)k, c->val[r * stride + k],
                            g->val[r * stride + k]);
                }
            continue;
        }
        if (c->st[r] != FS_ROW_OK)
            fail_msg("%s: verify request %lld: bad request with differing outputs", label,
                     (long long)r);
        double tol, m = gt_verify_tie(in, r, ct, c->nem[r], gtk, g->nem[r], &tol);
        printf("  %s: verify request %lld: CPU emitted %d, GPU %d: near-tie margin %.3g "
               "(tolerance %.3g)\n",
               label, (long long)r, c->nem[r], g->nem[r], m, tol);
        if (!(m <= tol))
            fail_msg("%s: verify request %lld: outputs differ with margin %.3g > %.3g", label,
                     (long long)r, m, tol);
        ++a.differ;
        if (m / tol > a.worst_tie)
            a.worst_tie = m / tol;
    }
    return a;
}

#endif /* FS_HAVE_CUDA */

#endif
