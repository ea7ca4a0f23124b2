/* Exactness of the filters by chi-squared goodness of fit (GSL): sample
 * under top-k, top-p, min-p and their combination (one pass, and the second
 * pass: small candidate caps, nuclei / min-p bands / k wider than 64), and
 * the joint law of verify (accepted count, emitted token) under filters,
 * against the analytic filtered law in double (filter_ref.h's kept set).
 * 2 x 10^4 to 10^5 draws a case (each its own seed and offset); Bonferroni:
 * every must-accept case needs p > 0.001 / NACCEPT.
 *
 * Power: wrong samplers must be REJECTED (p < 1e-6) at the same sizes --
 * min-p applied before top-p (vLLM V1's order), top-p applied before top-k
 * (on the unrenormalised distribution), k off by one either way, a nucleus
 * that drops the token crossing p (each drawn through the library's own
 * sampler restricted to the wrong kept set), and a verify that accepts with
 * the unfiltered p(x) (FS_FAULT_UNFILTERED_PX).  And every must-accept case
 * has its own power check at its own size: a sampler whose boundary is off
 * by one token (the first cut token kept; for kept sets of at most 64
 * tokens also the last kept one cut), simulated by GSL multinomial draws.
 * Fixed seeds throughout. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "cpu_backend.h"
#include "filter_record.h" /* FS_FILTER_CANDIDATES */
#include "filter_ref.h"
#include "fs_test.h"
#include "stat_harness.h"

enum { DRAWS = 100000, HALF = 50000, WIDE = 20000, NACCEPT = 21 };
#define ALPHA (0.001 / NACCEPT)
#define REJECT 1e-6

static int g_accepts; /* must-accept checks run, against NACCEPT */

static void expect_accept(const char *what, double p, const fst_chi2 *r)
{
    ++g_accepts;
    print_message("  %-52s chi2 %9.1f df %3d p %.4f  -> must accept\n", what, r->stat, r->df, p);
    if (r->impossible)
        fail_msg("%s: %llu draws of a token the filters cut", what,
                 (unsigned long long)r->impossible);
    if (!(p > ALPHA))
        fail_msg("%s: the correct law was rejected (p = %.3g <= %.3g)", what, p, ALPHA);
}

static void expect_reject(const char *what, double p, const fst_chi2 *r)
{
    print_message("  %-52s chi2 %9.1f df %3d p %.3g  -> must reject\n", what, r->stat, r->df, p);
    if (!(p < REJECT))
        fail_msg("%s: the wrong sampler was not rejected (p = %.3g)", what, p);
}

/* counts[V] = a multinomial draw of n from prob (GSL): a wrong sampler
 * simulated outside the library. */
static void multinomial(const double *prob, int64_t V, int64_t n, uint64_t seed, uint64_t *counts)
{
    gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(g, (unsigned long)seed);
    unsigned int *c = malloc(sizeof(unsigned int) * (size_t)V);
    gsl_ran_multinomial(g, (size_t)V, (unsigned int)n, prob, c);
    for (int64_t v = 0; v < V; ++v)
        counts[v] = c[v];
    free(c);
    gsl_rng_free(g);
}

/* Counts [V] (calloc'd) of draws of a row through the library. */
static uint64_t *sample_counts(fs_context *ctx, const stat_row *row, uint64_t seed, int64_t draws)
{
    uint64_t *counts = calloc((size_t)row->V, sizeof(uint64_t));
    fs_status s = stat_sample_counts(ctx, row, seed, draws, counts);
    if (s != FS_OK)
        fail_msg("stat_sample_counts: %s (%s)", fs_status_string(s), fs_context_last_error(ctx));
    return counts;
}

/* Draws of a row through the library; p-value against prob. */
static double sample_p(fs_context *ctx, const stat_row *row, uint64_t seed, int64_t draws,
                       const double *prob, fst_chi2 *res)
{
    uint64_t *counts = sample_counts(ctx, row, seed, draws);
    double p = fst_chi2_test(counts, prob, row->V, res);
    free(counts);
    return p;
}

/* Slightly wrong laws: the filters' boundary off by one token.  This one
 * cuts the least likely kept token of prob (renormalised); 0 if only one
 * token is kept. */
static int drop_last_kept(const double *prob, int64_t V, double *wrong)
{
    int64_t last = -1, kept = 0;
    for (int64_t v = 0; v < V; ++v)
        if (prob[v] > 0.0) {
            ++kept;
            if (last < 0 || prob[v] < prob[last])
                last = v;
        }
    if (kept < 2)
        return 0;
    double z = 1.0 - prob[last];
    for (int64_t v = 0; v < V; ++v)
        wrong[v] = v == last ? 0.0 : prob[v] / z;
    return 1;
}

/* This one also keeps the most likely cut token of the unfiltered law
 * `plain`; 0 if nothing is cut. */
static int add_first_cut(const double *prob, const double *plain, int64_t V, double *wrong)
{
    int64_t first = -1;
    double z = 0.0;
    for (int64_t v = 0; v < V; ++v) {
        if (prob[v] > 0.0)
            z += plain[v];
        else if (plain[v] > 0.0 && (first < 0 || plain[v] > plain[first]))
            first = v;
    }
    if (first < 0)
        return 0;
    z += plain[first];
    for (int64_t v = 0; v < V; ++v)
        wrong[v] = prob[v] > 0.0 || v == first ? plain[v] / z : 0.0;
    return 1;
}

/* ---- must-accept: sample -------------------------------------------------- */

typedef struct scase {
    const char *name;
    int64_t V;
    double scale; /* logits N(0, scale^2) + a heavy top */
    float T;
    int32_t k;
    float p, min_p;
    int bias, mask, ties;
    int cap;       /* candidate cap (0: default) */
    int64_t draws;
    int expect_second; /* 1: the rows must take the second pass */
} scase;

static const scase SCASES[] = {
    {"top-k 5", 40, 1.5, 1.0f, 5, 0, 0, 0, 0, 0, 0, DRAWS, 0},
    {"top-p 0.7", 40, 1.5, 0.8f, 0, 0.7f, 0, 0, 0, 0, 0, DRAWS, 0},
    {"min-p 0.1", 40, 1.5, 1.2f, 0, 0, 0.1f, 0, 0, 0, 0, DRAWS, 0},
    {"top-k 12 + top-p 0.8 + min-p 0.05, bias, mask", 61, 1.5, 1.0f, 12, 0.8f, 0.05f, 1, 1, 0, 0,
     DRAWS, 0},
    {"combined, candidate cap 2 (second pass)", 61, 1.5, 1.0f, 12, 0.8f, 0.05f, 1, 1, 0, 2,
     HALF, 1},
    {"top-p 0.95, wide nucleus V300 T2 (second pass)", 300, 1.0, 2.0f, 0, 0.95f, 0, 0, 0, 0, 0,
     WIDE, 1},
    {"top-k 100 (> 64) + top-p 0.9 V300 (second pass)", 300, 1.0, 1.5f, 100, 0.9f, 0, 1, 0, 0, 0,
     WIDE, 1},
    {"min-p 0.2, wide band V300 T3 (second pass)", 300, 1.0, 3.0f, 0, 0, 0.2f, 0, 1, 0, 0, WIDE,
     1},
    {"ties: quarter logits, top-k 6 + top-p 0.9", 80, 0, 1.0f, 6, 0.9f, 0, 0, 0, 1, 0, HALF, 0},
    {"ties: quarter logits, min-p 0.3, cap 3", 80, 0, 0.5f, 0, 0, 0.3f, 0, 0, 1, 3, HALF, 1},
};

static void run_scase(fs_context *ctx, const scase *c, uint64_t seed)
{
    int64_t V = c->V;
    float *l = fst_gen_logits(seed, 1, V, c->scale);
    if (c->ties) {
        fst_rng r;
        fst_rng_seed(&r, seed);
        for (int64_t v = 0; v < V; ++v)
            l[v] = (float)(fst_randint(&r, 13) - 6) / 4.0f;
    }
    float *b = c->bias ? fst_gen_bias(seed, 1, V) : NULL;
    uint32_t *a = c->mask ? fst_gen_allowed(seed, 1, V, 0.8) : NULL;
    stat_row row = {V, l, b, a, c->T, FS_DTYPE_F32, c->k, c->p, c->min_p};
    double *prob = malloc(sizeof(double) * (size_t)V);
    if (!stat_sample_expected(&row, prob))
        fail_msg("%s: the filters' decision is a float near-tie (pick another seed)", c->name);
    int64_t kept = 0;
    for (int64_t v = 0; v < V; ++v)
        kept += prob[v] > 0.0;
    /* the path the case is meant to take */
    fs_cpu_set_filter_candidates(c->cap);
    int32_t fb = -1, tok, st;
    float T1 = c->T, p1 = c->p > 0 ? c->p : 1.0f, mp1 = c->min_p;
    int32_t k1 = c->k;
    uint64_t s1 = seed;
    fs_sampling one = {&T1, &s1, NULL, b, a};
    one.top_k = &k1;
    one.top_p = &p1;
    one.min_p = &mp1;
    one.out_filter_fallback = &fb;
    assert_int_equal(fst_sample_logits(ctx, l, FS_DTYPE_F32, 1, V, &one, &tok, NULL, &st), FS_OK);
    if (fb != c->expect_second)
        fail_msg("%s: second pass %d, expected %d (%lld tokens kept)", c->name, fb,
                 c->expect_second, (long long)kept);
    fst_chi2 res;
    uint64_t *counts = sample_counts(ctx, &row, seed * 31 + 7, c->draws);
    fs_cpu_set_filter_candidates(0);
    char what[96];
    snprintf(what, sizeof what, "%s (%lld kept)", c->name, (long long)kept);
    expect_accept(what, fst_chi2_test(counts, prob, V, &res), &res);
    /* power at the same size: draws of a sampler whose boundary is off by
       one token must be rejected.  Keeping a cut token shows up as draws of
       an impossible token; cutting a kept one as a missing cell, which the
       test sees only when that token is not one of hundreds (the oracle
       test checks those boundaries token by token) */
    double *plain = malloc(sizeof(double) * (size_t)V), *wrong = malloc(sizeof(double) * (size_t)V);
    stat_row unfiltered = row;
    unfiltered.top_k = 0;
    unfiltered.top_p = 0.0f;
    unfiltered.min_p = 0.0f;
    stat_sample_expected(&unfiltered, plain);
    if (add_first_cut(prob, plain, V, wrong)) {
        multinomial(wrong, V, c->draws, seed, counts);
        expect_reject("    a sampler that keeps the first cut token",
                      fst_chi2_test(counts, prob, V, &res), &res);
    }
    if (kept <= FS_FILTER_CANDIDATES && drop_last_kept(prob, V, wrong)) {
        multinomial(wrong, V, c->draws, seed + 1, counts);
        expect_reject("    a sampler that cuts the last kept token",
                      fst_chi2_test(counts, prob, V, &res), &res);
    }
    free(counts);
    free(plain);
    free(wrong);
    free(l);
    free(b);
    free(a);
    free(prob);
}

static void test_sample_filtered_law(void **state)
{
    (void)state;
    fs_context *ctx = fst_cpu_ctx();
    for (size_t i = 0; i < sizeof SCASES / sizeof SCASES[0]; ++i)
        run_scase(ctx, &SCASES[i], 3000 + i);
    fs_context_destroy(ctx);
}

/* ---- must-accept: verify --------------------------------------------------- */

typedef struct vcase {
    const char *name;
    int64_t V, n;
    float T;
    int32_t k;
    float p, min_p;
    int cap;
    int x_cut[3]; /* 1: draft j is a token the filters cut (p(x) > 0 unfiltered) */
} vcase;

static const vcase VCASES[] = {
    {"verify top-p 0.8, drafts kept", 37, 2, 1.0f, 0, 0.8f, 0, 0, {0, 0, 0}},
    {"verify top-k 3, second draft cut", 37, 2, 1.0f, 3, 0, 0, 0, {0, 1, 0}},
    {"verify min-p 0.1, first draft cut", 37, 2, 1.5f, 0, 0, 0.1f, 0, {1, 0, 0}},
    {"verify combined, cap 2 (second pass)", 61, 3, 1.0f, 8, 0.9f, 0.02f, 2, {0, 1, 0}},
};

/* The row's top tokens by probability, descending (no ties in these rows). */
static void rank_tokens(const double *prob, int64_t V, int64_t *idx)
{
    for (int64_t v = 0; v < V; ++v)
        idx[v] = v;
    for (int64_t i = 1; i < V; ++i)
        for (int64_t j = i; j > 0 && prob[idx[j]] > prob[idx[j - 1]]; --j) {
            int64_t t = idx[j];
            idx[j] = idx[j - 1];
            idx[j - 1] = t;
        }
}

static void run_vcase(fs_context *ctx, const vcase *c, uint64_t seed, uint32_t faults,
                      const char *label, int must_reject)
{
    int64_t V = c->V, n = c->n;
    float *rows = fst_gen_logits(seed, n + 1, V, 1.5);
    int32_t x[3];
    double *prob = malloc(sizeof(double) * (size_t)((n + 1) * V));
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)V);
    for (int64_t j = 0; j < n; ++j) {
        stat_softmax_filtered(rows + j * V, NULL, NULL, V, c->T, c->k, c->p, c->min_p, prob);
        rank_tokens(prob, V, idx);
        int64_t kept = 0;
        while (kept < V && prob[idx[kept]] > 0.0)
            ++kept;
        /* a kept draft: the second most likely; a cut one: the first cut */
        x[j] = (int32_t)(c->x_cut[j] ? idx[kept] : idx[kept > 1 ? 1 : 0]);
        if (c->x_cut[j] && kept >= V)
            fail_msg("%s: row %lld cuts nothing", c->name, (long long)j);
    }
    stat_verify vp = {V, n, rows, NULL, x, c->T, c->k, c->p, c->min_p};
    int64_t cells = (n + 1) * V;
    double *expect = malloc(sizeof(double) * (size_t)cells);
    if (!stat_verify_expected(&vp, expect))
        fail_msg("%s: a filter decision is a float near-tie", c->name);
    uint64_t *counts = calloc((size_t)cells, sizeof(uint64_t));
    uint64_t malformed = 0;
    fs_cpu_set_filter_candidates(c->cap);
    fs_cpu_set_faults(faults);
    fs_status s = stat_verify_counts(ctx, &vp, seed * 17 + 3, HALF, counts, &malformed);
    fs_cpu_set_faults(FS_FAULT_NONE);
    fs_cpu_set_filter_candidates(0);
    assert_int_equal(s, FS_OK);
    assert_int_equal(malformed, 0);
    fst_chi2 res;
    double p = fst_chi2_test(counts, expect, cells, &res);
    if (must_reject)
        expect_reject(label, p, &res);
    else
        expect_accept(label, p, &res);
    if (!must_reject) {
        /* power at the same size: verifying against targets that keep one
           more token each (the most likely cut one) must be rejected */
        int64_t W = fst_mask_words(V);
        uint32_t *masks = calloc((size_t)((n + 1) * W), sizeof(uint32_t));
        double *plain = malloc(sizeof(double) * (size_t)V);
        double *wrong = malloc(sizeof(double) * (size_t)cells);
        for (int64_t j = 0; j <= n; ++j) {
            stat_softmax_filtered(rows + j * V, NULL, NULL, V, c->T, c->k, c->p, c->min_p, prob);
            stat_softmax(rows + j * V, NULL, NULL, V, c->T, plain);
            add_first_cut(prob, plain, V, prob);
            for (int64_t v = 0; v < V; ++v)
                if (prob[v] > 0.0)
                    fst_set_allowed(masks + j * W, v, 1);
        }
        stat_verify vw = {V, n, rows, masks, x, c->T, 0, 0.0f, 0.0f};
        stat_verify_expected(&vw, wrong);
        multinomial(wrong, cells, HALF, seed, counts);
        expect_reject("    verify against targets keeping one more token",
                      fst_chi2_test(counts, expect, cells, &res), &res);
        free(masks);
        free(plain);
        free(wrong);
    }
    free(rows);
    free(prob);
    free(idx);
    free(expect);
    free(counts);
}

static void test_verify_filtered_law(void **state)
{
    (void)state;
    fs_context *ctx = fst_cpu_ctx();
    for (size_t i = 0; i < sizeof VCASES / sizeof VCASES[0]; ++i)
        run_vcase(ctx, &VCASES[i], 4000 + i, FS_FAULT_NONE, VCASES[i].name, 0);
    fs_context_destroy(ctx);
}

/* ---- power ---------------------------------------------------------------- */

enum variant {
    CORRECT = 0,
    MINP_FIRST,     /* min-p, then top-k / top-p on what it keeps (vLLM V1's order) */
    TOPP_FIRST,     /* top-p on the unrenormalised distribution, then top-k */
    K_PLUS_1,
    K_MINUS_1,
    DROP_CROSSING   /* the nucleus stops before the token that crosses p */
};

/* Kept set of a hand-written filter, right or wrong, over prob (T applied,
 * no ties): keep[V]. */
static void variant_keep(const double *prob, int64_t V, int32_t k, double p, double min_p,
                         int variant, unsigned char *keep)
{
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)V);
    rank_tokens(prob, V, idx);
    int64_t n = 0;
    while (n < V && prob[idx[n]] > 0.0)
        ++n;
    const double qmax = prob[idx[0]];
    int64_t kk = k > 0 && k < n ? k : n;
    if (variant == K_PLUS_1 && kk < n)
        ++kk;
    if (variant == K_MINUS_1 && kk > 1)
        --kk;
    memset(keep, 0, (size_t)V);
    /* the candidate list after top-k (and min-p, when it goes first) */
    int64_t m = 0;
    for (int64_t j = 0; j < kk; ++j)
        if (variant != MINP_FIRST || prob[idx[j]] >= min_p * qmax)
            idx[m++] = idx[j];
    double z = 0.0;
    for (int64_t j = 0; j < m; ++j)
        z += prob[idx[j]];
    if (variant == TOPP_FIRST)
        z = 1.0;
    double before = 0.0;
    for (int64_t j = 0; j < m; ++j) {
        double q = prob[idx[j]] / z;
        int in = variant == DROP_CROSSING ? before + q < p : before < p;
        if (j > 0 && !in)
            break;
        if (prob[idx[j]] >= min_p * qmax)
            keep[idx[j]] = 1;
        before += q;
    }
    free(idx);
}

/* Token probabilities 0.3, 0.25, 0.2, 0.1 at scattered ids, the rest
 * (0.15) spread evenly: where the orders of the filters disagree. */
static void designed_row(float *l, int64_t V)
{
    const int32_t ids[4] = {5, 17, 33, 2};
    const double top[4] = {0.3, 0.25, 0.2, 0.1};
    for (int64_t v = 0; v < V; ++v)
        l[v] = (float)log(0.15 / (double)(V - 4));
    for (int i = 0; i < 4; ++i)
        l[ids[i]] = (float)log(top[i]);
}

typedef struct pcase {
    const char *name;
    int designed; /* 1: designed_row, 0: generated logits */
    float T;
    int32_t k;
    float p, min_p;
    int variant;
} pcase;

static const pcase PCASES[] = {
    {"min-p 0.5 applied before top-p 0.6", 1, 1.0f, 0, 0.6f, 0.5f, MINP_FIRST},
    {"top-p 0.7 applied before top-k 3", 1, 1.0f, 3, 0.7f, 0.0f, TOPP_FIRST},
    {"top-k 6 off by one: 7 kept", 0, 1.0f, 6, 0.0f, 0.0f, K_PLUS_1},
    {"top-k 6 off by one: 5 kept", 0, 1.0f, 6, 0.0f, 0.0f, K_MINUS_1},
    {"top-p 0.6: nucleus drops the crossing token", 0, 1.5f, 0, 0.6f, 0.0f, DROP_CROSSING},
};

static void run_pcase(fs_context *ctx, const pcase *c, uint64_t seed)
{
    const int64_t V = 40, W = fst_mask_words(V);
    float l[40];
    if (c->designed) {
        designed_row(l, V);
    } else {
        float *g = fst_gen_logits(seed, 1, V, 1.5);
        memcpy(l, g, sizeof l);
        free(g);
    }
    stat_row right = {V, l, NULL, NULL, c->T, FS_DTYPE_F32, c->k, c->p, c->min_p};
    double expect[40], plain[40];
    assert_true(stat_sample_expected(&right, expect));
    /* the hand-written filter agrees with the oracle when it is right */
    stat_softmax(l, NULL, NULL, V, c->T, plain);
    unsigned char keep[40];
    variant_keep(plain, V, c->k, c->p > 0 ? c->p : 1.0, c->min_p, CORRECT, keep);
    for (int64_t v = 0; v < V; ++v)
        if ((expect[v] > 0.0) != keep[v])
            fail_msg("%s: the hand-written filter and the oracle disagree at %lld", c->name,
                     (long long)v);
    /* the wrong kept set, drawn through the library's own sampler (a mask) */
    variant_keep(plain, V, c->k, c->p > 0 ? c->p : 1.0, c->min_p, c->variant, keep);
    uint32_t mask[2] = {0, 0};
    int64_t differ = 0;
    for (int64_t v = 0; v < V; ++v) {
        if (keep[v])
            fst_set_allowed(mask, v, 1);
        differ += (expect[v] > 0.0) != keep[v];
    }
    for (int64_t v = V; v < W * 32; ++v)
        fst_set_allowed(mask, v, 1);
    assert_true(differ > 0);
    stat_row wrong = {V, l, NULL, mask, c->T, FS_DTYPE_F32, 0, 0, 0};
    fst_chi2 res;
    char what[96];
    snprintf(what, sizeof what, "%s", c->name);
    expect_reject(what, sample_p(ctx, &wrong, seed + 1, HALF, expect, &res), &res);
    snprintf(what, sizeof what, "  same row, correct filters");
    expect_accept(what, sample_p(ctx, &right, seed + 2, HALF, expect, &res), &res);
}

static void test_power_filters(void **state)
{
    (void)state;
    fs_context *ctx = fst_cpu_ctx();
    for (size_t i = 0; i < sizeof PCASES / sizeof PCASES[0]; ++i)
        run_pcase(ctx, &PCASES[i], 5000 + 10 * i);
    fs_context_destroy(ctx);
}

/* verify accepting with the unfiltered p(x): for a kept draft p(x) < p_F(x)
 * (accepted too rarely), for a cut one p(x) > 0 = p_F(x) (accepted at all). */
static void test_power_unfiltered_px(void **state)
{
    (void)state;
    fs_context *ctx = fst_cpu_ctx();
    const vcase kept = {"", 37, 2, 1.0f, 0, 0.7f, 0, 0, {0, 0, 0}};
    const vcase cut = {"", 37, 2, 1.0f, 4, 0, 0, 0, {1, 0, 0}};
    run_vcase(ctx, &kept, 6000, FS_FAULT_UNFILTERED_PX, "verify, unfiltered p(x), drafts kept", 1);
    run_vcase(ctx, &kept, 6000, FS_FAULT_NONE, "  same, filtered p(x)", 0);
    run_vcase(ctx, &cut, 6001, FS_FAULT_UNFILTERED_PX, "verify, unfiltered p(x), first draft cut",
              1);
    run_vcase(ctx, &cut, 6001, FS_FAULT_NONE, "  same, filtered p(x)", 0);
    fs_context_destroy(ctx);
}

static void test_accept_count(void **state)
{
    (void)state;
    /* the Bonferroni divisor covers every must-accept check */
    assert_int_equal(g_accepts, NACCEPT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_sample_filtered_law, fst_reset_hooks),
        cmocka_unit_test_setup(test_verify_filtered_law, fst_reset_hooks),
        cmocka_unit_test_setup(test_power_filters, fst_reset_hooks),
        cmocka_unit_test_setup(test_power_unfiltered_px, fst_reset_hooks),
        cmocka_unit_test_setup(test_accept_count, fst_reset_hooks),
    };
    return cmocka_run_group_tests_name("stat_filter", tests, NULL, NULL);
}
