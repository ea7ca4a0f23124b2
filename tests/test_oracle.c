/* CPU ops against the naive materialised oracle (support/naive_ref.c), token
 * for token, with the same noise: sample, draft argmax and verify, fused and
 * over logits, f32 / f16 / bf16, odd V and D, T in {0, 0.5, 0.7, 1, 2}, with
 * and without bias and mask, ragged drafts including n_r = 0.  A disagreement
 * is tolerated only at a genuine floating-point near-tie (decision margin
 * < 1e-4 in the oracle), and there must be almost none.  Also: tile-size
 * independence, batch independence, verify with no drafts == sample, greedy
 * ties to the lowest id, and logprobs equal to the oracle's log p. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_backend.h"
#include "dtype.h"
#include "fs_test.h"
#include "naive_ref.h"
#include "oracle_inputs.h"

#define NEAR_TIE 1e-4
#define LOGPROB_TOL 1e-4

static const fs_dtype DTYPES[3] = {FS_DTYPE_F32, FS_DTYPE_F16, FS_DTYPE_BF16};

/* global tallies, printed at the end */
static long g_compared, g_near_ties;
/* ---- comparisons -------------------------------------------------------- */

static void check_sample(const fst_inputs *in, const fs_sampling *p, const int32_t *tok,
                         const float *lp, const int32_t *st, const char *label)
{
    int64_t rows = in->rows;
    int32_t *rt = malloc(sizeof(int32_t) * (size_t)rows);
    int32_t *rs = malloc(sizeof(int32_t) * (size_t)rows);
    double *rl = malloc(sizeof(double) * (size_t)rows);
    ref_sample(in->ref, rows, in->V, p, rt, rl, rs, NULL);
    for (int64_t r = 0; r < rows; ++r) {
        ++g_compared;
        if (st[r] != rs[r])
            fail_msg("%s row %lld: status %d, oracle %d", label, (long long)r, st[r], rs[r]);
        if (rs[r] != FS_ROW_OK) {
            assert_int_equal(tok[r], -1);
            if (lp)
                assert_true(isnan(lp[r]));
            continue;
        }
        if (tok[r] == rt[r]) {
            if (lp && !(fabs((double)lp[r] - rl[r]) < LOGPROB_TOL))
                FST_MISMATCH("%s row %lld (T %g): token %d logprob %.7g, oracle %.7g", label,
                             (long long)r, p->temperature[r], tok[r], lp[r], rl[r]);
            continue;
        }
        double gap = ref_sample_gap(in->ref, in->V, p, r, tok[r]);
        if (!(gap < NEAR_TIE)) {
            FST_MISMATCH("%s row %lld (T %g): token %d, oracle %d, key gap %.3g (not a near-tie)",
                         label, (long long)r, p->temperature[r], tok[r], rt[r], gap);
            continue;
        }
        print_message("%s row %lld: near-tie %d vs %d (gap %.3g)\n", label, (long long)r, tok[r],
                      rt[r], gap);
        ++g_near_ties;
    }
    free(rt);
    free(rs);
    free(rl);
}

static void check_verify(const fst_inputs *in, const fs_drafts *d, const fs_sampling *p,
                         const int32_t *tok, const int32_t *nem, const float *lp,
                         const int32_t *st, const char *label)
{
    int64_t R = d->num_requests, stride = d->max_drafts + 1;
    int32_t *rt = malloc(sizeof(int32_t) * (size_t)(R * stride));
    double *rl = malloc(sizeof(double) * (size_t)(R * stride));
    int32_t *rn = malloc(sizeof(int32_t) * (size_t)R);
    int32_t *rs = malloc(sizeof(int32_t) * (size_t)R);
    ref_verify(in->ref, in->V, d, p, rt, rn, rl, rs, NULL);
    for (int64_t r = 0; r < R; ++r) {
        ++g_compared;
        const int32_t *t = tok + r * stride;
        const float *l = lp ? lp + r * stride : NULL;
        if (st[r] != rs[r])
            fail_msg("%s request %lld: status %d, oracle %d", label, (long long)r, st[r], rs[r]);
        /* padding and sentinels, whatever the tokens */
        if (nem[r] < 0 || nem[r] > stride)
            fail_msg("%s request %lld: num_emitted %d", label, (long long)r, nem[r]);
        for (int64_t k = nem[r]; k < stride; ++k) {
            if (t[k] != -1)
                fail_msg("%s request %lld: padding token [%lld] = %d", label, (long long)r,
                         (long long)k, t[k]);
            if (l && !isnan(l[k]))
                fail_msg("%s request %lld: padding logprob [%lld] = %g", label, (long long)r,
                         (long long)k, l[k]);
        }
        if (rs[r] != FS_ROW_OK) {
            assert_int_equal(nem[r], 0);
            continue;
        }
        int same = nem[r] == rn[r];
        for (int64_t k = 0; same && k < nem[r]; ++k)
            same = t[k] == rt[r * stride + k];
        if (same) {
            for (int64_t k = 0; l && k < nem[r]; ++k)
                if (!(fabs((double)l[k] - rl[r * stride + k]) < LOGPROB_TOL))
                    FST_MISMATCH("%s request %lld (T %g) pos %lld: token %d logprob %.7g, oracle "
                                 "%.7g",
                                 label, (long long)r, p->temperature[r], (long long)k, t[k], l[k],
                                 rl[r * stride + k]);
            continue;
        }
        double gap = ref_verify_gap(in->ref, in->V, d, p, r, t, nem[r]);
        if (!(gap < NEAR_TIE)) {
            char a[256], b[256];
            fst_token_list(a, sizeof a, t, stride);
            fst_token_list(b, sizeof b, rt + r * stride, stride);
            FST_MISMATCH("%s request %lld (T %g, n %d): emitted %d [%s ], oracle %d [%s ], "
                         "gap %.3g",
                         label, (long long)r, p->temperature[r],
                         d->draft_offsets[r + 1] - d->draft_offsets[r], nem[r], a, rn[r], b, gap);
            continue;
        }
        print_message("%s request %lld: near-tie (gap %.3g)\n", label, (long long)r, gap);
        ++g_near_ties;
    }
    free(rt);
    free(rl);
    free(rn);
    free(rs);
}

/* ---- ragged drafts ------------------------------------------------------ */

/* n_r in [0, maxd] (the first request always 0 drafts). */
static int64_t make_layout(fst_drafts_buf *db, int64_t R, int64_t maxd, uint64_t seed)
{
    fst_rng r;
    fst_rng_seed(&r, seed ^ 0xD4AF7ull);
    return fst_drafts_layout(db, R, maxd, &r, 1);
}

/* Draft tokens from the oracle's target rows: the target argmax (likely to
 * be accepted), a token sampled from the target, a uniform token, or a
 * masked one -- so paths stop at every position. */
static void choose_drafts(fst_drafts_buf *db, const fst_inputs *in, const fs_sampling *p,
                          uint64_t seed)
{
    fst_rng r;
    fst_rng_seed(&r, seed ^ 0xC401CEull);
    int64_t V = in->V;
    double *logp = malloc(sizeof(double) * (size_t)V);
    for (int64_t q = 0; q < db->d.num_requests; ++q)
        for (int64_t i = db->offsets[q]; i < db->offsets[q + 1]; ++i) {
            int64_t row = i + q; /* target row of draft i */
            const float *b = p->logit_bias ? p->logit_bias + row * V : NULL;
            const uint32_t *a = p->allowed ? p->allowed + row * fst_mask_words(V) : NULL;
            double u = fst_unif(&r);
            int32_t x;
            if (u < 0.45) {
                int32_t best = 0;
                double bs = -INFINITY;
                for (int64_t v = 0; v < V; ++v) {
                    double s = ref_greedy_score(in->ref + row * V, b, a, v);
                    if (s > bs) {
                        bs = s;
                        best = (int32_t)v;
                    }
                }
                x = best;
            } else if (u < 0.8) {
                double T = p->temperature[q] > 0 ? p->temperature[q] : 1.0;
                ref_row_logp(in->ref + row * V, V, b, a, T, logp);
                double c = fst_unif(&r), acc = 0.0;
                x = (int32_t)(V - 1);
                for (int64_t v = 0; v < V; ++v) {
                    acc += exp(logp[v]);
                    if (c < acc) {
                        x = (int32_t)v;
                        break;
                    }
                }
            } else {
                x = (int32_t)fst_randint(&r, V);
            }
            db->tokens[i] = x;
        }
    free(logp);
}

/* ---- tests -------------------------------------------------------------- */

/* The oracle's converters agree with the library's widening on every
 * 16-bit pattern, and round correctly. */
static void test_dtype_converters(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 65536; ++h) {
        float a = fst_f16_to_f32((uint16_t)h), b = fs_f16_to_f32((uint16_t)h);
        if (!(a == b || (isnan(a) && isnan(b))) || (a == 0 && signbit(a) != signbit(b)))
            fail_msg("f16 %04x: %.9g vs library %.9g", h, a, b);
        if (!isnan(a) && fst_f32_to_f16(a) != h)
            fail_msg("f16 %04x does not round-trip (%04x)", h, fst_f32_to_f16(a));
        float c = fst_bf16_to_f32((uint16_t)h), d = fs_bf16_to_f32((uint16_t)h);
        if (memcmp(&c, &d, 4) != 0)
            fail_msg("bf16 %04x: %.9g vs library %.9g", h, c, d);
        if (!isnan(c) && fst_f32_to_bf16(c) != h)
            fail_msg("bf16 %04x does not round-trip", h);
    }
    /* round to nearest even */
    assert_int_equal(fst_f32_to_f16(1.0f + ldexpf(1, -11)), 0x3C00);     /* tie -> even */
    assert_int_equal(fst_f32_to_f16(1.0f + 3 * ldexpf(1, -11)), 0x3C02); /* tie -> even */
    assert_int_equal(fst_f32_to_f16(1.0f + ldexpf(1, -11) + ldexpf(1, -20)), 0x3C01);
    assert_int_equal(fst_f32_to_f16(65519.0f), 0x7BFF);
    assert_int_equal(fst_f32_to_f16(65520.0f), 0x7C00);
    assert_int_equal(fst_f32_to_f16(ldexpf(1, -25)), 0x0000);                /* tie -> 0 */
    assert_int_equal(fst_f32_to_f16(ldexpf(3, -25)), 0x0002);                /* tie -> even */
    assert_int_equal(fst_f32_to_bf16(1.0f + ldexpf(1, -8)), 0x3F80);         /* tie -> even */
    assert_int_equal(fst_f32_to_bf16(1.0f + ldexpf(3, -8)), 0x3F82);
    assert_int_equal(fst_f32_to_bf16(-INFINITY), 0xFF80);
    assert_true(isnan(fst_bf16_to_f32(fst_f32_to_bf16(NAN))));
}

static void sample_grid(int64_t V, int64_t D, int64_t rows, uint64_t seed0)
{
    fs_context *ctx = fst_cpu_ctx();
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)rows), *st = malloc(sizeof(int32_t) * (size_t)rows);
    float *lp = malloc(sizeof(float) * (size_t)rows);
    uint64_t seed = seed0;
    for (int di = 0; di < 3; ++di)
        for (int fused = 0; fused < 2; ++fused)
            for (int bm = 0; bm < 4; ++bm) {
                ++seed;
                fst_inputs in;
                fst_params pp;
                fst_make_inputs(&in, DTYPES[di], fused, rows, V, D, seed, 0);
                fst_make_params(&pp, rows, rows, V, bm & 1, bm >> 1, seed);
                if (bm == 2)
                    pp.p.offset = NULL; /* optional: all 0 */
                char label[128];
                snprintf(label, sizeof label, "sample %s %s V%lld D%lld bias%d mask%d",
                         fst_dtype_name(DTYPES[di]), fused ? "fused" : "logits", (long long)V,
                         (long long)D, bm & 1, bm >> 1);
                fs_status s = fst_run_sample(ctx, &in, &pp.p, tok, lp, st);
                if (s != FS_OK)
                    fail_msg("%s: %s (%s)", label, fs_status_string(s), fs_context_last_error(ctx));
                check_sample(&in, &pp.p, tok, lp, st, label);
                /* out_logprobs is optional and changes nothing */
                int32_t *tok2 = malloc(sizeof(int32_t) * (size_t)rows);
                assert_int_equal(fst_run_sample(ctx, &in, &pp.p, tok2, NULL, st), FS_OK);
                assert_memory_equal(tok, tok2, sizeof(int32_t) * (size_t)rows);
                free(tok2);
                fst_free_params(&pp);
                fst_free_inputs(&in);
            }
    free(tok);
    free(st);
    free(lp);
    fs_context_destroy(ctx);
}

static void test_sample_vs_oracle(void **state)
{
    (void)state;
    sample_grid(1013, 67, 40, 100);
}

static void test_sample_vs_oracle_small(void **state)
{
    (void)state;
    sample_grid(1, 3, 10, 200);
    sample_grid(2, 1, 10, 300);
    sample_grid(5, 9, 20, 400);
    sample_grid(33, 17, 20, 500);
    sample_grid(257, 8, 20, 600); /* one token past a default tile */
}

static void verify_grid(int64_t V, int64_t D, int64_t R, int64_t maxd, uint64_t seed0);

/* A realistic vocabulary size: many tiles, long online-LSE accumulations. */
static void test_large_vocab_vs_oracle(void **state)
{
    (void)state;
    sample_grid(50021, 64, 5, 800);
    verify_grid(50021, 64, 5, 3, 1400);
}

static void argmax_grid(int64_t V, int64_t D, int64_t rows, uint64_t seed)
{
    fs_context *ctx = fst_cpu_ctx();
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)rows), *st = malloc(sizeof(int32_t) * (size_t)rows);
    float *val = malloc(sizeof(float) * (size_t)rows);
    int32_t *rt = malloc(sizeof(int32_t) * (size_t)rows), *rs = malloc(sizeof(int32_t) * (size_t)rows);
    double *rv = malloc(sizeof(double) * (size_t)rows), *rm = malloc(sizeof(double) * (size_t)rows);
    for (int di = 0; di < 3; ++di)
        for (int fused = 0; fused < 2; ++fused) {
            fst_inputs in;
            fst_make_inputs(&in, DTYPES[di], fused, rows, V, D, ++seed, 0);
            assert_int_equal(fst_run_argmax(ctx, &in, tok, val, st), FS_OK);
            ref_argmax(in.ref, rows, V, rt, rv, rs, rm);
            for (int64_t r = 0; r < rows; ++r) {
                ++g_compared;
                assert_int_equal(st[r], FS_ROW_OK);
                if (tok[r] != rt[r]) {
                    double gap = rv[r] - in.ref[r * V + tok[r]];
                    if (!(gap < NEAR_TIE && fused))
                        fail_msg("argmax %s %s row %lld: %d, oracle %d (gap %.3g)",
                                 fst_dtype_name(DTYPES[di]), fused ? "fused" : "logits",
                                 (long long)r, tok[r], rt[r], gap);
                    ++g_near_ties;
                    continue;
                }
                /* the logit itself: exact for stored logits, a float dot otherwise */
                if (fused ? !(fabs(val[r] - rv[r]) < 1e-4 * (1 + fabs(rv[r])))
                          : (double)val[r] != rv[r])
                    fail_msg("argmax row %lld: logit %.9g, oracle %.9g", (long long)r, val[r],
                             rv[r]);
            }
            /* out_logits optional */
            int32_t *tok2 = malloc(sizeof(int32_t) * (size_t)rows);
            assert_int_equal(fst_run_argmax(ctx, &in, tok2, NULL, st), FS_OK);
            assert_memory_equal(tok, tok2, sizeof(int32_t) * (size_t)rows);
            free(tok2);
            fst_free_inputs(&in);
        }
    free(tok);
    free(st);
    free(val);
    free(rt);
    free(rs);
    free(rv);
    free(rm);
    fs_context_destroy(ctx);
}

static void test_argmax_vs_oracle(void **state)
{
    (void)state;
    argmax_grid(1013, 67, 40, 700);
    argmax_grid(1, 5, 4, 710);
    argmax_grid(3, 1, 8, 720);
    argmax_grid(300, 33, 16, 730);
}

static void verify_grid(int64_t V, int64_t D, int64_t R, int64_t maxd, uint64_t seed0)
{
    fs_context *ctx = fst_cpu_ctx();
    uint64_t seed = seed0;
    for (int di = 0; di < 3; ++di)
        for (int fused = 0; fused < 2; ++fused)
            for (int bm = 0; bm < 4; ++bm) {
                ++seed;
                fst_drafts_buf db;
                int64_t rows = make_layout(&db, R, maxd, seed);
                /* a wider output stride than any request needs, sometimes */
                if (bm == 3)
                    db.d.max_drafts = maxd + 2;
                fst_inputs in;
                fst_params pp;
                fst_make_inputs(&in, DTYPES[di], fused, rows, V, D, seed, 0);
                fst_make_params(&pp, R, rows, V, bm & 1, bm >> 1, seed);
                choose_drafts(&db, &in, &pp.p, seed);
                int64_t stride = db.d.max_drafts + 1;
                int32_t *tok = malloc(sizeof(int32_t) * (size_t)(R * stride));
                float *lp = malloc(sizeof(float) * (size_t)(R * stride));
                int32_t *nem = malloc(sizeof(int32_t) * (size_t)R);
                int32_t *st = malloc(sizeof(int32_t) * (size_t)R);
                char label[128];
                snprintf(label, sizeof label, "verify %s %s V%lld bias%d mask%d",
                         fst_dtype_name(DTYPES[di]), fused ? "fused" : "logits", (long long)V,
                         bm & 1, bm >> 1);
                fs_status s = fst_run_verify(ctx, &in, &db.d, &pp.p, tok, nem, lp, st);
                if (s != FS_OK)
                    fail_msg("%s: %s (%s)", label, fs_status_string(s), fs_context_last_error(ctx));
                check_verify(&in, &db.d, &pp.p, tok, nem, lp, st, label);
                /* logprobs optional */
                int32_t *tok2 = malloc(sizeof(int32_t) * (size_t)(R * stride));
                assert_int_equal(fst_run_verify(ctx, &in, &db.d, &pp.p, tok2, nem, NULL, st),
                                 FS_OK);
                assert_memory_equal(tok, tok2, sizeof(int32_t) * (size_t)(R * stride));
                free(tok2);
                free(tok);
                free(lp);
                free(nem);
                free(st);
                fst_free_params(&pp);
                fst_free_inputs(&in);
                fst_free_drafts(&db);
            }
    fs_context_destroy(ctx);
}

static void test_verify_vs_oracle(void **state)
{
    (void)state;
    verify_grid(1013, 67, 24, 4, 1000);
}

static void test_verify_vs_oracle_small(void **state)
{
    (void)state;
    verify_grid(2, 3, 16, 3, 1100);
    verify_grid(7, 5, 16, 4, 1200);
    verify_grid(37, 11, 24, 5, 1300);
}

/* Many requests with few tokens: every stopping position gets exercised and
 * acceptance decisions dominate (p(x) spans (0, 1)). */
static void test_verify_paths(void **state)
{
    (void)state;
    fs_context *ctx = fst_cpu_ctx();
    int64_t R = 400, maxd = 4, V = 11;
    fst_drafts_buf db;
    int64_t rows = make_layout(&db, R, maxd, 77);
    fst_inputs in;
    fst_params pp;
    fst_make_inputs(&in, FS_DTYPE_F32, 0, rows, V, 1, 77, 0);
    fst_make_params(&pp, R, rows, V, 1, 0, 77);
    choose_drafts(&db, &in, &pp.p, 77);
    int64_t stride = maxd + 1;
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)(R * stride));
    float *lp = malloc(sizeof(float) * (size_t)(R * stride));
    int32_t *nem = malloc(sizeof(int32_t) * (size_t)R), *st = malloc(sizeof(int32_t) * (size_t)R);
    assert_int_equal(fst_verify_logits(ctx, in.logits, in.dt, V, &db.d, &pp.p, tok, nem, lp, st),
                     FS_OK);
    check_verify(&in, &db.d, &pp.p, tok, nem, lp, st, "verify paths");
    /* the walk really did stop at every position, and accepted everything at times */
    int stops[6] = {0};
    for (int64_t r = 0; r < R; ++r) {
        int n = db.offsets[r + 1] - db.offsets[r];
        stops[nem[r] - 1 == n ? 5 : nem[r] - 1]++;
    }
    for (int k = 0; k < 4; ++k)
        if (stops[k] == 0)
            fail_msg("no request stopped at position %d", k);
    assert_true(stops[5] > 0);
    free(tok);
    free(lp);
    free(nem);
    free(st);
    fst_free_params(&pp);
    fst_free_inputs(&in);
    fst_free_drafts(&db);
    fs_context_destroy(ctx);
}

/* Same tokens for tile sizes 1, 7, 64, 256 and V. */
static void test_tile_independence(void **state)
{
    (void)state;
    fs_context *ctx = fst_cpu_ctx();
    const int64_t V = 1013, D = 35, rows = 30, R = 12, maxd = 4;
    int64_t tiles[] = {1, 7, 64, 256, V};
    for (int fused = 0; fused < 2; ++fused) {
        fs_dtype dt = fused ? FS_DTYPE_BF16 : FS_DTYPE_F32;
        fst_inputs in, vin;
        fst_params pp, vp;
        fst_make_inputs(&in, dt, fused, rows, V, D, 2000 + fused, 0);
        fst_make_params(&pp, rows, rows, V, 1, 1, 2000 + fused);
        fst_drafts_buf db;
        int64_t vrows = make_layout(&db, R, maxd, 2100 + fused);
        fst_make_inputs(&vin, dt, fused, vrows, V, D, 2100 + fused, 0);
        fst_make_params(&vp, R, vrows, V, 1, 1, 2100 + fused);
        choose_drafts(&db, &vin, &vp.p, 2100);
        int32_t tok0[30], st0[30], atok0[30], ast0[30], vt0[12 * 5], vn0[12], vs0[12];
        float lp0[30], av0[30], vl0[12 * 5];
        for (size_t ti = 0; ti < sizeof tiles / sizeof tiles[0]; ++ti) {
            fs_cpu_set_tile_size(tiles[ti]);
            int32_t tok[30], st[30], atok[30], ast[30], vt[12 * 5], vn[12], vs[12];
            float lp[30], av[30], vl[12 * 5];
            assert_int_equal(fst_run_sample(ctx, &in, &pp.p, tok, lp, st), FS_OK);
            assert_int_equal(fst_run_argmax(ctx, &in, atok, av, ast), FS_OK);
            assert_int_equal(fst_run_verify(ctx, &vin, &db.d, &vp.p, vt, vn, vl, vs), FS_OK);
            if (ti == 0) {
                check_sample(&in, &pp.p, tok, lp, st, "tile 1 sample");
                check_verify(&vin, &db.d, &vp.p, vt, vn, vl, vs, "tile 1 verify");
                memcpy(tok0, tok, sizeof tok);
                memcpy(st0, st, sizeof st);
                memcpy(lp0, lp, sizeof lp);
                memcpy(atok0, atok, sizeof atok);
                memcpy(ast0, ast, sizeof ast);
                memcpy(av0, av, sizeof av);
                memcpy(vt0, vt, sizeof vt);
                memcpy(vn0, vn, sizeof vn);
                memcpy(vs0, vs, sizeof vs);
                memcpy(vl0, vl, sizeof vl);
                continue;
            }
            if (memcmp(tok, tok0, sizeof tok) || memcmp(st, st0, sizeof st))
                fail_msg("sample tokens differ between tile 1 and tile %lld", (long long)tiles[ti]);
            if (memcmp(atok, atok0, sizeof atok) || memcmp(ast, ast0, sizeof ast) ||
                memcmp(av, av0, sizeof av))
                fail_msg("argmax differs between tile 1 and tile %lld", (long long)tiles[ti]);
            if (memcmp(vt, vt0, sizeof vt) || memcmp(vn, vn0, sizeof vn) ||
                memcmp(vs, vs0, sizeof vs))
                fail_msg("verify differs between tile 1 and tile %lld", (long long)tiles[ti]);
            for (int r = 0; r < 30; ++r)
                assert_true(fabsf(lp[r] - lp0[r]) < 1e-5f);
            for (int k = 0; k < 12 * 5; ++k)
                assert_true(vt[k] < 0 ? isnan(vl[k]) : fabsf(vl[k] - vl0[k]) < 1e-5f);
        }
        fs_cpu_set_tile_size(0);
        fst_free_params(&pp);
        fst_free_params(&vp);
        fst_free_inputs(&in);
        fst_free_inputs(&vin);
        fst_free_drafts(&db);
    }
    fs_context_destroy(ctx);
}

/* A row gives the same token alone, or anywhere in a shuffled batch. */
static void test_batch_independence_sample(void **state)
{
    (void)state;
    fs_context *ctx = fst_cpu_ctx();
    const int64_t V = 517, D = 21, rows = 24;
    for (int fused = 0; fused < 2; ++fused) {
        fs_dtype dt = fused ? FS_DTYPE_F16 : FS_DTYPE_BF16;
        fst_inputs in;
        fst_params pp;
        fst_make_inputs(&in, dt, fused, rows, V, D, 3000 + fused, 0);
        fst_make_params(&pp, rows, rows, V, 1, 1, 3000 + fused);
        int32_t tok[24], st[24];
        float lp[24];
        assert_int_equal(fst_run_sample(ctx, &in, &pp.p, tok, lp, st), FS_OK);
        /* shuffled batch: permute every per-row array */
        fst_rng r;
        fst_rng_seed(&r, 31);
        int64_t perm[24];
        fst_shuffle(&r, perm, rows);
        size_t es = fst_dtype_size(dt), W = (size_t)fst_mask_words(V);
        int64_t width = fused ? D : V;
        const char *src = fused ? in.hidden : in.logits;
        char *rows_p = malloc(es * (size_t)(rows * width));
        float T[24], *bias = malloc(sizeof(float) * (size_t)(rows * V));
        uint64_t seed[24], off[24];
        uint32_t *al = malloc(sizeof(uint32_t) * rows * W);
        for (int64_t i = 0; i < rows; ++i) {
            int64_t j = perm[i];
            memcpy(rows_p + es * (size_t)(i * width), src + es * (size_t)(j * width),
                   es * (size_t)width);
            T[i] = pp.T[j];
            seed[i] = pp.seed[j];
            off[i] = pp.off[j];
            memcpy(bias + i * V, pp.bias + j * V, sizeof(float) * (size_t)V);
            memcpy(al + i * (int64_t)W, pp.allowed + j * (int64_t)W, sizeof(uint32_t) * W);
        }
        fs_sampling ps = {T, seed, off, bias, al};
        int32_t tok2[24], st2[24];
        float lp2[24];
        fs_status s = fused ? fst_sample(ctx, &in.head, rows_p, rows, &ps, tok2, lp2, st2)
                            : fst_sample_logits(ctx, rows_p, dt, rows, V, &ps, tok2, lp2, st2);
        assert_int_equal(s, FS_OK);
        for (int64_t i = 0; i < rows; ++i) {
            if (tok2[i] != tok[perm[i]])
                fail_msg("row %lld: %d in order, %d shuffled to slot %lld", (long long)perm[i],
                         tok[perm[i]], tok2[i], (long long)i);
            assert_true(fabsf(lp2[i] - lp[perm[i]]) < 1e-6f);
        }
        /* each row alone */
        for (int64_t j = 0; j < rows; ++j) {
            fs_sampling p1 = {&pp.T[j], &pp.seed[j], &pp.off[j], pp.bias + j * V,
                              pp.allowed + j * (int64_t)W};
            int32_t t1, s1;
            float l1;
            const char *row = src + es * (size_t)(j * width);
            fs_status s1s = fused ? fst_sample(ctx, &in.head, row, 1, &p1, &t1, &l1, &s1)
                                  : fst_sample_logits(ctx, row, dt, 1, V, &p1, &t1, &l1, &s1);
            assert_int_equal(s1s, FS_OK);
            if (t1 != tok[j])
                fail_msg("row %lld: %d in the batch, %d alone", (long long)j, tok[j], t1);
            assert_true(fabsf(l1 - lp[j]) < 1e-6f);
        }
        /* and the same call twice is the same */
        int32_t tok3[24], st3[24];
        assert_int_equal(fst_run_sample(ctx, &in, &pp.p, tok3, NULL, st3), FS_OK);
        assert_memory_equal(tok, tok3, sizeof tok);
        free(rows_p);
        free(bias);
        free(al);
        fst_free_params(&pp);
        fst_free_inputs(&in);
    }
    fs_context_destroy(ctx);
}

/* A verify request gives the same output alone or in a shuffled batch. */
static void test_batch_independence_verify(void **state)
{
    (void)state;
    fs_context *ctx = fst_cpu_ctx();
    const int64_t V = 301, R = 14, maxd = 4, stride = maxd + 1;
    fst_drafts_buf db;
    int64_t rows = make_layout(&db, R, maxd, 4000);
    fst_inputs in;
    fst_params pp;
    fst_make_inputs(&in, FS_DTYPE_F32, 0, rows, V, 1, 4000, 0);
    fst_make_params(&pp, R, rows, V, 1, 1, 4000);
    choose_drafts(&db, &in, &pp.p, 4000);
    int32_t tok[14 * 5], nem[14], st[14];
    float lp[14 * 5];
    assert_int_equal(fst_verify_logits(ctx, in.logits, in.dt, V, &db.d, &pp.p, tok, nem, lp, st),
                     FS_OK);
    fst_rng r;
    fst_rng_seed(&r, 41);
    int64_t perm[14];
    fst_shuffle(&r, perm, R);
    int64_t W = fst_mask_words(V);
    float *lg = malloc(sizeof(float) * (size_t)(rows * V)), *bias = malloc(sizeof(float) * (size_t)(rows * V));
    uint32_t *al = malloc(sizeof(uint32_t) * (size_t)(rows * W));
    int32_t dt2[14 * 4 + 1], off2[15];
    float T[14];
    uint64_t seed[14], off[14];
    off2[0] = 0;
    int64_t row = 0;
    for (int64_t i = 0; i < R; ++i) {
        int64_t q = perm[i], b = db.offsets[q], n = db.offsets[q + 1] - b;
        memcpy(dt2 + off2[i], db.tokens + b, sizeof(int32_t) * (size_t)n);
        off2[i + 1] = off2[i] + (int32_t)n;
        for (int64_t j = 0; j <= n; ++j, ++row) {
            int64_t src = b + q + j;
            memcpy(lg + row * V, (float *)in.logits + src * V, sizeof(float) * (size_t)V);
            memcpy(bias + row * V, pp.bias + src * V, sizeof(float) * (size_t)V);
            memcpy(al + row * W, pp.allowed + src * W, sizeof(uint32_t) * (size_t)W);
        }
        T[i] = pp.T[q];
        seed[i] = pp.seed[q];
        off[i] = pp.off[q];
    }
    fs_sampling ps = {T, seed, off, bias, al};
    fs_drafts d2 = {R, db.d.num_draft_tokens, maxd, dt2, off2};
    int32_t tok2[14 * 5], nem2[14], st2[14];
    float lp2[14 * 5];
    assert_int_equal(fst_verify_logits(ctx, lg, FS_DTYPE_F32, V, &d2, &ps, tok2, nem2, lp2, st2),
                     FS_OK);
    for (int64_t i = 0; i < R; ++i) {
        int64_t q = perm[i];
        assert_int_equal(nem2[i], nem[q]);
        assert_memory_equal(tok2 + i * stride, tok + q * stride, sizeof(int32_t) * stride);
        for (int64_t k = 0; k < nem[q]; ++k)
            assert_true(fabsf(lp2[i * stride + k] - lp[q * stride + k]) < 1e-6f);
        /* alone */
        int64_t b = db.offsets[q], n = db.offsets[q + 1] - b;
        int32_t o1[2] = {0, (int32_t)n};
        fs_drafts d1 = {1, n, maxd, db.tokens + b, o1};
        fs_sampling p1 = {&pp.T[q], &pp.seed[q], &pp.off[q], pp.bias + (b + q) * V,
                          pp.allowed + (b + q) * W};
        int32_t t1[5], n1, s1;
        float l1[5];
        assert_int_equal(fst_verify_logits(ctx, (float *)in.logits + (b + q) * V, FS_DTYPE_F32,
                                           V, &d1, &p1, t1, &n1, l1, &s1),
                         FS_OK);
        assert_int_equal(n1, nem[q]);
        assert_memory_equal(t1, tok + q * stride, sizeof t1);
    }
    free(lg);
    free(bias);
    free(al);
    fst_free_params(&pp);
    fst_free_inputs(&in);
    fst_free_drafts(&db);
    fs_context_destroy(ctx);
}

/* verify with no drafts is sampling the bonus row at position 0. */
static void test_verify_zero_drafts_is_sample(void **state)
{
    (void)state;
    fs_context *ctx = fst_cpu_ctx();
    const int64_t V = 777, R = 20, D = 19;
    for (int fused = 0; fused < 2; ++fused) {
        fst_inputs in;
        fst_params pp;
        fst_make_inputs(&in, FS_DTYPE_BF16, fused, R, V, D, 5000 + fused, 0);
        fst_make_params(&pp, R, R, V, 1, 1, 5000 + fused);
        int32_t offsets[21] = {0}; /* every n_r = 0 */
        for (int maxd = 0; maxd <= 2; maxd += 2) {
            fs_drafts d = {R, 0, maxd, NULL, offsets}; /* draft_tokens may be NULL */
            int64_t stride = maxd + 1;
            int32_t vt[20 * 3], vn[20], vs[20], tok[20], st[20];
            float vl[20 * 3], lp[20];
            assert_int_equal(fst_run_verify(ctx, &in, &d, &pp.p, vt, vn, vl, vs), FS_OK);
            assert_int_equal(fst_run_sample(ctx, &in, &pp.p, tok, lp, st), FS_OK);
            for (int64_t r = 0; r < R; ++r) {
                assert_int_equal(vs[r], FS_ROW_OK);
                assert_int_equal(vn[r], 1);
                if (vt[r * stride] != tok[r])
                    fail_msg("request %lld (T %g): verify bonus %d, sample %d", (long long)r,
                             pp.T[r], vt[r * stride], tok[r]);
                assert_true(fabsf(vl[r * stride] - lp[r]) < 1e-6f);
                for (int64_t k = 1; k < stride; ++k)
                    assert_int_equal(vt[r * stride + k], -1);
            }
            check_sample(&in, &pp.p, tok, lp, st, "zero-draft sample");
        }
        fst_free_params(&pp);
        fst_free_inputs(&in);
    }
    fs_context_destroy(ctx);
}

/* Exact ties at T = 0 go to the lowest id: sample, argmax and verify. */
static void test_greedy_ties(void **state)
{
    (void)state;
    fs_context *ctx = fst_cpu_ctx();
    enum { V = 300 };
    float l[3 * V];
    for (int r = 0; r < 3; ++r)
        for (int v = 0; v < V; ++v)
            l[r * V + v] = (float)((v * 7 + r) % 5); /* value 4 at many ids */
    int32_t first[3];
    for (int r = 0; r < 3; ++r)
        for (int v = 0; v < V; ++v)
            if (l[r * V + v] == 4.0f) {
                first[r] = v;
                break;
            }
    for (int di = 0; di < 3; ++di) {
        void *buf = fst_pack(l, 3 * V, DTYPES[di]);
        for (int64_t tile = 1; tile <= 256; tile *= 4) {
            fs_cpu_set_tile_size(tile);
            float T[3] = {0, 0, 0};
            uint64_t seed[3] = {1, 2, 3};
            fs_sampling p = {T, seed, NULL, NULL, NULL};
            int32_t tok[3], st[3];
            float lp[3], val[3];
            assert_int_equal(fst_sample_logits(ctx, buf, DTYPES[di], 3, V, &p, tok, lp, st), FS_OK);
            for (int r = 0; r < 3; ++r)
                assert_int_equal(tok[r], first[r]);
            /* logprob of a greedy row: under softmax(l): 60 tokens tie at 4 */
            double z = 0;
            for (int v = 0; v < V; ++v)
                z += exp(l[v] - 4.0);
            assert_true(fabs(lp[0] - (-log(z))) < 1e-5);
            assert_int_equal(fst_argmax_logits(ctx, buf, DTYPES[di], 3, V, tok, val, st), FS_OK);
            for (int r = 0; r < 3; ++r) {
                assert_int_equal(tok[r], first[r]);
                assert_true(val[r] == 4.0f);
            }
            /* verify, one draft per request: a later tied id is rejected and
               the lowest recovered; the lowest tied id is accepted */
            int32_t later = first[0] + 5; /* (v*7)%5 == 4 again 5 ids later */
            assert_true(l[later] == 4.0f);
            int32_t dtok[2] = {later, first[1]};
            int32_t offs[3] = {0, 1, 2};
            /* rows: request 0 -> rows 0,1 ; request 1 -> rows 2,3 */
            float vl[4 * V];
            memcpy(vl, l, sizeof(float) * V);         /* row 0: draft position of r0 */
            memcpy(vl + V, l + 2 * V, sizeof(float) * V);
            memcpy(vl + 2 * V, l + V, sizeof(float) * V); /* row 2: draft position of r1 */
            memcpy(vl + 3 * V, l, sizeof(float) * V);
            void *vbuf = fst_pack(vl, 4 * V, DTYPES[di]);
            fs_drafts d = {2, 2, 1, dtok, offs};
            int32_t vt[4], vn[2], vs[2];
            float vlp[4];
            assert_int_equal(fst_verify_logits(ctx, vbuf, DTYPES[di], V, &d, &p, vt, vn, vlp, vs),
                             FS_OK);
            assert_int_equal(vn[0], 1);
            assert_int_equal(vt[0], first[0]);
            assert_int_equal(vn[1], 2);
            assert_int_equal(vt[2], first[1]);
            assert_int_equal(vt[3], first[0]); /* bonus = row 3 = l row 0 */
            free(vbuf);
        }
        fs_cpu_set_tile_size(0);
        free(buf);
    }
    fs_context_destroy(ctx);
}

/* The comparison has teeth: with the library's injected faults (a dropped
 * tile-edge token, a residual that keeps the draft) the same checks find
 * many hard mismatches. */
static void test_oracle_detects_faults(void **state)
{
    (void)state;
    fs_context *ctx = fst_cpu_ctx();
    const int64_t V = 97, rows = 200, R = 200, maxd = 3;
    fst_inputs in;
    fst_params pp;
    fst_make_inputs(&in, FS_DTYPE_F32, 0, rows, V, 1, 6000, 0);
    fst_make_params(&pp, rows, rows, V, 0, 0, 6000);
    int32_t tok[200], st[200];
    float lp[200];
    fst_count_only = 1;
    fs_cpu_set_tile_size(8);
    fs_cpu_set_faults(FS_FAULT_TILE_EDGE);
    fs_status s = fst_sample_logits(ctx, in.logits, in.dt, rows, V, &pp.p, tok, lp, st);
    fs_cpu_set_faults(FS_FAULT_NONE);
    fs_cpu_set_tile_size(0);
    assert_int_equal(s, FS_OK);
    fst_mismatches = 0;
    check_sample(&in, &pp.p, tok, lp, st, "faulty sample");
    long sample_mm = fst_mismatches;
    fst_free_params(&pp);
    fst_free_inputs(&in);

    fst_drafts_buf db;
    int64_t vrows = make_layout(&db, R, maxd, 6100);
    fst_make_inputs(&in, FS_DTYPE_F32, 0, vrows, V, 1, 6100, 0);
    fst_make_params(&pp, R, vrows, V, 0, 0, 6100);
    choose_drafts(&db, &in, &pp.p, 6100);
    int32_t vt[200 * 4], vn[200], vs[200];
    float vl[200 * 4];
    fs_cpu_set_faults(FS_FAULT_NO_EXCLUDE);
    s = fst_verify_logits(ctx, in.logits, in.dt, V, &db.d, &pp.p, vt, vn, vl, vs);
    fs_cpu_set_faults(FS_FAULT_NONE);
    assert_int_equal(s, FS_OK);
    fst_mismatches = 0;
    check_verify(&in, &db.d, &pp.p, vt, vn, vl, vs, "faulty verify");
    long verify_mm = fst_mismatches;
    fst_count_only = 0;
    print_message("injected faults: %ld sample and %ld verify mismatches\n", sample_mm, verify_mm);
    assert_true(sample_mm >= 5);
    assert_true(verify_mm >= 5);
    /* and without the faults, the same inputs agree */
    assert_int_equal(fst_verify_logits(ctx, in.logits, in.dt, V, &db.d, &pp.p, vt, vn, vl, vs),
                     FS_OK);
    check_verify(&in, &db.d, &pp.p, vt, vn, vl, vs, "fault-free verify");
    fst_free_params(&pp);
    fst_free_inputs(&in);
    fst_free_drafts(&db);
    fs_context_destroy(ctx);
}

static void test_summary(void **state)
{
    (void)state;
    print_message("compared %ld rows/requests against the oracle, %ld near-ties\n", g_compared,
                  g_near_ties);
    assert_true(g_compared > 1000);
    /* near-ties are float accidents: essentially none are expected */
    assert_true(g_near_ties <= 2 + g_compared / 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_dtype_converters, fst_reset_hooks),
        cmocka_unit_test_setup(test_sample_vs_oracle, fst_reset_hooks),
        cmocka_unit_test_setup(test_sample_vs_oracle_small, fst_reset_hooks),
        cmocka_unit_test_setup(test_argmax_vs_oracle, fst_reset_hooks),
        cmocka_unit_test_setup(test_large_vocab_vs_oracle, fst_reset_hooks),
        cmocka_unit_test_setup(test_verify_vs_oracle, fst_reset_hooks),
        cmocka_unit_test_setup(test_verify_vs_oracle_small, fst_reset_hooks),
        cmocka_unit_test_setup(test_verify_paths, fst_reset_hooks),
        cmocka_unit_test_setup(test_tile_independence, fst_reset_hooks),
        cmocka_unit_test_setup(test_batch_independence_sample, fst_reset_hooks),
        cmocka_unit_test_setup(test_batch_independence_verify, fst_reset_hooks),
        cmocka_unit_test_setup(test_verify_zero_drafts_is_sample, fst_reset_hooks),
        cmocka_unit_test_setup(test_greedy_ties, fst_reset_hooks),
        cmocka_unit_test_setup(test_oracle_detects_faults, fst_reset_hooks),
        cmocka_unit_test_setup(test_summary, fst_reset_hooks),
    };
    return cmocka_run_group_tests_name("oracle", tests, NULL, NULL);
}
