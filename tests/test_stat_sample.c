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

enum { NTESTS = 19, DRAWS = 100000 };
#define ALPHA (0.001 / NTESTS)
#define REJECT 1e-6 /* a power check's wrong law must give p below this */

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

/* ---- the temperatures requests use: T = 0.05 .. 0.2 with LM-scale logits ---
 * Logits as a language model gives them (stat_lm_logits: max 20-40, a head
 * of 12 tokens spread over 6 T below it, the tail several units lower), so
 * that several tokens carry visible probability at T; 60,000 draws per case.
 * Each case is also a power check: the same harness must REJECT (p < 1e-6)
 * the library sampling at 1.03 T (a temperature 3% off; same draw count,
 * chi-squared ~200 where p = 1e-6 needs ~100) and the library with
 * FS_FAULT_LOW_T_GREEDY (every T < 0.3 sampled greedily, a bug that passed
 * every statistical case before these, none of which ran below T = 0.5;
 * 10,000 draws are plenty: chi-squared in the thousands).
 * The last case sits just above FS_MIN_TEMPERATURE, with logits 1e-5 apart
 * near 0 (float resolves them there; at |l| ~ 30 its spacing is 2e-6 and the
 * law is greedy up to such gaps, as the header says): sampling and greedy
 * differ visibly. */
enum { LOWT_DRAWS = 60000, LOWT_DRAWS_GREEDY = 10000 };

typedef struct lowt_case {
    const char *name;
    int64_t V;
    float T;
    double top; /* the max logit */
    int bias, mask;
    int64_t tile;
    fs_dtype dt;
} lowt_case;

static const lowt_case LOWT[] = {
    {"LM V512 T0.05", 512, 0.05f, 30.0, 0, 0, 0, FS_DTYPE_F32},
    {"LM V512 T0.1 bias+mask tile 64", 512, 0.1f, 24.0, 1, 1, 64, FS_DTYPE_F32},
    {"LM V1000 T0.2", 1000, 0.2f, 38.0, 0, 0, 0, FS_DTYPE_F32},
    {"LM V300 T0.2 bf16 tile 64", 300, 0.2f, 30.0, 0, 0, 64, FS_DTYPE_BF16},
    {"LM V300 T0.1 f16 bias tile 16", 300, 0.1f, 20.0, 1, 0, 16, FS_DTYPE_F16},
    {"V300 T1.2e-5 (just above FS_MIN_T)", 300, 1.2e-5f, 0.0, 0, 0, 0, FS_DTYPE_F32},
};

/* counts of DRAWS draws of `row` run at temperature T_run with faults, and
   the chi-squared p against `expect` */
static double lowt_draw(fs_context *ctx, const stat_row *row, float T_run, uint32_t faults,
                        uint64_t seed, int64_t draws, const double *expect, fst_chi2 *res)
{
    stat_row run = *row;
    run.T = T_run;
    uint64_t *counts = calloc((size_t)row->V, sizeof(uint64_t));
    fs_cpu_set_faults(faults);
    fs_status s = stat_sample_counts(ctx, &run, seed, draws, counts);
    fs_cpu_set_faults(FS_FAULT_NONE);
    if (s != FS_OK)
        fail_msg("%s (%s)", fs_status_string(s), fs_context_last_error(ctx));
    double p = fst_chi2_test(counts, expect, row->V, res);
    free(counts);
    return p;
}

static void run_lowt_case(const lowt_case *c, uint64_t seed)
{
    fs_context *ctx = fst_cpu_ctx();
    int64_t V = c->V;
    float *l = malloc(sizeof(float) * (size_t)V);
    stat_lm_logits(seed, V, c->top, c->T, l);
    float *b = NULL;
    if (c->bias) { /* within +-T: the head is reordered, not flattened */
        b = fst_gen_bias(seed, 1, V);
        for (int64_t v = 0; v < V; ++v)
            b[v] *= 0.5f * c->T;
    }
    uint32_t *a = c->mask ? fst_gen_allowed(seed, 1, V, 0.7) : NULL;
    stat_row row = {V, l, b, a, c->T, c->dt};
    double *prob = malloc(sizeof(double) * (size_t)V);
    stat_sample_expected(&row, prob);
    double pmax = 0.0;
    int64_t visible = 0;
    for (int64_t v = 0; v < V; ++v) {
        pmax = prob[v] > pmax ? prob[v] : pmax;
        visible += prob[v] > 0.01;
    }
    fs_cpu_set_tile_size(c->tile);
    fst_chi2 res;
    double t0 = fst_now();
    double p = lowt_draw(ctx, &row, c->T, FS_FAULT_NONE, seed * 7919, LOWT_DRAWS, prob, &res);
    double dt = fst_now() - t0;
    print_message("%-36s V %4lld T %.2g: chi2 %8.2f df %3d p %.4f (max p %.3f, %lld tokens "
                  "above 1%%, %.2fs)\n",
                  c->name, (long long)V, c->T, res.stat, res.df, p, pmax, (long long)visible, dt);
    if (res.impossible)
        fail_msg("%s: %llu draws of zero-probability tokens", c->name,
                 (unsigned long long)res.impossible);
    if (!(p > ALPHA))
        fail_msg("%s: p = %.3g <= %.3g (chi2 %.1f, df %d, worst cell %lld z %.1f)", c->name, p,
                 ALPHA, res.stat, res.df, (long long)res.worst_cell, res.worst_z);
    /* power: the wrong laws are rejected by the same harness */
    double pw = lowt_draw(ctx, &row, c->T * 1.03f, FS_FAULT_NONE, seed * 7919 + 1, LOWT_DRAWS,
                          prob, &res);
    print_message("  %-34s chi2 %10.1f df %3d p %.3g  -> must reject\n", "power: T 3% high",
                  res.stat, res.df, pw);
    if (!(pw < REJECT))
        fail_msg("%s: sampling at 1.03 T was not rejected (p = %.3g)", c->name, pw);
    double pg = lowt_draw(ctx, &row, c->T, FS_FAULT_LOW_T_GREEDY, seed * 7919 + 2,
                          LOWT_DRAWS_GREEDY, prob, &res);
    print_message("  %-34s chi2 %10.1f df %3d p %.3g  -> must reject\n",
                  "power: T < 0.3 sampled greedily", res.stat, res.df, pg);
    if (!(pg < REJECT))
        fail_msg("%s: greedy sampling of T < 0.3 was not rejected (p = %.3g)", c->name, pg);
    fs_cpu_set_tile_size(0);
    free(l);
    free(b);
    free(a);
    free(prob);
    fs_context_destroy(ctx);
}

static void test_sample_low_temperature(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof LOWT / sizeof LOWT[0]; ++i)
        run_lowt_case(&LOWT[i], 3000 + i);
}

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
        cmocka_unit_test_setup(test_sample_low_temperature, fst_reset_hooks),
    };
    return cmocka_run_group_tests_name("stat_sample", tests, NULL, NULL);
}
