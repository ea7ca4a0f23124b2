/* Top-k / top-p / min-p on the CPU ops against the sort-based materialised
 * oracle (support/filter_ref.c: vLLM's sort + threshold + cumulative sum,
 * with ties kept; then naive_ref.c's draw under the mask "allowed and
 * kept"), token for token with the same noise: sample and verify, fused and
 * over logits, f32 / f16 / bf16, V not a multiple of 16, bias, masks,
 * tie-heavy logits, random and edge parameters.  The candidate cap is lowered
 * (1 .. 8) and the second pass forced, so that every path is compared.  A
 * disagreement is tolerated only at a float near-tie of the filters'
 * decision (filter_ref.h) or of the draw, and there must be few.  Also: the
 * fallback counts, filters that cut nothing give the unfiltered tokens, the
 * tie rule, and vocabulary shards merged as ranks would equal the unsharded
 * call. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_backend.h"
#include "cpu_filter.h"
#include "filter_ref.h"
#include "finalize.h"
#include "fs_test.h"
#include "naive_ref.h"
#include "oracle_inputs.h"

#define NEAR_TIE 1e-4
#define LOGPROB_TOL 1e-4

static const fs_dtype DTYPES[3] = {FS_DTYPE_F32, FS_DTYPE_F16, FS_DTYPE_BF16};
static const float TEMPS[6] = {0.0f, 0.5f, 1.0f, 2.0f, 0.7f, 1.5f};

static long g_compared, g_near_filter, g_near_draw, g_filtered;

/* ---- parameters --------------------------------------------------------- */

enum { ARR_K = 1, ARR_P = 2, ARR_MINP = 4, ARR_ALL = 7 };

/* k values: negatives stand for V - 1, V and 2^30 */
static const int32_t K_MENU[] = {1, 2, 3, 5, 17, 40, 64, 65, 100, 300, -1, -2, -3};
static const float P_MENU[] = {0.95f, 0.9f, 0.8f, 0.5f, 0.2f, 1e-6f, 0.999f, 0.99f, 1.0f};
static const float MINP_MENU[] = {0.01f, 0.05f, 0.1f, 0.3f, 0.9f, 0.999f, 1e-30f, 0.0f};
#define NMENU(a) ((int64_t)(sizeof a / sizeof a[0]))

/* Per-request T / seed / offset and random filters (each filter on with
   probability 0.6) for the arrays in `arrays`; bias / mask for `rows` rows. */
static void make_filter_params(fst_params *pp, int64_t requests, int64_t rows, int64_t V,
                               int bias, int mask, uint64_t seed, unsigned arrays)
{
    fst_params_alloc(pp, requests, 1);
    fst_rng r;
    fst_rng_seed(&r, seed ^ 0xF117E5ull);
    for (int64_t i = 0; i < requests; ++i) {
        fst_params_draw(pp, i, &r, TEMPS[fst_randint(&r, 6)]);
        int32_t k = K_MENU[fst_randint(&r, NMENU(K_MENU))];
        pp->top_k[i] = k == -1 ? (int32_t)(V - 1) : k == -2 ? (int32_t)V : k == -3 ? 1 << 30 : k;
        if (fst_unif(&r) < 0.4)
            pp->top_k[i] = 0;
        pp->top_p[i] = fst_unif(&r) < 0.6 ? P_MENU[fst_randint(&r, NMENU(P_MENU))] : 1.0f;
        pp->min_p[i] = fst_unif(&r) < 0.6 ? MINP_MENU[fst_randint(&r, NMENU(MINP_MENU))] : 0.0f;
        pp->fallback[i] = -7;
    }
    fst_params_finish(pp, rows, V, bias, mask, seed);
    pp->p.top_k = arrays & ARR_K ? pp->top_k : NULL;
    pp->p.top_p = arrays & ARR_P ? pp->top_p : NULL;
    pp->p.min_p = arrays & ARR_MINP ? pp->min_p : NULL;
    pp->p.out_filter_fallback = pp->fallback;
}

/* 1 when request r's row(s) filter: samples and some filter is on. */
static int filters_on(const fs_sampling *p, int64_t r, int64_t V)
{
    if (!(p->temperature[r] >= FS_MIN_TEMPERATURE) || ref_filter_status(p, r) != FS_ROW_OK)
        return 0;
    ref_filter f = ref_filter_of(p, r);
    return (f.top_k > 0 && f.top_k < V) || f.top_p < 1.0 || f.min_p > 0.0;
}

/* Status the library must give: a pre-scan failure of the oracle stays,
   else bad filters, else what the scan finds. */
static int32_t expected_status(int32_t oracle, const fs_sampling *p, int64_t r)
{
    if (oracle != FS_ROW_OK && oracle != FS_ROW_NONFINITE && oracle != FS_ROW_ALL_MASKED)
        return oracle;
    int32_t f = ref_filter_status(p, r);
    return f != FS_ROW_OK ? f : oracle;
}

/* ---- comparisons -------------------------------------------------------- */

static void check_sample(const fst_inputs *in, const fs_sampling *p, const int32_t *tok,
                         const float *lp, const int32_t *st, const char *label)
{
    int64_t rows = in->rows, V = in->V;
    int64_t *req = malloc(sizeof(int64_t) * (size_t)rows);
    unsigned char *near = malloc((size_t)rows);
    for (int64_t r = 0; r < rows; ++r)
        req[r] = r;
    uint32_t *mask = ref_filter_mask(in->ref, rows, V, p, req, near);
    fs_sampling q = *p;
    q.allowed = mask;
    int32_t *rt = malloc(sizeof(int32_t) * (size_t)rows), *rs = malloc(sizeof(int32_t) * (size_t)rows);
    double *rl = malloc(sizeof(double) * (size_t)rows);
    ref_sample(in->ref, rows, V, &q, rt, rl, rs, NULL);
    for (int64_t r = 0; r < rows; ++r) {
        ++g_compared;
        int32_t want = expected_status(rs[r], p, r);
        if (st[r] != want)
            fail_msg("%s row %lld: status %d, oracle %d", label, (long long)r, st[r], want);
        if (want != FS_ROW_OK) {
            assert_int_equal(tok[r], -1);
            if (lp)
                assert_true(isnan(lp[r]));
            continue;
        }
        g_filtered += filters_on(p, r, V);
        if (near[r]) {
            ++g_near_filter;
            continue;
        }
        if (tok[r] == rt[r]) {
            if (lp && !(fabs((double)lp[r] - rl[r]) < LOGPROB_TOL))
                FST_MISMATCH("%s row %lld (T %g): token %d logprob %.7g, oracle %.7g", label,
                             (long long)r, p->temperature[r], tok[r], lp[r], rl[r]);
            continue;
        }
        double gap = ref_sample_gap(in->ref, V, &q, r, tok[r]);
        if (!(gap < NEAR_TIE)) {
            ref_filter f = ref_filter_of(p, r);
            FST_MISMATCH("%s row %lld (T %g, k %d p %g min_p %g): token %d, oracle %d, gap %.3g",
                         label, (long long)r, p->temperature[r], f.top_k, f.top_p, f.min_p, tok[r],
                         rt[r], gap);
            continue;
        }
        ++g_near_draw;
    }
    free(req);
    free(near);
    free(mask);
    free(rt);
    free(rs);
    free(rl);
}

static void check_verify(const fst_inputs *in, const fs_drafts *d, const fs_sampling *p,
                         const int32_t *tok, const int32_t *nem, const float *lp,
                         const int32_t *st, const char *label)
{
    int64_t R = d->num_requests, stride = d->max_drafts + 1, rows = in->rows, V = in->V;
    int64_t *req = ref_filter_verify_requests(d);
    unsigned char *near = malloc((size_t)rows);
    uint32_t *mask = ref_filter_mask(in->ref, rows, V, p, req, near);
    fs_sampling q = *p;
    q.allowed = mask;
    int32_t *rt = malloc(sizeof(int32_t) * (size_t)(R * stride));
    double *rl = malloc(sizeof(double) * (size_t)(R * stride));
    int32_t *rn = malloc(sizeof(int32_t) * (size_t)R), *rs = malloc(sizeof(int32_t) * (size_t)R);
    ref_verify(in->ref, V, d, &q, rt, rn, rl, rs, NULL);
    for (int64_t r = 0; r < R; ++r) {
        ++g_compared;
        const int32_t *t = tok + r * stride;
        const float *l = lp ? lp + r * stride : NULL;
        int32_t want = expected_status(rs[r], p, r);
        if (st[r] != want)
            fail_msg("%s request %lld: status %d, oracle %d", label, (long long)r, st[r], want);
        for (int64_t k = nem[r]; k < stride; ++k)
            if (t[k] != -1 || (l && !isnan(l[k])))
                fail_msg("%s request %lld: padding [%lld] = %d", label, (long long)r,
                         (long long)k, t[k]);
        if (want != FS_ROW_OK) {
            assert_int_equal(nem[r], 0);
            continue;
        }
        g_filtered += filters_on(p, r, V);
        int any_near = 0;
        for (int64_t i = d->draft_offsets[r] + r; i <= d->draft_offsets[r + 1] + r; ++i)
            any_near |= near[i];
        if (any_near) {
            ++g_near_filter;
            continue;
        }
        int same = nem[r] == rn[r];
        for (int64_t k = 0; same && k < nem[r]; ++k)
            same = t[k] == rt[r * stride + k];
        if (same) {
            for (int64_t k = 0; l && k < nem[r]; ++k)
                if (!(fabs((double)l[k] - rl[r * stride + k]) < LOGPROB_TOL))
                    FST_MISMATCH("%s request %lld pos %lld: logprob %.7g, oracle %.7g", label,
                                 (long long)r, (long long)k, l[k], rl[r * stride + k]);
            continue;
        }
        double gap = ref_verify_gap(in->ref, V, d, &q, r, t, nem[r]);
        if (!(gap < NEAR_TIE)) {
            FST_MISMATCH("%s request %lld (T %g): emitted %d (last %d), oracle %d (last %d), "
                         "gap %.3g",
                         label, (long long)r, p->temperature[r], nem[r], t[nem[r] - 1], rn[r],
                         rt[r * stride + rn[r] - 1], gap);
            continue;
        }
        ++g_near_draw;
    }
    free(req);
    free(near);
    free(mask);
    free(rt);
    free(rl);
    free(rn);
    free(rs);
}

/* out_filter_fallback: every request written, 0 where no row filters;
   forced: exactly the filtered rows of a usable request. */
static long check_fallback(const fs_sampling *p, const int32_t *st, int64_t requests, int64_t V,
                           const int32_t *rows_of, int forced, const char *label)
{
    long total = 0;
    for (int64_t r = 0; r < requests; ++r) {
        int32_t f = p->out_filter_fallback[r];
        int on = st[r] == FS_ROW_OK && filters_on(p, r, V);
        int32_t most = on ? (rows_of ? rows_of[r] : 1) : 0;
        if (f < 0 || f > most || (forced && f != most))
            fail_msg("%s request %lld: out_filter_fallback %d (rows that filter: %d%s)", label,
                     (long long)r, f, most, forced ? ", second pass forced" : "");
        total += f;
    }
    return total;
}

/* ---- drafts ------------------------------------------------------------- */

/* n_r in [0, maxd]; drafts: the target argmax, a token drawn from the
   filtered target (likely kept), or a uniform token (often cut). */
static int64_t make_drafts(fst_drafts_buf *db, int64_t R, int64_t maxd, int64_t V,
                           uint64_t seed)
{
    fst_rng r;
    fst_rng_seed(&r, seed ^ 0xD4AF7ull);
    int64_t rows = fst_drafts_layout(db, R, maxd, &r, 0);
    for (int64_t i = 0; i < db->d.num_draft_tokens; ++i)
        db->tokens[i] = (int32_t)fst_randint(&r, V);
    return rows;
}

static void choose_drafts(fst_drafts_buf *db, const fst_inputs *in, const fs_sampling *p,
                          uint64_t seed)
{
    fst_rng r;
    fst_rng_seed(&r, seed ^ 0xC401CEull);
    int64_t V = in->V, W = fst_mask_words(V);
    int64_t *req = ref_filter_verify_requests(&db->d);
    uint32_t *mask = ref_filter_mask(in->ref, in->rows, V, p, req, NULL);
    double *logp = malloc(sizeof(double) * (size_t)V);
    for (int64_t q = 0; q < db->d.num_requests; ++q)
        for (int64_t i = db->offsets[q]; i < db->offsets[q + 1]; ++i) {
            int64_t row = i + q;
            const float *b = p->logit_bias ? p->logit_bias + row * V : NULL;
            double u = fst_unif(&r), T = p->temperature[q] > 0 ? p->temperature[q] : 1.0;
            if (u < 0.7 && ref_row_logp(in->ref + row * V, V, b, mask + row * W, T, logp) ==
                               FS_ROW_OK) {
                int32_t x = -1;
                double best = -INFINITY, c = fst_unif(&r), acc = 0.0;
                for (int64_t v = 0; v < V; ++v) {
                    if (u < 0.35 && logp[v] > best) {
                        best = logp[v];
                        x = (int32_t)v;
                    }
                    acc += exp(logp[v]);
                    if (u >= 0.35 && x < 0 && c < acc)
                        x = (int32_t)v;
                }
                if (x >= 0)
                    db->tokens[i] = x;
            }
        }
    free(req);
    free(mask);
    free(logp);
}

/* ---- tests -------------------------------------------------------------- */

static const unsigned ARRAYS[7] = {ARR_ALL, ARR_K, ARR_P, ARR_MINP, ARR_K | ARR_P,
                                   ARR_P | ARR_MINP, ARR_K | ARR_MINP};

static long sample_case(fs_context *ctx, fs_dtype dt, int fused, int64_t rows, int64_t V,
                        int64_t D, int bias, int mask, uint64_t seed, int ties, unsigned arrays,
                        const char *what)
{
    fst_inputs in;
    fst_params pp;
    fst_make_inputs(&in, dt, fused, rows, V, D, seed, ties);
    make_filter_params(&pp, rows, rows, V, bias, mask, seed, arrays);
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)rows), *st = malloc(sizeof(int32_t) * (size_t)rows);
    float *lp = malloc(sizeof(float) * (size_t)rows);
    char label[160];
    snprintf(label, sizeof label, "%s %s %s V%lld bias%d mask%d ties%d arrays%u", what,
             fst_dtype_name(dt), fused ? "fused" : "logits", (long long)V, bias, mask, ties,
             arrays);
    fs_status s = fst_run_sample(ctx, &in, &pp.p, tok, lp, st);
    if (s != FS_OK && s != FS_ERR_INVALID_ROWS)
        fail_msg("%s: %s (%s)", label, fs_status_string(s), fs_context_last_error(ctx));
    check_sample(&in, &pp.p, tok, lp, st, label);
    long fb = check_fallback(&pp.p, st, rows, V, NULL, 0, label);
    free(tok);
    free(st);
    free(lp);
    fst_free_params(&pp);
    fst_free_inputs(&in);
    return fb;
}

static void test_sample_vs_oracle(void **state)
{
    (void)state;
    fs_context *ctx = fst_cpu_ctx();
    uint64_t seed = 100;
    long fb = 0;
    for (int di = 0; di < 3; ++di)
        for (int fused = 0; fused < 2; ++fused)
            for (int bm = 0; bm < 4; ++bm, ++seed)
                fb += sample_case(ctx, DTYPES[di], fused, 40, 1013, 67, bm & 1, bm >> 1, seed, 0,
                                  ARRAYS[seed % 7], "sample");
    print_message("sample V1013: %ld rows took the second pass\n", fb);
    assert_true(fb > 0); /* wide nuclei at T 2 */
    fs_context_destroy(ctx);
}

static void test_sample_small_vocab(void **state)
{
    (void)state;
    fs_context *ctx = fst_cpu_ctx();
    const int64_t Vs[] = {1, 2, 13, 37, 100, 257};
    uint64_t seed = 300;
    for (size_t i = 0; i < sizeof Vs / sizeof Vs[0]; ++i)
        for (int fused = 0; fused < 2; ++fused)
            for (int bm = 0; bm < 4; ++bm, ++seed)
                sample_case(ctx, fused ? FS_DTYPE_BF16 : FS_DTYPE_F32, fused, 30, Vs[i], 5,
                            bm & 1, bm >> 1, seed, 0, ARRAYS[seed % 7], "small");
    fs_context_destroy(ctx);
}

/* Tie-heavy logits (multiples of 1/4): the kept sets end inside tie groups. */
static void test_ties_vs_oracle(void **state)
{
    (void)state;
    fs_context *ctx = fst_cpu_ctx();
    uint64_t seed = 500;
    for (int cap = 0; cap < 2; ++cap) {
        fs_cpu_set_filter_candidates(cap ? 4 : 0);
        for (int di = 0; di < 3; ++di)
            for (int bm = 0; bm < 4; ++bm, ++seed)
                sample_case(ctx, DTYPES[di], 0, 60, 300, 1, bm & 1, bm >> 1, seed, 1, ARR_ALL,
                            cap ? "ties cap4" : "ties");
    }
    fs_context_destroy(ctx);
}

/* Small candidate caps and a forced second pass: every path against the
 * oracle, and the forced second pass bit-identical (tokens and logprobs) to
 * the default run wherever the oracle calls the row decided. */
static void test_second_pass_vs_oracle(void **state)
{
    (void)state;
    fs_context *ctx = fst_cpu_ctx();
    const int64_t rows = 60, V = 257;
    const int caps[] = {1, 2, 3, 8, 0};
    long fb_total = 0;
    for (int fused = 0; fused < 2; ++fused)
        for (int bm = 0; bm < 4; ++bm) {
            uint64_t seed = 700 + (uint64_t)(fused * 4 + bm);
            fs_dtype dt = fused ? FS_DTYPE_BF16 : FS_DTYPE_F32;
            fst_inputs in;
            fst_params pp;
            fst_make_inputs(&in, dt, fused, rows, V, 9, seed, 0);
            make_filter_params(&pp, rows, rows, V, bm & 1, bm >> 1, seed, ARR_ALL);
            int32_t tok0[60], st0[60], tok[60], st[60];
            float lp0[60], lp[60];
            fs_cpu_set_filter_candidates(0);
            fst_run_sample(ctx, &in, &pp.p, tok0, lp0, st0);
            check_sample(&in, &pp.p, tok0, lp0, st0, "default cap");
            for (int ci = 0; ci <= 5; ++ci) {
                int forced = ci == 5;
                fs_cpu_set_filter_candidates(forced ? 0 : caps[ci]);
                fs_cpu_set_filter_second_pass(forced);
                fs_status s = fst_run_sample(ctx, &in, &pp.p, tok, lp, st);
                fs_cpu_set_filter_second_pass(0);
                assert_true(s == FS_OK || s == FS_ERR_INVALID_ROWS);
                char label[96];
                snprintf(label, sizeof label, "%s cap %d bias%d mask%d",
                         fused ? "fused" : "logits", forced ? 64 : caps[ci], bm & 1, bm >> 1);
                check_sample(&in, &pp.p, tok, lp, st, label);
                fb_total += check_fallback(&pp.p, st, rows, V, NULL, forced, label);
                if (!forced)
                    continue;
                int64_t req[60];
                unsigned char near[60];
                for (int r = 0; r < 60; ++r)
                    req[r] = r;
                free(ref_filter_mask(in.ref, rows, V, &pp.p, req, near));
                for (int r = 0; r < 60; ++r) {
                    if (near[r])
                        continue;
                    assert_int_equal(tok[r], tok0[r]);
                    if (memcmp(&lp[r], &lp0[r], sizeof(float)) != 0 && !(isnan(lp[r]) && isnan(lp0[r])))
                        fail_msg("row %d: forced second pass logprob %.9g, one pass %.9g", r, lp[r],
                                 lp0[r]);
                }
            }
            fst_free_params(&pp);
            fst_free_inputs(&in);
        }
    print_message("small caps / forced: %ld second-pass rows compared\n", fb_total);
    assert_true(fb_total > 500);
    fs_context_destroy(ctx);
}

static void verify_case(fs_context *ctx, fs_dtype dt, int fused, int64_t R, int64_t V, int64_t D,
                        int bias, int mask, uint64_t seed, int cap, int forced)
{
    fst_drafts_buf db;
    int64_t rows = make_drafts(&db, R, 4, V, seed);
    fst_inputs in;
    fst_params pp;
    fst_make_inputs(&in, dt, fused, rows, V, D, seed, 0);
    make_filter_params(&pp, R, rows, V, bias, mask, seed, ARRAYS[seed % 7]);
    choose_drafts(&db, &in, &pp.p, seed);
    int64_t stride = 5;
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)(R * stride));
    float *lp = malloc(sizeof(float) * (size_t)(R * stride));
    int32_t *nem = malloc(sizeof(int32_t) * (size_t)R), *st = malloc(sizeof(int32_t) * (size_t)R);
    fs_cpu_set_filter_candidates(cap);
    fs_cpu_set_filter_second_pass(forced);
    fs_status s = fst_run_verify(ctx, &in, &db.d, &pp.p, tok, nem, lp, st);
    fs_cpu_set_filter_second_pass(0);
    fs_cpu_set_filter_candidates(0);
    assert_true(s == FS_OK || s == FS_ERR_INVALID_ROWS);
    char label[128];
    snprintf(label, sizeof label, "verify %s %s V%lld bias%d mask%d cap%d forced%d",
             fst_dtype_name(dt), fused ? "fused" : "logits", (long long)V, bias, mask, cap,
             forced);
    check_verify(&in, &db.d, &pp.p, tok, nem, lp, st, label);
    check_fallback(&pp.p, st, R, V, db.rows_of, forced, label);
    free(tok);
    free(lp);
    free(nem);
    free(st);
    fst_free_params(&pp);
    fst_free_inputs(&in);
    fst_free_drafts(&db);
}

static void test_verify_vs_oracle(void **state)
{
    (void)state;
    fs_context *ctx = fst_cpu_ctx();
    uint64_t seed = 900;
    for (int di = 0; di < 3; ++di)
        for (int fused = 0; fused < 2; ++fused)
            for (int bm = 0; bm < 4; ++bm, ++seed)
                verify_case(ctx, DTYPES[di], fused, 24, di == 0 ? 1013 : 257, 33, bm & 1, bm >> 1,
                            seed, 0, 0);
    for (int bm = 0; bm < 4; ++bm, ++seed) {
        verify_case(ctx, FS_DTYPE_F32, 0, 60, 37, 1, bm & 1, bm >> 1, seed, 2, 0);
        verify_case(ctx, FS_DTYPE_BF16, 1, 30, 100, 8, bm & 1, bm >> 1, seed, 0, 1);
    }
    fs_context_destroy(ctx);
}

/* ---- edge cases ----------------------------------------------------------- */

/* One row of scores, drawn many times (each draw its own seed) through
   fs_sample_logits with the given filters: counts[V]. */
static void draw_counts(fs_context *ctx, const float *l, int64_t V, const uint32_t *allowed,
                        const float *bias, float T, int32_t k, float p, float mp, int64_t n,
                        uint64_t seed, uint64_t *counts)
{
    int64_t W = fst_mask_words(V);
    float *lg = malloc(sizeof(float) * (size_t)(n * V));
    float *bs = bias ? malloc(sizeof(float) * (size_t)(n * V)) : NULL;
    uint32_t *al = allowed ? malloc(sizeof(uint32_t) * (size_t)(n * W)) : NULL;
    float *Ts = malloc(sizeof(float) * (size_t)n), *ps = malloc(sizeof(float) * (size_t)n);
    float *mps = malloc(sizeof(float) * (size_t)n);
    int32_t *ks = malloc(sizeof(int32_t) * (size_t)n), *tok = malloc(sizeof(int32_t) * (size_t)n);
    int32_t *st = malloc(sizeof(int32_t) * (size_t)n);
    uint64_t *sd = malloc(sizeof(uint64_t) * (size_t)n);
    for (int64_t i = 0; i < n; ++i) {
        memcpy(lg + i * V, l, sizeof(float) * (size_t)V);
        if (bs)
            memcpy(bs + i * V, bias, sizeof(float) * (size_t)V);
        if (al)
            memcpy(al + i * W, allowed, sizeof(uint32_t) * (size_t)W);
        Ts[i] = T;
        ks[i] = k;
        ps[i] = p;
        mps[i] = mp;
        sd[i] = seed * 7919u + (uint64_t)i;
    }
    fs_sampling s = {Ts, sd, NULL, bs, al};
    s.top_k = ks;
    s.top_p = ps;
    s.min_p = mps;
    assert_int_equal(fst_sample_logits(ctx, lg, FS_DTYPE_F32, n, V, &s, tok, NULL, st), FS_OK);
    for (int64_t i = 0; i < n; ++i)
        counts[tok[i]]++;
    free(lg);
    free(bs);
    free(al);
    free(Ts);
    free(ps);
    free(mps);
    free(ks);
    free(tok);
    free(st);
    free(sd);
}

/* The set of tokens drawn must be exactly `want` (each drawn at least once). */
static void expect_support(const uint64_t *counts, int64_t V, const int32_t *want, int nwant,
                           const char *what)
{
    for (int64_t v = 0; v < V; ++v) {
        int in = 0;
        for (int i = 0; i < nwant; ++i)
            in |= want[i] == v;
        if (in && counts[v] == 0)
            fail_msg("%s: token %lld is kept but never drawn", what, (long long)v);
        if (!in && counts[v] != 0)
            fail_msg("%s: token %lld drawn %llu times, but it is cut", what, (long long)v,
                     (unsigned long long)counts[v]);
    }
}

/* The tie rule, at each filter's threshold, and on both paths. */
static void test_tie_rule(void **state)
{
    (void)state;
    fs_context *ctx = fst_cpu_ctx();
    enum { V = 70, N = 3000 };
    float l[V];
    for (int pass = 0; pass < 2; ++pass) {
        fs_cpu_set_filter_second_pass(pass);
        /* top-k = 2 with a five-way tie at the top, spread over noise blocks:
           all five are kept */
        for (int v = 0; v < V; ++v)
            l[v] = -1.0f - 0.01f * (float)v;
        const int32_t top[5] = {3, 20, 21, 47, 69};
        for (int i = 0; i < 5; ++i)
            l[top[i]] = 2.0f;
        uint64_t c[V] = {0};
        draw_counts(ctx, l, V, NULL, NULL, 1.0f, 2, 1.0f, 0.0f, N, 1, c);
        expect_support(c, V, top, 5, "top-k 2, five-way tie");
        /* k = 6: the five and the next (a three-way tie): eight kept */
        const int32_t eight[8] = {3, 20, 21, 47, 69, 0, 1, 2};
        l[1] = l[2] = l[0];
        memset(c, 0, sizeof c);
        draw_counts(ctx, l, V, NULL, NULL, 1.0f, 6, 1.0f, 0.0f, N, 2, c);
        expect_support(c, V, eight, 8, "top-k 6, tie at the 6th");
        /* top-k's tie group counts in the mass top-p renormalises by:
           probabilities 0.3, 0.2, three of 0.1 (the 3rd score), the rest
           below; k = 3 keeps five tokens, Z_k = 0.8, and top-p 0.7 keeps the
           tie group (0.5 / 0.8 < 0.7; with only one of the ties in Z_k it
           would be 0.5 / 0.6 >= 0.7) */
        for (int v = 0; v < V; ++v)
            l[v] = logf(0.2f / 60.0f);
        l[7] = logf(0.3f);
        l[40] = logf(0.2f);
        l[8] = l[25] = l[60] = logf(0.1f);
        const int32_t kp[5] = {7, 40, 8, 25, 60};
        memset(c, 0, sizeof c);
        draw_counts(ctx, l, V, NULL, NULL, 1.0f, 3, 0.7f, 0.0f, N, 6, c);
        expect_support(c, V, kp, 5, "top-k tie group inside top-p's mass");
        /* min-p: a token exactly at max + log(min_p) is kept, the next float
           below it is not */
        for (int v = 0; v < V; ++v)
            l[v] = -30.0f;
        l[10] = 0.0f;
        l[11] = logf(0.25f);
        l[12] = nextafterf(logf(0.25f), -INFINITY);
        l[13] = -0.5f;
        const int32_t mkept[3] = {10, 11, 13};
        memset(c, 0, sizeof c);
        draw_counts(ctx, l, V, NULL, NULL, 1.0f, 0, 1.0f, 0.25f, N, 3, c);
        expect_support(c, V, mkept, 3, "min-p boundary");
        /* top-p: the token crossing p is kept, and with it its tie group;
           probabilities 0.4, four of 0.1 (a tie), 0.09, 0.06, 0.05 (and ~1e-16):
           p = 0.45 crosses inside the tie group, so 0.4 + 4 x 0.1 are kept */
        for (int v = 0; v < V; ++v)
            l[v] = -40.0f;
        l[30] = logf(0.4f);
        for (int v = 31; v < 35; ++v)
            l[v] = logf(0.1f);
        l[35] = logf(0.09f);
        l[36] = logf(0.06f);
        l[37] = logf(0.05f);
        const int32_t pkept[5] = {30, 31, 32, 33, 34};
        memset(c, 0, sizeof c);
        draw_counts(ctx, l, V, NULL, NULL, 1.0f, 0, 0.45f, 0.0f, N, 4, c);
        expect_support(c, V, pkept, 5, "top-p crossing inside a tie group");
        /* p below the first token's mass: the first token alone */
        const int32_t first[1] = {30};
        memset(c, 0, sizeof c);
        draw_counts(ctx, l, V, NULL, NULL, 1.0f, 0, 0.39f, 0.0f, N, 5, c);
        expect_support(c, V, first, 1, "top-p below the first token's mass");
    }
    fs_context_destroy(ctx);
}

/* Edge values: k = 1 is the argmax (masked tokens do not count, bias does),
 * p tiny and min_p near 1 keep the argmax only; k >= V, k = 0, p = 1,
 * min_p = 0 are off; a filter that cuts nothing (k = number of allowed
 * tokens, min_p = 1e-30) gives the unfiltered token -- through both the one
 * pass and the second pass. */
static void test_edge_cases(void **state)
{
    (void)state;
    fs_context *ctx = fst_cpu_ctx();
    const int64_t rows = 64, V = 211, W = fst_mask_words(V);
    float *l = fst_gen_logits(1234, rows, V, 2.0);
    /* ~53 allowed tokens a row: most rows hold at most 64 (one pass decides
       them), the rest more (the second pass) */
    uint32_t *allowed = fst_gen_allowed(1234, rows, V, 0.25);
    float *bias = fst_gen_bias(1234, rows, V);
    float T[64], p[64], mp[64];
    int32_t k[64], n_allowed[64], best[64];
    uint64_t seed[64];
    for (int r = 0; r < rows; ++r) {
        T[r] = r % 3 == 0 ? 0.7f : r % 3 == 1 ? 1.0f : 2.0f;
        seed[r] = 5000 + (uint64_t)r;
        /* the best allowed token (ties impossible: N(0,4) floats + bias) and
           a disallowed token above it */
        best[r] = -1;
        float bs = -INFINITY;
        for (int v = 0; v < V; ++v) {
            if (!fst_allowed(allowed + r * W, v))
                continue;
            float s = l[r * V + v] + bias[r * V + v];
            if (s > bs) {
                bs = s;
                best[r] = v;
            }
        }
        int hidden = (best[r] + 1) % (int)V;
        fst_set_allowed(allowed + r * W, hidden, 0);
        l[r * V + hidden] = 50.0f;
    }
    for (int r = 0; r < rows; ++r) {
        n_allowed[r] = 0;
        for (int v = 0; v < V; ++v)
            n_allowed[r] += fst_allowed(allowed + r * W, v);
    }
    int32_t t0[64], s0[64], t1[64], s1[64];
    float lp0[64], lp1[64];
    fs_sampling base = {T, seed, NULL, bias, allowed};
    assert_int_equal(fst_sample_logits(ctx, l, FS_DTYPE_F32, rows, V, &base, t0, lp0, s0), FS_OK);
    for (int pass = 0; pass < 2; ++pass) {
        fs_cpu_set_filter_second_pass(pass);
        fs_sampling f = base;
        /* k = 1: the best allowed token, whatever a masked token scores */
        for (int r = 0; r < rows; ++r)
            k[r] = 1;
        f.top_k = k;
        assert_int_equal(fst_sample_logits(ctx, l, FS_DTYPE_F32, rows, V, &f, t1, lp1, s1), FS_OK);
        for (int r = 0; r < rows; ++r) {
            assert_int_equal(t1[r], best[r]);
            assert_true(fabsf(lp1[r]) < 1e-6f); /* probability 1 under the filter */
        }
        /* p tiny, min_p near 1: the argmax only */
        f.top_k = NULL;
        for (int r = 0; r < rows; ++r) {
            p[r] = 1e-7f;
            mp[r] = 0.0f;
        }
        f.top_p = p;
        assert_int_equal(fst_sample_logits(ctx, l, FS_DTYPE_F32, rows, V, &f, t1, lp1, s1), FS_OK);
        for (int r = 0; r < rows; ++r)
            assert_int_equal(t1[r], best[r]);
        f.top_p = NULL;
        for (int r = 0; r < rows; ++r)
            mp[r] = 0.9999f;
        f.min_p = mp;
        assert_int_equal(fst_sample_logits(ctx, l, FS_DTYPE_F32, rows, V, &f, t1, lp1, s1), FS_OK);
        for (int r = 0; r < rows; ++r)
            assert_int_equal(t1[r], best[r]);
        /* off values: identical to no filters, bit for bit */
        for (int r = 0; r < rows; ++r) {
            k[r] = r % 3 == 0 ? 0 : r % 3 == 1 ? (int32_t)V : INT32_MAX;
            p[r] = 1.0f;
            mp[r] = 0.0f;
        }
        f.top_k = k;
        f.top_p = p;
        f.min_p = mp;
        assert_int_equal(fst_sample_logits(ctx, l, FS_DTYPE_F32, rows, V, &f, t1, lp1, s1), FS_OK);
        assert_memory_equal(t1, t0, sizeof t0);
        assert_memory_equal(lp1, lp0, sizeof lp0);
        /* cutting nothing: the unfiltered token (the same block keys bit for
           bit); the logprob up to the summation order of the mass.  The one
           pass decides exactly the rows of at most 64 allowed tokens (their
           candidates are complete); the others, and every row with 3
           candidates, take the second pass */
        int32_t fb[64];
        f.out_filter_fallback = fb;
        for (int r = 0; r < rows; ++r) {
            k[r] = r % 2 ? n_allowed[r] : 0;
            mp[r] = r % 2 ? 0.0f : 1e-30f;
        }
        int wide = 0;
        for (int cap = 0; cap < 2; ++cap) {
            fs_cpu_set_filter_candidates(cap ? 3 : 0);
            assert_int_equal(fst_sample_logits(ctx, l, FS_DTYPE_F32, rows, V, &f, t1, lp1, s1),
                             FS_OK);
            assert_memory_equal(t1, t0, sizeof t0);
            for (int r = 0; r < rows; ++r) {
                assert_true(fabsf(lp1[r] - lp0[r]) < 1e-5f);
                int second = pass || cap || n_allowed[r] > FS_FILTER_CANDIDATES;
                if (fb[r] != second)
                    fail_msg("row %d (%d allowed, cap %d, forced %d): second pass %d", r,
                             n_allowed[r], cap ? 3 : 64, pass, fb[r]);
                wide += n_allowed[r] > FS_FILTER_CANDIDATES;
            }
        }
        assert_true(wide > 0 && wide < 2 * rows); /* both kinds of rows occur */
        f.out_filter_fallback = NULL;
        fs_cpu_set_filter_candidates(0);
    }
    fs_cpu_set_filter_second_pass(0);
    free(l);
    free(allowed);
    free(bias);
    fs_context_destroy(ctx);
}

/* Greedy rows (T = 0 and T < FS_MIN_TEMPERATURE) ignore the filters. */
static void test_greedy_unfiltered(void **state)
{
    (void)state;
    fs_context *ctx = fst_cpu_ctx();
    const int64_t rows = 8, V = 300;
    float *l = fst_gen_logits(42, rows, V, 3.0);
    float T[8] = {0, 0, 1e-6f, 0, 5e-6f, 0, 0, 1e-7f};
    uint64_t seed[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    int32_t k[8] = {2, 5, 1, 7, 3, 100, 1, 2};
    float p[8] = {0.1f, 0.5f, 1e-6f, 0.9f, 0.3f, 1.0f, 0.2f, 0.7f};
    float mp[8] = {0.5f, 0.0f, 0.99f, 0.1f, 0.3f, 0.2f, 0.9f, 0.0f};
    int32_t fb[8];
    int32_t t0[8], s0[8], t1[8], s1[8];
    float v0[8], v1[8];
    fs_sampling a = {T, seed, NULL, NULL, NULL};
    assert_int_equal(fst_sample_logits(ctx, l, FS_DTYPE_F32, rows, V, &a, t0, v0, s0), FS_OK);
    fs_sampling b = a;
    b.top_k = k;
    b.top_p = p;
    b.min_p = mp;
    b.out_filter_fallback = fb;
    fs_cpu_set_filter_second_pass(1);
    assert_int_equal(fst_sample_logits(ctx, l, FS_DTYPE_F32, rows, V, &b, t1, v1, s1), FS_OK);
    assert_memory_equal(t0, t1, sizeof t0);
    assert_memory_equal(v0, v1, sizeof v0);
    for (int r = 0; r < rows; ++r)
        assert_int_equal(fb[r], 0);
    free(l);
    fs_context_destroy(ctx);
}

/* ---- vocabulary shards ------------------------------------------------------ */

/* The vocabulary split into nsh parts at multiples of 16, each scanned by
 * the CPU scan as a rank would scan its shard, the records merged in rank
 * order, the filtered rows resolved over the parts (histograms summed,
 * draw records merged): the tokens of the unsharded call. */
static void sharded_sample(const float *l, int64_t rows, int64_t V, const fs_sampling *p, int nsh,
                           int cap, int32_t *tok, float *lp, int32_t *st)
{
    fs_op_args sa[4];
    float *part[4];
    fs_row_desc *descs = malloc(sizeof(fs_row_desc) * (size_t)rows);
    fs_filter_desc *fdescs = malloc(sizeof(fs_filter_desc) * (size_t)rows);
    fs_record *tile = malloc(sizeof(fs_record) * (size_t)rows);
    fs_record *rec = malloc(sizeof(fs_record) * (size_t)rows);
    fs_record *prec = malloc(sizeof(fs_record) * (size_t)rows);
    fs_filter_record *ftile = malloc(sizeof(fs_filter_record) * (size_t)rows);
    fs_filter_record *frec = malloc(sizeof(fs_filter_record) * (size_t)rows);
    fs_filter_record *fprec = malloc(sizeof(fs_filter_record) * (size_t)rows);
    void *scratch = malloc(fs_cpu_scan_scratch_bytes(rows));
    fs_filter_hist *hist = malloc(sizeof(fs_filter_hist));
    for (int64_t r = 0; r < rows; ++r) {
        descs[r] = fs_row_desc_make(p->temperature[r], p->seed[r], p->offset ? p->offset[r] : 0,
                                    0, -1, -1, (int32_t)r);
        fdescs[r] = fs_filter_desc_make(p->top_k, p->top_p, p->min_p, r, V, &descs[r]);
    }
    for (int i = 0; i < nsh; ++i) {
        int64_t lo = (V * i / nsh) / 16 * 16, hi = i + 1 == nsh ? V : (V * (i + 1) / nsh) / 16 * 16;
        part[i] = malloc(sizeof(float) * (size_t)(rows * (hi - lo)));
        for (int64_t r = 0; r < rows; ++r)
            memcpy(part[i] + r * (hi - lo), l + r * V + lo, sizeof(float) * (size_t)(hi - lo));
        memset(&sa[i], 0, sizeof sa[i]);
        sa[i].op = FS_OP_SAMPLE;
        sa[i].logits = part[i];
        sa[i].logits_dtype = FS_DTYPE_F32;
        sa[i].vocab_size = hi - lo;
        sa[i].vocab_offset = lo;
        sa[i].global_vocab = V;
        sa[i].rows = rows;
        sa[i].params = p;
        fs_cpu_filter_recs fr = {fdescs, ftile, i == 0 ? frec : fprec, cap};
        fs_cpu_scan_filtered(&sa[i], descs, 64, 0, tile, i == 0 ? rec : prec, &fr, scratch);
        for (int64_t r = 0; i > 0 && r < rows; ++r) {
            fs_record_merge(&rec[r], &prec[r]);
            if (fdescs[r].active)
                fs_filter_merge(&frec[r], &fprec[r], cap);
        }
    }
    const fs_op_args *shards[4] = {&sa[0], &sa[1], &sa[2], &sa[3]};
    for (int64_t r = 0; r < rows; ++r) {
        if (fdescs[r].active && fs_record_status(&rec[r]) == FS_ROW_OK) {
            fs_record kept;
            fs_cpu_filter_row(shards, nsh, r, &descs[r], &fdescs[r], &rec[r], &frec[r], 0, hist,
                              &kept);
            rec[r] = kept;
        }
        st[r] = FS_ROW_OK;
        fs_finalize_sample(&rec[r], &descs[r], &tok[r], &lp[r], &st[r]);
    }
    for (int i = 0; i < nsh; ++i)
        free(part[i]);
    free(descs);
    free(fdescs);
    free(tile);
    free(rec);
    free(prec);
    free(ftile);
    free(frec);
    free(fprec);
    free(scratch);
    free(hist);
}

static void test_shards(void **state)
{
    (void)state;
    fs_context *ctx = fst_cpu_ctx();
    const int64_t rows = 40, V = 1013;
    float *l = fst_gen_logits(777, rows, V, 3.0);
    fst_params pp;
    make_filter_params(&pp, rows, rows, V, 1, 1, 777, ARR_ALL);
    for (int r = 0; r < rows; ++r)
        if (pp.T[r] == 0.0f)
            pp.T[r] = 1.0f;
    int32_t tok0[40], st0[40], tok[40], st[40];
    float lp0[40], lp[40];
    long second = 0;
    for (int ci = 0; ci < 2; ++ci) {
        int cap = ci ? 4 : FS_FILTER_CANDIDATES;
        fs_cpu_set_filter_candidates(cap);
        assert_int_equal(fst_sample_logits(ctx, l, FS_DTYPE_F32, rows, V, &pp.p, tok0, lp0, st0),
                         FS_OK);
        for (int r = 0; r < rows; ++r)
            second += pp.fallback[r];
        for (int nsh = 2; nsh <= 4; ++nsh) {
            sharded_sample(l, rows, V, &pp.p, nsh, cap, tok, lp, st);
            for (int r = 0; r < rows; ++r) {
                if (tok[r] != tok0[r] || st[r] != st0[r])
                    fail_msg("%d shards, cap %d, row %d: token %d (status %d), unsharded %d (%d)",
                             nsh, cap, r, tok[r], st[r], tok0[r], st0[r]);
                assert_true(fabsf(lp[r] - lp0[r]) < 1e-5f);
            }
        }
    }
    print_message("shards: %ld rows took the second pass\n", second);
    assert_true(second >= 10);
    free(l);
    fst_free_params(&pp);
    fs_context_destroy(ctx);
}

/* ---- the comparison has teeth ------------------------------------------------ */

/* An off-by-one k in the library (emulated: it is given k + 1, the oracle k)
 * and a verify that accepts with the unfiltered p(x) (FS_FAULT_UNFILTERED_PX)
 * produce many hard mismatches. */
static void test_oracle_detects_faults(void **state)
{
    (void)state;
    fs_context *ctx = fst_cpu_ctx();
    const int64_t rows = 200, V = 97;
    fst_inputs in;
    fst_params pp;
    fst_make_inputs(&in, FS_DTYPE_F32, 0, rows, V, 1, 6000, 0);
    make_filter_params(&pp, rows, rows, V, 0, 0, 6000, ARR_K);
    int32_t k1[200], tok[200], st[200];
    float lp[200];
    for (int r = 0; r < rows; ++r) {
        pp.T[r] = 1.0f;
        pp.top_k[r] = 1 + r % 5;
        k1[r] = pp.top_k[r] + 1;
    }
    fs_sampling wrong = pp.p;
    wrong.top_k = k1;
    assert_int_equal(fst_sample_logits(ctx, in.logits, in.dt, rows, V, &wrong, tok, lp, st), FS_OK);
    fst_count_only = 1;
    fst_mismatches = 0;
    check_sample(&in, &pp.p, tok, lp, st, "k off by one");
    long k_mm = fst_mismatches;
    fst_free_params(&pp);
    fst_free_inputs(&in);

    fst_drafts_buf db;
    const int64_t R = 200;
    int64_t vrows = make_drafts(&db, R, 3, V, 6100);
    fst_make_inputs(&in, FS_DTYPE_F32, 0, vrows, V, 1, 6100, 0);
    make_filter_params(&pp, R, vrows, V, 0, 0, 6100, ARR_P);
    for (int r = 0; r < R; ++r) {
        pp.T[r] = 1.0f;
        pp.top_p[r] = 0.5f;
    }
    choose_drafts(&db, &in, &pp.p, 6100);
    int32_t vt[200 * 4], vn[200], vs[200];
    float vl[200 * 4];
    fs_cpu_set_faults(FS_FAULT_UNFILTERED_PX);
    assert_int_equal(fst_run_verify(ctx, &in, &db.d, &pp.p, vt, vn, vl, vs), FS_OK);
    fs_cpu_set_faults(FS_FAULT_NONE);
    fst_mismatches = 0;
    check_verify(&in, &db.d, &pp.p, vt, vn, vl, vs, "unfiltered p(x)");
    long px_mm = fst_mismatches;
    fst_count_only = 0;
    print_message("injected: %ld mismatches for k + 1, %ld for the unfiltered p(x)\n", k_mm, px_mm);
    assert_true(k_mm >= 20);
    assert_true(px_mm >= 20);
    /* without the fault the same inputs agree */
    assert_int_equal(fst_run_verify(ctx, &in, &db.d, &pp.p, vt, vn, vl, vs), FS_OK);
    check_verify(&in, &db.d, &pp.p, vt, vn, vl, vs, "fault-free verify");
    fst_free_params(&pp);
    fst_free_inputs(&in);
    fst_free_drafts(&db);
    fs_context_destroy(ctx);
}

static void test_summary(void **state)
{
    (void)state;
    print_message("compared %ld rows/requests (%ld filtered); near-ties: %ld of the filters, "
                  "%ld of the draw\n",
                  g_compared, g_filtered, g_near_filter, g_near_draw);
    assert_true(g_compared > 5000);
    assert_true(g_filtered > 2000);
    /* decisions within 1e-4 of flipping are float accidents: few */
    assert_true(g_near_filter <= 10 + g_compared / 50);
    assert_true(g_near_draw <= 2 + g_compared / 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_sample_vs_oracle, fst_reset_hooks),
        cmocka_unit_test_setup(test_sample_small_vocab, fst_reset_hooks),
        cmocka_unit_test_setup(test_ties_vs_oracle, fst_reset_hooks),
        cmocka_unit_test_setup(test_second_pass_vs_oracle, fst_reset_hooks),
        cmocka_unit_test_setup(test_verify_vs_oracle, fst_reset_hooks),
        cmocka_unit_test_setup(test_tie_rule, fst_reset_hooks),
        cmocka_unit_test_setup(test_edge_cases, fst_reset_hooks),
        cmocka_unit_test_setup(test_greedy_unfiltered, fst_reset_hooks),
        cmocka_unit_test_setup(test_shards, fst_reset_hooks),
        cmocka_unit_test_setup(test_oracle_detects_faults, fst_reset_hooks),
        cmocka_unit_test_setup(test_summary, fst_reset_hooks),
    };
    return cmocka_run_group_tests_name("filter_oracle", tests, NULL, NULL);
}
