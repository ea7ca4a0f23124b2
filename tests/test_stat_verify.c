/* Exactness of speculative verify, by chi-squared goodness of fit (GSL):
 * the joint law of (number of drafts accepted, token emitted at the stop)
 * against its analytic value in double,
 *   P(accept exactly k, emit t) = prod_{j<k} p_j(x_j) *
 *     [k < n: (1 - p_k(x_k)) r_k(t), r_k = p_k without x_k renormalised;
 *      k = n: p_n(t)],
 * for drafts that are likely (p ~ 0.6), unlikely (~0.05), masked (p = 0) or
 * certain (p = 1), n = 1..4, several temperatures and tile sizes.  10^5
 * requests per case, each with its own seed and offset.  Bonferroni:
 * p > 0.001 / NTESTS for every case; fixed seeds. */
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

enum { NTESTS = 16, DRAWS = 100000, MAXN = 4 };
#define ALPHA (0.001 / NTESTS)
#define REJECT 1e-6 /* a power check's wrong law must give p below this */
enum { LOWT_DRAWS = 60000, LOWT_DRAWS_GREEDY = 10000 };

/* kind of each draft: probability q > 0 set exactly, 0 = masked, 1 = the
   only allowed token of its row */
typedef struct vcase {
    const char *name;
    int64_t V, n;
    float T;
    double q[MAXN];
    int64_t tile;
    int extra_mask; /* also mask ~25% of the other tokens of every row */
    int lm;         /* LM-scale rows (stat_lm_logits, max `top`) and power checks */
    double top;
} vcase;

static void run_case(const vcase *c, uint64_t seed)
{
    fs_context *ctx = fst_cpu_ctx();
    int64_t V = c->V, n = c->n, W = fst_mask_words(V);
    float *rows = c->lm ? malloc(sizeof(float) * (size_t)((n + 1) * V))
                        : fst_gen_logits(seed, n + 1, V, 1.0);
    for (int64_t j = 0; c->lm && j <= n; ++j)
        stat_lm_logits(seed * 31 + (uint64_t)j, V, c->top, c->T, rows + j * V);
    uint32_t *allowed = fst_gen_allowed(seed, n + 1, V, c->extra_mask ? 0.75 : 1.0);
    int32_t x[MAXN];
    fst_rng r;
    fst_rng_seed(&r, seed);
    double px[MAXN];
    for (int64_t j = 0; j < n; ++j) {
        x[j] = (int32_t)fst_randint(&r, V);
        uint32_t *a = allowed + j * W;
        if (c->q[j] == 0.0) {
            fst_set_allowed(a, x[j], 0);
        } else if (c->q[j] == 1.0) {
            for (int64_t v = 0; v < V; ++v)
                fst_set_allowed(a, v, v == x[j]);
        } else {
            fst_set_allowed(a, x[j], 1);
            /* keep at least one other token allowed */
            fst_set_allowed(a, (x[j] + 1) % V, 1);
            stat_set_prob(rows + j * V, a, V, x[j], c->q[j], c->T);
        }
        double *p = malloc(sizeof(double) * (size_t)V);
        stat_softmax(rows + j * V, NULL, a, V, c->T, p);
        px[j] = p[x[j]];
        free(p);
        if (fabs(px[j] - c->q[j]) > 1e-4)
            fail_msg("%s: setup gave p(x_%lld) = %.6f, wanted %.6f", c->name, (long long)j, px[j],
                     c->q[j]);
    }
    stat_verify vp = {V, n, rows, allowed, x, c->T};
    int64_t cells = (n + 1) * V;
    uint64_t *counts = calloc((size_t)cells, sizeof(uint64_t));
    double *prob = malloc(sizeof(double) * (size_t)cells);
    uint64_t malformed = 0;
    fs_cpu_set_tile_size(c->tile);
    double t0 = fst_now();
    fs_status s = stat_verify_counts(ctx, &vp, seed * 104729, c->lm ? LOWT_DRAWS : DRAWS, counts,
                                     &malformed);
    double dt = fst_now() - t0;
    if (s != FS_OK)
        fail_msg("%s: %s (%s)", c->name, fs_status_string(s), fs_context_last_error(ctx));
    assert_int_equal(malformed, 0);
    stat_verify_expected(&vp, prob);
    double total = 0.0;
    for (int64_t i = 0; i < cells; ++i)
        total += prob[i];
    assert_true(fabs(total - 1.0) < 1e-9);
    fst_chi2 res;
    double pv = fst_chi2_test(counts, prob, cells, &res);
    /* acceptance counts alone, for the log */
    uint64_t acc[MAXN + 1] = {0};
    for (int64_t k = 0; k <= n; ++k)
        for (int64_t t = 0; t < V; ++t)
            acc[k] += counts[k * V + t];
    print_message("%-36s n %lld V %3lld T %.2g: chi2 %8.2f df %3d p %.4f | stops %llu %llu %llu "
                  "%llu %llu (%.2fs)\n",
                  c->name, (long long)n, (long long)V, c->T, res.stat, res.df, pv,
                  (unsigned long long)acc[0], (unsigned long long)acc[1],
                  (unsigned long long)acc[2], (unsigned long long)acc[3],
                  (unsigned long long)acc[4], dt);
    if (res.impossible)
        fail_msg("%s: %llu draws in zero-probability cells", c->name,
                 (unsigned long long)res.impossible);
    if (!(pv > ALPHA))
        fail_msg("%s: p = %.3g <= %.3g (chi2 %.1f, df %d, worst cell k=%lld t=%lld z %.1f)",
                 c->name, pv, ALPHA, res.stat, res.df,
                 (long long)(res.worst_cell >= 0 ? res.worst_cell / V : -1),
                 (long long)(res.worst_cell >= 0 ? res.worst_cell % V : -1), res.worst_z);
    if (c->lm) {
        /* power: the same harness rejects the library at 1.03 T, and with
           every T < 0.3 sampled greedily (FS_FAULT_LOW_T_GREEDY) */
        for (int wrong = 0; wrong < 2; ++wrong) {
            stat_verify run = vp;
            run.T = wrong == 0 ? c->T * 1.03f : c->T;
            memset(counts, 0, sizeof(uint64_t) * (size_t)cells);
            malformed = 0;
            fs_cpu_set_faults(wrong == 1 ? FS_FAULT_LOW_T_GREEDY : FS_FAULT_NONE);
            s = stat_verify_counts(ctx, &run, seed * 104729 + 1 + (uint64_t)wrong,
                                   wrong == 0 ? LOWT_DRAWS : LOWT_DRAWS_GREEDY, counts, &malformed);
            fs_cpu_set_faults(FS_FAULT_NONE);
            assert_int_equal(s, FS_OK);
            assert_int_equal(malformed, 0);
            double pw = fst_chi2_test(counts, prob, cells, &res);
            const char *what = wrong == 0 ? "power: T 3% high" : "power: T < 0.3 sampled greedily";
            print_message("  %-34s chi2 %10.1f df %3d p %.3g  -> must reject\n", what, res.stat,
                          res.df, pw);
            if (!(pw < REJECT))
                fail_msg("%s: %s was not rejected (p = %.3g)", c->name, what, pw);
        }
    }
    fs_cpu_set_tile_size(0);
    free(rows);
    free(allowed);
    free(counts);
    free(prob);
    fs_context_destroy(ctx);
}

static const vcase CASES[] = {
    {"likely", 13, 1, 1.0f, {0.6}, 0, 0},
    {"unlikely", 13, 1, 1.0f, {0.05}, 0, 0},
    {"masked", 13, 1, 1.0f, {0.0}, 4, 0},
    {"binary vocabulary", 2, 1, 1.0f, {0.6}, 0, 0},
    {"likely x2", 37, 2, 1.0f, {0.6, 0.6}, 8, 0},
    {"high acceptance", 5, 2, 1.0f, {0.9, 0.6}, 2, 0},
    {"likely/unlikely/likely T0.7", 37, 3, 0.7f, {0.6, 0.05, 0.6}, 0, 0},
    {"likely x4 tile 8", 37, 4, 1.0f, {0.6, 0.6, 0.6, 0.6}, 8, 0},
    {"mixed with masks T1.5", 37, 4, 1.5f, {0.6, 0.0, 0.6, 0.05}, 8, 1},
    {"certain then likely", 13, 2, 1.0f, {1.0, 0.6}, 4, 0},
    {"V101 tile 16 T2", 101, 3, 2.0f, {0.6, 0.6, 0.05}, 16, 1},
    {"masked then likely x3", 37, 4, 0.5f, {0.6, 0.6, 0.6, 0.0}, 0, 1},
};

/* The temperatures requests use, with LM-scale target rows (max 20-40, a head
 * spread over 8 T below it, the tail several units lower; see
 * test_stat_sample.c): 60,000 requests per case, and each case a power check
 * (1.03 T and "T < 0.3 is greedy" must be rejected at p < 1e-6).  The last
 * sits just above FS_MIN_TEMPERATURE with logits ~1e-5 apart near 0. */
static const vcase LOWT[] = {
    {"LM T0.05", 200, 2, 0.05f, {0.6, 0.3}, 0, 0, 1, 30.0},
    {"LM T0.1 masks tile 64", 200, 3, 0.1f, {0.6, 0.05, 0.6}, 64, 1, 1, 24.0},
    {"LM T0.2", 200, 2, 0.2f, {0.3, 0.6}, 0, 0, 1, 38.0},
    {"T1.2e-5 (just above FS_MIN_T)", 200, 2, 1.2e-5f, {0.6, 0.3}, 0, 0, 1, 0.0},
};

static void test_verify_joint_law(void **state)
{
    (void)state;
    assert_int_equal(sizeof CASES / sizeof CASES[0] + sizeof LOWT / sizeof LOWT[0], NTESTS);
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; ++i)
        run_case(&CASES[i], 2000 + i);
}

static void test_verify_low_temperature(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof LOWT / sizeof LOWT[0]; ++i)
        run_case(&LOWT[i], 4000 + i);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_verify_joint_law, fst_reset_hooks),
        cmocka_unit_test_setup(test_verify_low_temperature, fst_reset_hooks),
    };
    return cmocka_run_group_tests_name("stat_verify", tests, NULL, NULL);
}
