/* The filters' API contract on the CPU context: bad top_k / top_p / min_p
 * values fail their row (sample) or request (verify) with
 * FS_ROW_BAD_FILTER -- sentinels there, every other row exactly as in a run
 * without the bad values, FS_ERR_INVALID_ROWS and a message -- in the
 * documented order after the other pre-scan checks; the boundary values of
 * each range are accepted; out_filter_fallback is optional, written for every
 * request, and left alone (like every output) by a call that fails. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fs_test.h"

enum { V = 150, ROWS = 6 };

static void test_status_string(void **state)
{
    (void)state;
    const char *m = fs_row_status_string(FS_ROW_BAD_FILTER);
    assert_non_null(strstr(m, "top_k"));
    for (int s = FS_ROW_OK; s < FS_ROW_BAD_FILTER; ++s)
        assert_string_not_equal(fs_row_status_string(s), m);
}

typedef struct bad_value {
    int field; /* 0 top_k (k), 1 top_p (value), 2 min_p (value) */
    int32_t k;
    float value;
    int bad;
} bad_value;

static const bad_value VALUES[] = {
    {0, -1, 0, 1},       {0, INT32_MIN, 0, 1},  {0, 0, 0, 0},          {0, INT32_MAX, 0, 0},
    {1, 0, 0.0f, 1},     {1, 0, -0.0f, 1},      {1, 0, -0.5f, 1},      {1, 0, 1.0001f, 1},
    {1, 0, NAN, 1},      {1, 0, INFINITY, 1},   {1, 0, FLT_MIN, 0},    {1, 0, 1.0f, 0},
    {2, 0, 1.0f, 1},     {2, 0, -0.01f, 1},     {2, 0, NAN, 1},        {2, 0, INFINITY, 1},
    {2, 0, -INFINITY, 1}, {2, 0, 0.0f, 0},      {2, 0, -0.0f, 0},      {2, 0, 0.99999994f, 0},
};

/* One sample call over ROWS rows with filters on every row; row `at` gets
 * the value under test. */
typedef struct srun {
    int32_t tok[ROWS], st[ROWS], fb[ROWS];
    float lp[ROWS];
    fs_status ret;
    char error[512];
} srun;

static void sample_with(const float *l, const bad_value *bv, int at, float T_at, srun *o)
{
    fs_context *ctx = fst_cpu_ctx();
    float T[ROWS] = {1.0f, 0.7f, 1.3f, 0.0f, 1.0f, 2.0f};
    uint64_t seed[ROWS] = {11, 12, 13, 14, 15, 16};
    int32_t k[ROWS] = {5, 0, 40, 3, 10, 200};
    float p[ROWS] = {0.9f, 0.5f, 1.0f, 0.8f, 0.95f, 0.99f};
    float mp[ROWS] = {0.0f, 0.1f, 0.05f, 0.0f, 0.2f, 0.01f};
    if (bv) {
        if (bv->field == 0)
            k[at] = bv->k;
        else if (bv->field == 1)
            p[at] = bv->value;
        else
            mp[at] = bv->value;
        T[at] = T_at;
    }
    fs_sampling s = {T, seed, NULL, NULL, NULL};
    s.top_k = k;
    s.top_p = p;
    s.min_p = mp;
    s.out_filter_fallback = o->fb;
    memset(o->fb, 0xA5, sizeof o->fb);
    o->ret = fst_sample_logits(ctx, l, FS_DTYPE_F32, ROWS, V, &s, o->tok, o->lp, o->st);
    strncpy(o->error, fs_context_last_error(ctx), sizeof o->error - 1);
    o->error[sizeof o->error - 1] = '\0';
    fs_context_destroy(ctx);
}

static void test_sample_bad_values(void **state)
{
    (void)state;
    float *l = fst_gen_logits(808, ROWS, V, 2.0);
    srun ref;
    sample_with(l, NULL, 0, 1.0f, &ref);
    assert_int_equal(ref.ret, FS_OK);
    for (size_t i = 0; i < sizeof VALUES / sizeof VALUES[0]; ++i)
        for (int at = 0; at < ROWS; at += 3) {
            const bad_value *bv = &VALUES[i];
            srun o;
            /* row 3 is greedy: its bad values fail it all the same */
            sample_with(l, bv, at, at == 3 ? 0.0f : 1.0f, &o);
            if (!bv->bad) {
                assert_int_equal(o.ret, FS_OK);
                assert_int_equal(o.st[at], FS_ROW_OK);
                assert_true(o.tok[at] >= 0 && o.tok[at] < V);
                continue;
            }
            if (o.ret != FS_ERR_INVALID_ROWS || o.st[at] != FS_ROW_BAD_FILTER)
                fail_msg("value %zu (field %d = %d / %g) on row %d: call %s, row status %d", i,
                         bv->field, bv->k, bv->value, at, fs_status_string(o.ret), o.st[at]);
            assert_non_null(strstr(o.error, "top_k"));
            assert_int_equal(o.tok[at], -1);
            assert_true(isnan(o.lp[at]));
            assert_int_equal(o.fb[at], 0);
            for (int r = 0; r < ROWS; ++r) {
                if (r == at)
                    continue;
                assert_int_equal(o.st[r], FS_ROW_OK);
                assert_int_equal(o.tok[r], ref.tok[r]);
                assert_memory_equal(&o.lp[r], &ref.lp[r], sizeof(float));
                assert_int_equal(o.fb[r], ref.fb[r]);
            }
        }
    /* a bad temperature is reported before bad filters */
    bad_value both = {1, 0, NAN, 1};
    srun o;
    sample_with(l, &both, 1, -1.0f, &o);
    assert_int_equal(o.st[1], FS_ROW_BAD_TEMPERATURE);
    /* fallback output: 0 or 1 per row, 1 only where the kept set was not
       decided by the 64 candidates (row 5: top_k 200 at T 2) */
    for (int r = 0; r < ROWS; ++r)
        assert_true(ref.fb[r] == 0 || ref.fb[r] == 1);
    assert_int_equal(ref.fb[3], 0); /* greedy */
    assert_int_equal(ref.fb[5], 1);
    free(l);
}

/* Verify: a request with a bad filter value fails as a whole; a bad draft
 * is reported before it; the other requests are unchanged. */
static void test_verify_bad_values(void **state)
{
    (void)state;
    enum { R = 4, MAXD = 2 };
    int32_t offsets[R + 1] = {0, 2, 3, 3, 5};
    const int64_t rows = 5 + R;
    float *l = fst_gen_logits(909, rows, V, 2.0);
    float T[R] = {1.0f, 0.8f, 1.2f, 1.0f};
    uint64_t seed[R] = {1, 2, 3, 4};
    int32_t k[R] = {10, 3, 0, 7};
    float p[R] = {0.9f, 1.0f, 0.7f, 0.8f};
    float mp[R] = {0.05f, 0.0f, 0.1f, 0.0f};
    int32_t drafts0[5] = {3, 9, 4, 100, 2};
    int32_t ref_tok[R * (MAXD + 1)], ref_nem[R], ref_fb[R];
    for (int c = 0; c < 4; ++c) {
        int32_t drafts[5];
        memcpy(drafts, drafts0, sizeof drafts);
        int32_t kk[R], fb[R], tok[R * (MAXD + 1)], nem[R], st[R];
        float pp[R], mpp[R], lp[R * (MAXD + 1)];
        memcpy(kk, k, sizeof kk);
        memcpy(pp, p, sizeof pp);
        memcpy(mpp, mp, sizeof mpp);
        int bad = c == 0 ? -1 : 1;
        if (c == 1)
            pp[1] = 0.0f;
        if (c == 2)
            kk[1] = -3;
        if (c == 3) {
            mpp[1] = 1.0f;
            drafts[2] = (int32_t)V; /* request 1's draft out of range: reported first */
        }
        fs_drafts d = {R, 5, MAXD, drafts, offsets};
        fs_sampling s = {T, seed, NULL, NULL, NULL};
        s.top_k = kk;
        s.top_p = pp;
        s.min_p = mpp;
        s.out_filter_fallback = fb;
        fs_context *ctx = fst_cpu_ctx();
        fs_status ret = fst_verify_logits(ctx, l, FS_DTYPE_F32, V, &d, &s, tok, nem, lp, st);
        fs_context_destroy(ctx);
        if (bad < 0) {
            assert_int_equal(ret, FS_OK);
            memcpy(ref_tok, tok, sizeof tok);
            memcpy(ref_nem, nem, sizeof nem);
            memcpy(ref_fb, fb, sizeof fb);
            for (int r = 0; r < R; ++r)
                assert_true(fb[r] >= 0 && fb[r] <= offsets[r + 1] - offsets[r] + 1);
            continue;
        }
        assert_int_equal(ret, FS_ERR_INVALID_ROWS);
        assert_int_equal(st[bad], c == 3 ? FS_ROW_BAD_DRAFT : FS_ROW_BAD_FILTER);
        assert_int_equal(nem[bad], 0);
        assert_int_equal(fb[bad], 0);
        for (int j = 0; j <= MAXD; ++j) {
            assert_int_equal(tok[bad * (MAXD + 1) + j], -1);
            assert_true(isnan(lp[bad * (MAXD + 1) + j]));
        }
        for (int r = 0; r < R; ++r) {
            if (r == bad)
                continue;
            assert_int_equal(st[r], FS_ROW_OK);
            assert_int_equal(nem[r], ref_nem[r]);
            assert_int_equal(fb[r], ref_fb[r]);
            assert_memory_equal(&tok[r * (MAXD + 1)], &ref_tok[r * (MAXD + 1)],
                                sizeof(int32_t) * (MAXD + 1));
        }
    }
    free(l);
}

/* out_filter_fallback is optional, and a call that fails before any work
 * (here: a workspace one byte short) writes nothing, that output included. */
static void test_fallback_output(void **state)
{
    (void)state;
    fs_context *ctx = fst_cpu_ctx();
    float *l = fst_gen_logits(5, ROWS, V, 2.0);
    float T[ROWS] = {1, 1, 1, 1, 1, 1};
    uint64_t seed[ROWS] = {1, 2, 3, 4, 5, 6};
    int32_t k[ROWS] = {100, 100, 100, 100, 100, 100}, fb[ROWS];
    int32_t tok[ROWS], st[ROWS], tok2[ROWS], st2[ROWS];
    fs_sampling s = {T, seed, NULL, NULL, NULL};
    s.top_k = k;
    size_t need = 0;
    assert_int_equal(fs_sample_workspace_size(ctx, ROWS, V, &need), FS_OK);
    void *ws = malloc(need);
    assert_int_equal(fs_sample_logits(ctx, l, FS_DTYPE_F32, ROWS, V, &s, ws, need, tok, NULL, st),
                     FS_OK);
    s.out_filter_fallback = fb;
    memset(fb, 0xA5, sizeof fb);
    memset(tok2, 0xA5, sizeof tok2);
    memset(st2, 0xA5, sizeof st2);
    assert_int_equal(
        fs_sample_logits(ctx, l, FS_DTYPE_F32, ROWS, V, &s, ws, need - 1, tok2, NULL, st2),
        FS_ERR_WORKSPACE_TOO_SMALL);
    for (int r = 0; r < ROWS; ++r) {
        assert_int_equal(fb[r], (int32_t)0xA5A5A5A5);
        assert_int_equal(tok2[r], (int32_t)0xA5A5A5A5);
        assert_int_equal(st2[r], (int32_t)0xA5A5A5A5);
    }
    assert_int_equal(fs_sample_logits(ctx, l, FS_DTYPE_F32, ROWS, V, &s, ws, need, tok2, NULL, st2),
                     FS_OK);
    assert_memory_equal(tok, tok2, sizeof tok);
    for (int r = 0; r < ROWS; ++r)
        assert_int_equal(fb[r], 1); /* k = 100 > 64 candidates: the second pass */
    free(ws);
    free(l);
    fs_context_destroy(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_status_string, fst_reset_hooks),
        cmocka_unit_test_setup(test_sample_bad_values, fst_reset_hooks),
        cmocka_unit_test_setup(test_verify_bad_values, fst_reset_hooks),
        cmocka_unit_test_setup(test_fallback_output, fst_reset_hooks),
    };
    return cmocka_run_group_tests_name("filter_api", tests, NULL, NULL);
}
