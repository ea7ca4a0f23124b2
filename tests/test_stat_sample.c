/* Exactness of sampling, by chi-squared goodness of fit (GSL): for several
 * vocabularies (spanning several tiles), temperatures, biases and masks,
 * 10^5 draws from one fixed row (each draw its own seed and offset) against
 * softmax((l + b) / T) computed in double.  Bonferroni: every test must have
 * p > 0.001 / NTESTS.  Fixed seeds: the outcome is deterministic. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_backend.h"
#include "fs_test.h"
#include "stat_harness.h"

enum { NTESTS = 13, DRAWS = 100000 };
#define ALPHA (0.001 / NTESTS)

typedef struct scase {
    const char *name;
    int64_t V;
    float T;
    double scale;
    int bias, mask, neginf;
    int64_t tile;
    fs_dtype dt;
} scase;

static void run_case(const scase *c, uint64_t seed)
{
    fs_context *ctx = fst_cpu_ctx();
    int64_t V = c->V;
    float *l = fst_gen_logits(seed, 1, V, c->scale);
    float *b = c->bias ? fst_gen_bias(seed, 1, V) : NULL;
    uint32_t *a = c->mask ? fst_gen_allowed(seed, 1, V, 0.7) : NULL;
    if (c->neginf)
        for (int64_t v = 1; v < V; v += 4)
            l[v] = -INFINITY;
    stat_row row = {V, l, b, a, c->T, c->dt};
    uint64_t *counts = calloc((size_t)V, sizeof(uint64_t));
    double *prob = malloc(sizeof(double) * (size_t)V);
    fs_cpu_set_tile_size(c->tile);
    double t0 = fst_now();
    fs_status s = stat_sample_counts(ctx, &row, seed * 7919, DRAWS, counts);
    double dt = fst_now() - t0;
    fs_cpu_set_tile_size(0);
    if (s != FS_OK)
        fail_msg("%s: %s (%s)", c->name, fs_status_string(s), fs_context_last_error(ctx));
    stat_sample_expected(&row, prob);
    fst_chi2 res;
    double p = fst_chi2_test(counts, prob, V, &res);
    int64_t zero_cells = 0;
    for (int64_t v = 0; v < V; ++v)
        zero_cells += prob[v] == 0.0;
    print_message("%-34s V %4lld T %.2g tile %4lld: chi2 %8.2f df %3d p %.4f (%lld impossible "
                  "cells, %.2fs)\n",
                  c->name, (long long)V, c->T, (long long)c->tile, res.stat, res.df, p,
                  (long long)zero_cells, dt);
    if (res.impossible)
        fail_msg("%s: %llu draws of zero-probability tokens", c->name,
                 (unsigned long long)res.impossible);
    if (!(p > ALPHA))
        fail_msg("%s: p = %.3g <= %.3g (chi2 %.1f, df %d, worst cell %lld z %.1f)", c->name, p,
                 ALPHA, res.stat, res.df, (long long)res.worst_cell, res.worst_z);
    assert_int_equal(res.n, DRAWS);
    assert_true(res.df >= 1);
    free(l);
    free(b);
    free(a);
    free(counts);
    free(prob);
    fs_context_destroy(ctx);
}

static const scase CASES[] = {
    {"V2 T1", 2, 1.0f, 1.0, 0, 0, 0, 0, FS_DTYPE_F32},
    {"V5 T1", 5, 1.0f, 1.0, 0, 0, 0, 0, FS_DTYPE_F32},
    {"V5 T0.5", 5, 0.5f, 1.0, 0, 0, 0, 2, FS_DTYPE_F32},
    {"V5 T2 peaked (tails pooled)", 5, 2.0f, 4.0, 0, 0, 0, 3, FS_DTYPE_F32},
    {"V37 T1 tile 8", 37, 1.0f, 1.5, 0, 0, 0, 8, FS_DTYPE_F32},
    {"V37 T2 bias tile 8", 37, 2.0f, 1.5, 1, 0, 0, 8, FS_DTYPE_F32},
    {"V37 T0.5 bias+mask tile 8", 37, 0.5f, 0.8, 1, 1, 0, 8, FS_DTYPE_F32},
    {"V37 T1 -inf logits+mask tile 5", 37, 1.0f, 1.5, 0, 1, 1, 5, FS_DTYPE_F32},
    {"V37 T0.7 bf16 tile 8", 37, 0.7f, 1.5, 0, 0, 0, 8, FS_DTYPE_BF16},
    {"V37 T1.3 f16 bias tile 16", 37, 1.3f, 1.5, 1, 0, 0, 16, FS_DTYPE_F16},
    {"V300 T1 bias+mask tile 64", 300, 1.0f, 1.0, 1, 1, 0, 64, FS_DTYPE_F32},
};

static void test_sample_cases(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; ++i)
        run_case(&CASES[i], 1000 + i);
}

/* The fused op: one hidden row against an LM head, drawn 10^5 times. */
static void run_fused(fs_dtype dt, float T, uint64_t seed)
{
    enum { V = 37, D = 16 };
    fs_context *ctx = fst_cpu_ctx();
    void *w, *h1;
    fst_gen_head(seed, V, D, 1, 1.5, dt, &w, &h1);
    fs_lm_head head = {w, V, D, dt};
    double logit[V], prob[V];
    double m = -INFINITY, z = 0.0;
    for (int v = 0; v < V; ++v) {
        double acc = 0.0;
        for (int k = 0; k < D; ++k)
            acc += fst_get(h1, (size_t)k, dt) * fst_get(w, (size_t)(v * D + k), dt);
        logit[v] = acc / T;
        if (logit[v] > m)
            m = logit[v];
    }
    for (int v = 0; v < V; ++v)
        z += (prob[v] = exp(logit[v] - m));
    for (int v = 0; v < V; ++v)
        prob[v] /= z;
    enum { CH = 4096 };
    size_t es = fst_dtype_size(dt);
    char *hid = malloc(es * CH * D);
    for (int i = 0; i < CH; ++i)
        memcpy(hid + es * (size_t)(i * D), h1, es * D);
    float *Ts = malloc(sizeof(float) * CH);
    uint64_t *sd = malloc(sizeof(uint64_t) * CH), *of = malloc(sizeof(uint64_t) * CH);
    int32_t *tok = malloc(sizeof(int32_t) * CH), *st = malloc(sizeof(int32_t) * CH);
    for (int i = 0; i < CH; ++i)
        Ts[i] = T;
    uint64_t counts[V] = {0};
    fs_cpu_set_tile_size(8);
    for (int64_t done = 0; done < DRAWS; done += CH) {
        int64_t n = DRAWS - done < CH ? DRAWS - done : CH;
        for (int64_t i = 0; i < n; ++i) {
            sd[i] = stat_seed(seed, done + i);
            of[i] = stat_offset(seed, done + i);
        }
        fs_sampling p = {Ts, sd, of, NULL, NULL};
        assert_int_equal(fst_sample(ctx, &head, hid, n, &p, tok, NULL, st), FS_OK);
        for (int64_t i = 0; i < n; ++i)
            counts[tok[i]]++;
    }
    fs_cpu_set_tile_size(0);
    fst_chi2 res;
    double pv = fst_chi2_test(counts, prob, V, &res);
    print_message("fused %-5s V %d D %d T %.2g: chi2 %.2f df %d p %.4f\n", fst_dtype_name(dt), V,
                  D, T, res.stat, res.df, pv);
    if (!(pv > ALPHA))
        fail_msg("fused %s: p = %.3g <= %.3g", fst_dtype_name(dt), pv, ALPHA);
    free(w);
    free(h1);
    free(hid);
    free(Ts);
    free(sd);
    free(of);
    free(tok);
    free(st);
    fs_context_destroy(ctx);
}

static void test_sample_fused(void **state)
{
    (void)state;
    run_fused(FS_DTYPE_BF16, 1.0f, 77);
    run_fused(FS_DTYPE_F32, 0.8f, 78);
}

int main(void)
{
    /* every chi-squared test of this file is counted in NTESTS */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_sample_cases, fst_reset_hooks),
        cmocka_unit_test_setup(test_sample_fused, fst_reset_hooks),
    };
    return cmocka_run_group_tests_name("stat_sample", tests, NULL, NULL);
}
