/* The statistical harness has power: it must REJECT deliberately wrong
 * samplers -- the library's own injected faults (a residual that keeps the
 * draft; a tile-edge token never pushed) and hand-written wrong samplers (the
 * temperature off by 10%; block noise from biased uniforms) -- with
 * p < 1e-6, and ACCEPT the correct sampler on the same data sizes (p above a
 * Bonferroni threshold).  Fixed seeds throughout. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_randist.h>
#include <gsl/gsl_rng.h>

#include "cpu_backend.h"
#include "fs_test.h"
#include "philox.h"
#include "record.h" /* FS_NOISE_BLOCK */
#include "stat_harness.h"

enum { DRAWS = 100000, NACCEPT = 7 };
#define ALPHA (0.001 / NACCEPT) /* for the tests that must accept */
#define REJECT 1e-6             /* the tests that must reject */

static void expect_reject(const char *what, double p, const fst_chi2 *r)
{
    print_message("  %-44s chi2 %10.1f df %3d p %.3g  -> must reject\n", what, r->stat, r->df, p);
    if (!(p < REJECT))
        fail_msg("%s: the harness did not reject a wrong sampler (p = %.3g)", what, p);
}

static void expect_accept(const char *what, double p, const fst_chi2 *r)
{
    print_message("  %-44s chi2 %10.1f df %3d p %.4f  -> must accept\n", what, r->stat, r->df, p);
    if (!(p > ALPHA))
        fail_msg("%s: the correct sampler was rejected (p = %.3g <= %.3g)", what, p, ALPHA);
}

/* The chi-squared helper itself, on multinomial draws from GSL. */
static void test_chi2_helper(void **state)
{
    (void)state;
    /* exact proportions: statistic 0 */
    double pr[4] = {0.1, 0.2, 0.3, 0.4};
    uint64_t ob[4] = {1000, 2000, 3000, 4000};
    fst_chi2 r;
    assert_true(fst_chi2_test(ob, pr, 4, &r) > 0.999);
    assert_int_equal(r.df, 3);
    /* a draw in a zero-probability cell is impossible: p = 0 */
    double pz[3] = {0.5, 0.5, 0.0};
    uint64_t oz[3] = {500, 499, 1};
    assert_true(fst_chi2_test(oz, pz, 3, &r) == 0.0);
    assert_int_equal(r.impossible, 1);
    /* pooling: cells with expected < 5 are merged into one (expected 6 here) */
    double pp[5] = {0.4997, 0.4997, 0.0002, 0.0002, 0.0002};
    uint64_t op[5] = {4990, 5004, 2, 1, 3};
    fst_chi2_test(op, pp, 5, &r);
    assert_int_equal(r.df, 2); /* two regular cells + the pool */
    /* a pool still under 5 absorbs the smallest regular cell */
    uint64_t oq[5] = {499, 498, 1, 1, 1};
    double pq[5] = {0.4985, 0.4985, 0.001, 0.001, 0.001};
    fst_chi2_test(oq, pq, 5, &r);
    assert_int_equal(r.df, 1);
    assert_true(r.p > 0.5);
    /* the pooled cell still counts: all the tiny-cell mass missing is seen */
    uint64_t om[5] = {5000, 5000, 0, 0, 0};
    assert_true(fst_chi2_test(om, pp, 5, &r) < 0.05);
    /* multinomial draws from the expected law are accepted; from a 10%-tilted
       law they are rejected */
    enum { K = 40 };
    double p[K], q[K];
    double z = 0.0, zq = 0.0;
    for (int i = 0; i < K; ++i) {
        p[i] = exp(-0.15 * i);
        q[i] = p[i] * (1.0 + 0.1 * (i % 2 ? 1 : -1));
        z += p[i];
        zq += q[i];
    }
    for (int i = 0; i < K; ++i) {
        p[i] /= z;
        q[i] /= zq;
    }
    gsl_rng *g = gsl_rng_alloc(gsl_rng_mt19937);
    gsl_rng_set(g, 12345);
    unsigned int n[K];
    uint64_t c[K];
    gsl_ran_multinomial(g, K, DRAWS, p, n);
    for (int i = 0; i < K; ++i)
        c[i] = n[i];
    expect_accept("GSL multinomial from p", fst_chi2_test(c, p, K, &r), &r);
    gsl_ran_multinomial(g, K, DRAWS, q, n);
    for (int i = 0; i < K; ++i)
        c[i] = n[i];
    expect_reject("GSL multinomial from tilted p", fst_chi2_test(c, p, K, &r), &r);
    gsl_rng_free(g);
}

/* verify with the residual keeping the draft (FS_FAULT_NO_EXCLUDE) */
static void test_power_no_exclude(void **state)
{
    (void)state;
    fs_context *ctx = fst_cpu_ctx();
    const int64_t V = 13, n = 2;
    float *rows = fst_gen_logits(31, n + 1, V, 1.0);
    int32_t x[2] = {4, 9};
    stat_set_prob(rows, NULL, V, x[0], 0.6, 1.0);
    stat_set_prob(rows + V, NULL, V, x[1], 0.6, 1.0);
    stat_verify vp = {V, n, rows, NULL, x, 1.0f};
    uint64_t counts[3 * 13];
    double prob[3 * 13];
    stat_verify_expected(&vp, prob);
    fst_chi2 r;
    for (int fault = 1; fault >= 0; --fault) {
        uint64_t malformed = 0;
        memset(counts, 0, sizeof counts);
        fs_cpu_set_faults(fault ? FS_FAULT_NO_EXCLUDE : FS_FAULT_NONE);
        fs_status s = stat_verify_counts(ctx, &vp, 555, DRAWS, counts, &malformed);
        fs_cpu_set_faults(FS_FAULT_NONE);
        assert_int_equal(s, FS_OK);
        double p = fst_chi2_test(counts, prob, 3 * V, &r);
        if (fault) {
            expect_reject("verify, residual keeps the draft", p, &r);
            assert_true(r.impossible > 1000); /* x_k emitted after rejecting x_k */
            /* the statistic alone rejects too: drop the impossible draws */
            for (int i = 0; i < 3 * V; ++i)
                if (prob[i] == 0.0)
                    counts[i] = 0;
            p = fst_chi2_test(counts, prob, 3 * V, &r);
            expect_reject("  same, impossible draws dropped", p, &r);
        } else
            expect_accept("verify, correct residual", p, &r);
    }
    free(rows);
    fs_context_destroy(ctx);
}

/* sample with each tile's last token dropped (FS_FAULT_TILE_EDGE), tile 4 on
 * V = 13: tokens 3, 7, 11 and 12 carry real mass and are never drawn. */
static void test_power_tile_edge(void **state)
{
    (void)state;
    fs_context *ctx = fst_cpu_ctx();
    const int64_t V = 13;
    float *l = fst_gen_logits(32, 1, V, 0.7);
    stat_row row = {V, l, NULL, NULL, 1.0f, FS_DTYPE_F32};
    uint64_t counts[13];
    double prob[13];
    stat_sample_expected(&row, prob);
    double edge = prob[3] + prob[7] + prob[11] + prob[12];
    print_message("  mass of the tile-edge tokens: %.3f\n", edge);
    assert_true(edge > 0.1);
    fst_chi2 r;
    fs_cpu_set_tile_size(4);
    for (int fault = 1; fault >= 0; --fault) {
        memset(counts, 0, sizeof counts);
        fs_cpu_set_faults(fault ? FS_FAULT_TILE_EDGE : FS_FAULT_NONE);
        fs_status s = stat_sample_counts(ctx, &row, 556, DRAWS, counts);
        fs_cpu_set_faults(FS_FAULT_NONE);
        assert_int_equal(s, FS_OK);
        double p = fst_chi2_test(counts, prob, V, &r);
        if (fault)
            expect_reject("sample, tile-edge token dropped (tile 4)", p, &r);
        else
            expect_accept("sample, tile 4, no fault", p, &r);
    }
    fs_cpu_set_tile_size(0);
    free(l);
    fs_context_destroy(ctx);
}

/* ---- hand-written samplers ----------------------------------------------- */

enum { NOISE_GUMBEL = 0, NOISE_BIASED = 1 };

/* The library's two-level block draw (record.h) written out in double over
 * scores l / T_used, with the library's noise coordinates; NOISE_BIASED
 * draws both uniforms of a block as 0.8 u instead of u (the Gumbel's upper
 * tail, which decides the max, is cut at 1.5, and the top fifth of each
 * block's cumulative distribution is never reached). */
static void hand_sampler(const float *l, int64_t V, double T_used, int noise, uint64_t seed,
                         uint64_t *counts)
{
    const double bias = noise == NOISE_BIASED ? 0.8 : 1.0;
    for (int64_t i = 0; i < DRAWS; ++i) {
        uint64_t sd = stat_seed(seed, i), of = stat_offset(seed, i);
        int64_t best = -1;
        double bk = -INFINITY, bv = 0.0;
        for (int64_t b0 = 0; b0 < V; b0 += FS_NOISE_BLOCK) {
            int64_t b1 = b0 + FS_NOISE_BLOCK < V ? b0 + FS_NOISE_BLOCK : V;
            double z = 0.0;
            for (int64_t v = b0; v < b1; ++v)
                z += exp((double)l[v] / T_used);
            uint32_t wg, wu;
            fs_block_words(sd, of, 0, (uint32_t)(b0 / FS_NOISE_BLOCK), &wg, &wu);
            double key = log(z) - log(-log(bias * (double)fs_uniform(wg)));
            if (key > bk) {
                bk = key;
                best = b0;
                bv = bias * (double)fs_uniform(wu) * z;
            }
        }
        int64_t b1 = best + FS_NOISE_BLOCK < V ? best + FS_NOISE_BLOCK : V, tok = b1 - 1;
        double c = 0.0;
        for (int64_t v = best; v < b1; ++v) {
            c += exp((double)l[v] / T_used);
            if (bv < c) {
                tok = v;
                break;
            }
        }
        counts[tok]++;
    }
}

static void test_power_wrong_temperature(void **state)
{
    (void)state;
    fs_context *ctx = fst_cpu_ctx();
    const int64_t V = 37;
    const float T = 0.8f;
    float *l = fst_gen_logits(33, 1, V, 1.5);
    stat_row row = {V, l, NULL, NULL, T, FS_DTYPE_F32};
    double prob[37];
    uint64_t counts[37];
    stat_sample_expected(&row, prob);
    fst_chi2 r;
    memset(counts, 0, sizeof counts);
    hand_sampler(l, V, 1.1 * T, NOISE_GUMBEL, 557, counts);
    expect_reject("hand sampler, temperature 10% high", fst_chi2_test(counts, prob, V, &r), &r);
    memset(counts, 0, sizeof counts);
    hand_sampler(l, V, 0.9 * T, NOISE_GUMBEL, 558, counts);
    expect_reject("hand sampler, temperature 10% low", fst_chi2_test(counts, prob, V, &r), &r);
    memset(counts, 0, sizeof counts);
    hand_sampler(l, V, T, NOISE_GUMBEL, 559, counts);
    expect_accept("hand sampler, right temperature", fst_chi2_test(counts, prob, V, &r), &r);
    memset(counts, 0, sizeof counts);
    assert_int_equal(stat_sample_counts(ctx, &row, 560, DRAWS, counts), FS_OK);
    expect_accept("library sample, same sizes", fst_chi2_test(counts, prob, V, &r), &r);
    free(l);
    fs_context_destroy(ctx);
}

static void test_power_biased_uniform(void **state)
{
    (void)state;
    const int64_t V = 37;
    const float T = 1.0f;
    float *l = fst_gen_logits(34, 1, V, 1.5);
    stat_row row = {V, l, NULL, NULL, T, FS_DTYPE_F32};
    double prob[37];
    uint64_t counts[37];
    stat_sample_expected(&row, prob);
    fst_chi2 r;
    memset(counts, 0, sizeof counts);
    hand_sampler(l, V, T, NOISE_BIASED, 561, counts);
    expect_reject("hand sampler, uniforms biased to (0, 0.8)", fst_chi2_test(counts, prob, V, &r),
                  &r);
    memset(counts, 0, sizeof counts);
    hand_sampler(l, V, T, NOISE_GUMBEL, 562, counts);
    expect_accept("hand sampler, unbiased uniform", fst_chi2_test(counts, prob, V, &r), &r);
    free(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_chi2_helper, fst_reset_hooks),
        cmocka_unit_test_setup(test_power_no_exclude, fst_reset_hooks),
        cmocka_unit_test_setup(test_power_tile_edge, fst_reset_hooks),
        cmocka_unit_test_setup(test_power_wrong_temperature, fst_reset_hooks),
        cmocka_unit_test_setup(test_power_biased_uniform, fst_reset_hooks),
    };
    return cmocka_run_group_tests_name("stat_power", tests, NULL, NULL);
}
