/* Bad input on the CUDA path.
 *  - per-row problems (bad temperature, out-of-range draft, malformed
 *    offsets, NaN logits / hidden states, +inf bias, all-masked row, fused
 *    draft argmax's NaN and overflowing rows) give the right fs_row_status
 *    and sentinels on those rows, the other rows equal the CPU context's,
 *    and the call returns FS_OK (a CUDA context cannot know);
 *  - host-visible problems (NULL pointers, too-small workspace) return an
 *    error and leave the (poisoned) outputs untouched;
 *  - each filter field alone (top-k, top-p, min-p, the fallback output)
 *    runs; bad filter values are test_gpu_filter's.
 * Without a GPU, only the no-device behaviour of context creation is checked
 * (then the test is skipped). */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "gpu_util.h"

#ifdef FS_HAVE_CUDA

enum { V = 1003, D = 40, ROWS = 12, MAXD = 3 };

static uint16_t *g_w, *g_h;
static float *g_logits;

static int setup(void **state)
{
    (void)state;
    fst_gen_head(4242, V, D, 64, 3.0, FS_DTYPE_BF16, (void **)&g_w, (void **)&g_h);
    g_logits = fst_gen_logits(4243, 64, V, 3.0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(g_w);
    free(g_h);
    free(g_logits);
    return 0;
}

static void expect_bad_row(const gt_out *o, int64_t r, int32_t status)
{
    if (o->st[r] != status)
        fail_msg("row %lld: status %d, expected %d", (long long)r, o->st[r], status);
    assert_int_equal(o->tok[r], -1);
    assert_true(isnan(o->val[r]));
}

static void run_both(const gt_in *in, gt_out *co, gt_out *go)
{
    fs_context *cpu = fst_cpu_ctx(), *gpu = gt_gpu_ctx();
    gt_out_alloc(in, co);
    gt_out_alloc(in, go);
    gt_run(cpu, in, co);
    gt_run(gpu, in, go);
    assert_int_equal(go->ret, FS_OK);
    fs_context_destroy(cpu);
    fs_context_destroy(gpu);
}

/* sample: temperatures NaN, -1, +inf, a subnormal; an all-masked row; a row
 * with +inf bias on an allowed token; a row with +inf bias on a masked token
 * (fine); NaN in a hidden state; the rest good. */
static void test_sample_rows(void **state)
{
    (void)state;
    float temp[ROWS] = {NAN, -1.0f, INFINITY, 1e-40f, 0.0f, 0.8f, 1.0f, 0.8f, 1.0f, 0.0f, 1.2f, 0.9f};
    uint64_t seed[ROWS], off[ROWS];
    for (int r = 0; r < ROWS; ++r) {
        seed[r] = 99 + (uint64_t)r;
        off[r] = (uint64_t)r;
    }
    int64_t words = fst_mask_words(V);
    uint32_t *allowed = fst_gen_allowed(5, ROWS, V, 0.9);
    memset(allowed + 5 * words, 0, sizeof(uint32_t) * (size_t)words); /* row 5: all masked */
    float *bias = calloc((size_t)(ROWS * V), sizeof(float));
    fst_set_allowed(allowed + 6 * words, 17, 1);
    bias[6 * V + 17] = INFINITY; /* row 6: +inf on an allowed token */
    fst_set_allowed(allowed + 7 * words, 18, 0);
    bias[7 * V + 18] = INFINITY; /* row 7: +inf on a masked token: harmless */
    uint16_t *hidden = malloc(sizeof(uint16_t) * ROWS * D);
    memcpy(hidden, g_h, sizeof(uint16_t) * ROWS * D);
    hidden[8 * D + 3] = fst_f32_to_bf16(NAN); /* row 8: NaN hidden state */

    for (int fused = 0; fused <= 1; ++fused) {
        float *logits = malloc(sizeof(float) * ROWS * V);
        memcpy(logits, g_logits, sizeof(float) * ROWS * V);
        logits[8 * V + 500] = NAN; /* row 8: NaN logit on an allowed token */
        fst_set_allowed(allowed + 8 * words, 500, 1);
        fst_set_allowed(allowed + 8 * words, 3, 1);
        gt_in in = {GT_SAMPLE, fused, fused ? FS_DTYPE_BF16 : FS_DTYPE_F32, V, fused ? D : 0,
                    ROWS, ROWS, g_w, hidden, logits,
                    {temp, seed, off, bias, allowed}, {0, 0, 0, NULL, NULL}};
        gt_out co, go;
        run_both(&in, &co, &go);
        for (int r = 0; r < 4; ++r)
            expect_bad_row(&go, r, FS_ROW_BAD_TEMPERATURE);
        expect_bad_row(&go, 5, FS_ROW_ALL_MASKED);
        expect_bad_row(&go, 6, FS_ROW_NONFINITE);
        expect_bad_row(&go, 8, FS_ROW_NONFINITE);
        for (int r = 0; r < ROWS; ++r) {
            assert_int_equal(go.st[r], co.st[r]);
            assert_int_equal(go.tok[r], co.tok[r]); /* no near-ties at this size */
        }
        assert_int_equal(go.st[7], FS_ROW_OK);
        assert_int_equal(co.ret, FS_ERR_INVALID_ROWS);
        gt_out_free(&co);
        gt_out_free(&go);
        free(logits);
    }
    free(allowed);
    free(bias);
    free(hidden);
}

/* argmax over logits with NaN / +inf / -inf rows. */
static void test_argmax_rows(void **state)
{
    (void)state;
    float *logits = malloc(sizeof(float) * ROWS * V);
    memcpy(logits, g_logits, sizeof(float) * ROWS * V);
    logits[1 * V + 10] = NAN;
    logits[2 * V + V - 1] = INFINITY;
    for (int v = 0; v < V; ++v)
        logits[3 * V + v] = -INFINITY; /* every token impossible: all masked */
    logits[4 * V + 7] = -INFINITY;     /* one impossible token: fine */
    gt_in in = {GT_ARGMAX, 0, FS_DTYPE_F32, V, 0, ROWS, ROWS, NULL, NULL, logits,
                {NULL, NULL, NULL, NULL, NULL}, {0, 0, 0, NULL, NULL}};
    gt_out co, go;
    run_both(&in, &co, &go);
    expect_bad_row(&go, 1, FS_ROW_NONFINITE);
    expect_bad_row(&go, 2, FS_ROW_NONFINITE);
    expect_bad_row(&go, 3, FS_ROW_ALL_MASKED);
    for (int r = 0; r < ROWS; ++r) {
        assert_int_equal(go.st[r], co.st[r]);
        assert_int_equal(go.tok[r], co.tok[r]);
    }
    gt_out_free(&co);
    gt_out_free(&go);
    free(logits);
}

/* Fused draft argmax and sample with non-finite logits, in each Hopper
 * tile-kernel shape: 12 rows (the plain kernel), 136 (the epilogue warps)
 * and 300 (pairs), the rows kernel held off by the context's knobs.  Draft
 * argmax's epilogue computes no exponentials (argmax_block in
 * kernels/scan_hopper.cu), so its max alone must catch a NaN or +inf
 * logit; sample's, without bias or mask, pushes its blocks in logit units
 * (plain_block), where a logit NaN or +inf, or a finite one whose score
 * overflows, must reach the general push.  Cases: whole rows of them (NaN
 * and overflowing hidden states) and one token among finite ones (a NaN
 * weight: every row; an overflowing weight: the even rows, whose hidden
 * state gives it +inf, not the odd ones' -inf); sample also a row whose
 * logits are finite (~1e37) and whose scores at T = 0.05 are not, and a
 * noise block whose finite logits (+-3e38) score +-inf: flagged in the
 * even rows, probability 0 in the odd ones, whose logprobs must not feel
 * it.  On other devices these are just more rows. */
static void test_fused_nonfinite_rows(void **state)
{
    (void)state;
    enum { RMAX = 300, DF = 64 };
    uint16_t *w, *h;
    fst_gen_head(4244, V, DF, RMAX, 3.0, FS_DTYPE_BF16, (void **)&w, (void **)&h);
    uint16_t *wbad = malloc(sizeof(uint16_t) * (size_t)(V * DF));
    float temp[RMAX];
    uint64_t seed[RMAX], off[RMAX];
    const int64_t counts[3] = {12, 136, RMAX};
    for (int oc = 0; oc < 6; ++oc) /* draft argmax (op 0), sample; row count c */
        for (int bad = 0, op = oc / 3, c = oc % 3; bad < (op ? 5 : 3); ++bad) {
            /* bad 0: rows 1 and rows - 2 NaN, row rows / 2 past the fp32
               range; 1: token 500's weights NaN at one place; 2: token 600's
               weight 3e38 at one place, the rows' first hidden value +-2;
               3: row rows / 2 at 1e37, T = 0.05; 4: tokens 32-47 (a noise
               block) with weight 3e38 at one place, the rows' first hidden
               value +-1: logits +-3e38, scores +-inf at T = 0.8 */
            const int64_t rows = counts[c], big = rows / 2;
            uint16_t *hidden = malloc(sizeof(uint16_t) * (size_t)(rows * DF));
            memcpy(hidden, h, sizeof(uint16_t) * (size_t)(rows * DF));
            memcpy(wbad, w, sizeof(uint16_t) * (size_t)(V * DF));
            for (int64_t r = 0; r < rows; ++r) {
                temp[r] = bad == 3 && r == big ? 0.05f : 0.8f;
                seed[r] = 31 + (uint64_t)r;
                off[r] = (uint64_t)r;
            }
            if (bad == 0) {
                hidden[1 * DF + 5] = fst_f32_to_bf16(NAN);
                hidden[(rows - 2) * DF + DF - 1] = fst_f32_to_bf16(NAN);
                for (int k = 0; k < DF; ++k)
                    hidden[big * DF + k] = fst_f32_to_bf16(3e38f);
            } else if (bad == 1) {
                wbad[500 * DF + 7] = fst_f32_to_bf16(NAN);
            } else if (bad == 2) {
                wbad[600 * DF + 0] = fst_f32_to_bf16(3e38f);
                for (int64_t r = 0; r < rows; ++r) /* token 600: +inf in even rows, -inf in odd */
                    hidden[r * DF] = fst_f32_to_bf16(r % 2 ? -2.0f : 2.0f);
            } else if (bad == 3) {
                for (int k = 0; k < DF; ++k)
                    hidden[big * DF + k] = fst_f32_to_bf16(k % 2 ? -1e37f : 1e37f);
            } else {
                for (int t = 32; t < 48; ++t)
                    wbad[t * DF + 0] = fst_f32_to_bf16(3e38f);
                for (int64_t r = 0; r < rows; ++r) /* tokens 32-47: +inf in even rows, -inf in odd */
                    hidden[r * DF] = fst_f32_to_bf16(r % 2 ? -1.0f : 1.0f);
            }
            setenv("FLASHSPEC_HOPPER_ROWS_MIN", "161", 1);
            setenv("FLASHSPEC_TILE_PAIRS_MIN", "161", 1);
            gt_in in = {op ? GT_SAMPLE : GT_ARGMAX, 1, FS_DTYPE_BF16, V, DF, rows, rows, wbad,
                        hidden, NULL,
                        {op ? temp : NULL, op ? seed : NULL, op ? off : NULL, NULL, NULL},
                        {0, 0, 0, NULL, NULL}};
            gt_out co, go;
            run_both(&in, &co, &go);
            unsetenv("FLASHSPEC_HOPPER_ROWS_MIN");
            unsetenv("FLASHSPEC_TILE_PAIRS_MIN");
            for (int64_t r = 0; r < rows; ++r) {
                /* draft argmax: the same token, or a near tie (fp32
                   tensor-core sums against the CPU's, 2700 rows of 1003
                   tokens); sample: the same token (no near-ties here) */
                const int near = !op && go.st[r] == FS_ROW_OK &&
                                 fabsf(go.val[r] - co.val[r]) <= 1e-4f * (1.0f + fabsf(co.val[r]));
                if (go.st[r] != co.st[r] || (go.tok[r] != co.tok[r] && !near))
                    fail_msg("%s, %lld rows, case %d, row %lld: status %d token %d, CPU %d %d",
                             op ? "sample" : "argmax", (long long)rows, bad, (long long)r,
                             go.st[r], go.tok[r], co.st[r], co.tok[r]);
                /* sample's logprob: the blocks whose scores are all -inf
                   (case 4's odd rows) add nothing to the log-sum-exp */
                if (op && go.st[r] == FS_ROW_OK && !gt_close(co.val[r], go.val[r], 1e-3))
                    fail_msg("sample, %lld rows, case %d, row %lld: logprob %g, CPU %g",
                             (long long)rows, bad, (long long)r, go.val[r], co.val[r]);
                if (go.st[r] == FS_ROW_NONFINITE)
                    expect_bad_row(&go, r, FS_ROW_NONFINITE);
            }
            if (bad == 0) {
                expect_bad_row(&go, 1, FS_ROW_NONFINITE);
                expect_bad_row(&go, rows - 2, FS_ROW_NONFINITE);
                expect_bad_row(&go, big, FS_ROW_NONFINITE);
            } else {
                for (int64_t r = 0; r < rows; ++r) {
                    const int nonfinite = bad == 1 || ((bad == 2 || bad == 4) && r % 2 == 0) ||
                                          (bad == 3 && r == big);
                    if ((go.st[r] == FS_ROW_NONFINITE) != nonfinite)
                        fail_msg("%s, %lld rows, case %d, row %lld: status %d",
                                 op ? "sample" : "argmax", (long long)rows, bad, (long long)r,
                                 go.st[r]);
                }
            }
            gt_out_free(&co);
            gt_out_free(&go);
            free(hidden);
        }
    free(wbad);
    free(w);
    free(h);
}

/* verify: per-request failures leave the other requests intact. */
/* expect_status[r] < 0: any status, as long as GPU and CPU agree. */
static void run_verify_layout(const int32_t *offsets, int64_t R, int64_t ndt, const int32_t *drafts,
                              const float *temp, const int32_t *expect_status, int nan_row)
{
    int64_t rows = ndt + R;
    uint64_t seed[16], off[16];
    for (int r = 0; r < 16; ++r) {
        seed[r] = 7 + (uint64_t)r;
        off[r] = 2 * (uint64_t)r;
    }
    float *logits = malloc(sizeof(float) * (size_t)(rows * V));
    memcpy(logits, g_logits, sizeof(float) * (size_t)(rows * V));
    if (nan_row >= 0)
        logits[nan_row * V + 5] = NAN;
    gt_in in = {GT_VERIFY, 0, FS_DTYPE_F32, V, 0, rows, R, NULL, NULL, logits,
                {temp, seed, off, NULL, NULL}, {R, ndt, MAXD, drafts, offsets}};
    gt_out co, go;
    run_both(&in, &co, &go);
    for (int64_t r = 0; r < R; ++r) {
        if (expect_status[r] >= 0 && go.st[r] != expect_status[r])
            fail_msg("request %lld: status %d, expected %d", (long long)r, go.st[r],
                     expect_status[r]);
        assert_int_equal(go.st[r], co.st[r]);
        assert_int_equal(go.nem[r], co.nem[r]);
        for (int k = 0; k <= MAXD; ++k) {
            assert_int_equal(go.tok[r * (MAXD + 1) + k], co.tok[r * (MAXD + 1) + k]);
            if (k >= go.nem[r]) {
                assert_int_equal(go.tok[r * (MAXD + 1) + k], -1);
                assert_true(isnan(go.val[r * (MAXD + 1) + k]));
            }
        }
        if (go.st[r] != FS_ROW_OK)
            assert_int_equal(go.nem[r], 0);
        else
            assert_true(go.nem[r] >= 1);
    }
    gt_out_free(&co);
    gt_out_free(&go);
    free(logits);
}

static void test_verify_requests(void **state)
{
    (void)state;
    const float t4[4] = {0.0f, 1.0f, 0.7f, 1.0f};
    /* draft out of range in request 1 (V) and request 3 (-1); NaN in target
       row 5, the first of request 2's rows 5..7 */
    {
        int32_t offsets[5] = {0, 2, 3, 5, 6};
        int32_t drafts[6] = {1, 2, V, 4, 5, -1};
        int32_t expect[4] = {FS_ROW_OK, FS_ROW_BAD_DRAFT, FS_ROW_NONFINITE, FS_ROW_BAD_DRAFT};
        run_verify_layout(offsets, 4, 6, drafts, t4, expect, 5);
    }
    /* bad temperature in request 2 */
    {
        int32_t offsets[5] = {0, 1, 2, 3, 3};
        int32_t drafts[3] = {1, 2, 3};
        float t[4] = {0.5f, 0.0f, NAN, 1.0f};
        int32_t expect[4] = {FS_ROW_OK, FS_ROW_OK, FS_ROW_BAD_TEMPERATURE, FS_ROW_OK};
        run_verify_layout(offsets, 4, 3, drafts, t, expect, -1);
    }
    /* a request with more than max_drafts drafts fails alone */
    {
        int32_t offsets[5] = {0, 4, 4, 6, 6};
        int32_t drafts[6] = {1, 2, 3, 4, 5, 6};
        int32_t expect[4] = {FS_ROW_BAD_OFFSETS, FS_ROW_OK, FS_ROW_OK, FS_ROW_OK};
        run_verify_layout(offsets, 4, 6, drafts, t4, expect, -1);
    }
    /* a decreasing offset makes the layout unmappable: every request fails */
    {
        int32_t offsets[5] = {0, 2, 1, 6, 6};
        int32_t drafts[6] = {1, 2, 3, 4, 5, 6};
        int32_t expect[4] = {FS_ROW_BAD_OFFSETS, FS_ROW_BAD_OFFSETS, FS_ROW_BAD_OFFSETS,
                             FS_ROW_BAD_OFFSETS};
        run_verify_layout(offsets, 4, 6, drafts, t4, expect, -1);
    }
    /* offsets not starting at 0 / not ending at num_draft_tokens: all bad */
    {
        int32_t offsets[5] = {1, 2, 3, 4, 4};
        int32_t drafts[4] = {1, 2, 3, 4};
        int32_t expect[4] = {FS_ROW_BAD_OFFSETS, FS_ROW_BAD_OFFSETS, FS_ROW_BAD_OFFSETS,
                             FS_ROW_BAD_OFFSETS};
        run_verify_layout(offsets, 4, 4, drafts, t4, expect, -1);
        int32_t offsets2[5] = {0, 1, 2, 3, 3};
        run_verify_layout(offsets2, 4, 4, drafts, t4, expect, -1); /* ends at 3, not 4 */
    }
    /* offsets malformed in the middle so that otherwise valid requests 0 and
       2 would name the same target rows: all flagged, on both backends */
    {
        int32_t offsets[5] = {0, 3, 0, 2, 3};
        int32_t drafts[3] = {1, 2, 3};
        int32_t expect[4] = {FS_ROW_BAD_OFFSETS, FS_ROW_BAD_OFFSETS, FS_ROW_BAD_OFFSETS,
                             FS_ROW_BAD_OFFSETS};
        run_verify_layout(offsets, 4, 3, drafts, t4, expect, -1);
    }
}

/* ---- host-visible errors: nothing written -------------------------------- */

static int all_bytes(const void *p, size_t n, unsigned char b)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; ++i)
        if (c[i] != b)
            return 0;
    return 1;
}

static void test_host_errors(void **state)
{
    (void)state;
    fs_context *gpu = gt_gpu_ctx();
    const int64_t R = 4;
    float temp[4] = {1, 1, 0, 1};
    uint64_t seed[4] = {1, 2, 3, 4};
    void *w = gt_dup(g_w, sizeof(uint16_t) * V * D), *h = gt_dup(g_h, sizeof(uint16_t) * R * D);
    void *l = gt_dup(g_logits, sizeof(float) * R * V);
    fs_sampling p = {gt_dup(temp, sizeof temp), gt_dup(seed, sizeof seed), NULL, NULL, NULL};
    fs_sampling p_null_t = {NULL, p.seed, NULL, NULL, NULL};
    fs_lm_head head = {w, V, D, FS_DTYPE_BF16};
    size_t need = 0;
    GT_FS(gpu, fs_sample_workspace_size(gpu, R, V, &need));
    assert_true(need > 0);
    void *ws = gt_dmalloc(need);
    const size_t out_bytes = 64;
    int32_t *tok = gt_dmalloc(out_bytes), *st = gt_dmalloc(out_bytes), *nem = gt_dmalloc(out_bytes);
    float *val = gt_dmalloc(out_bytes);
    int32_t offsets[5] = {0, 0, 0, 0, 0};
    fs_drafts dr = {R, 0, 2, NULL, gt_dup(offsets, sizeof offsets)};
    size_t vneed = 0;
    GT_FS(gpu, fs_verify_workspace_size(gpu, R, 0, V, &vneed));
    void *vws = gt_dmalloc(vneed);

    for (int c = 0; c < 12; ++c) {
        GT_CUDA(cudaMemset(tok, 0xA5, out_bytes));
        GT_CUDA(cudaMemset(st, 0xA5, out_bytes));
        GT_CUDA(cudaMemset(nem, 0xA5, out_bytes));
        GT_CUDA(cudaMemset(val, 0xA5, out_bytes));
        GT_CUDA(cudaDeviceSynchronize());
        fs_status s, want;
        switch (c) {
        case 0:
            want = FS_ERR_NULL_POINTER;
            s = fs_sample(gpu, &head, NULL, R, &p, ws, need, tok, val, st);
            break;
        case 1:
            want = FS_ERR_NULL_POINTER;
            s = fs_sample(gpu, &head, h, R, &p_null_t, ws, need, tok, val, st);
            break;
        case 2:
            want = FS_ERR_WORKSPACE_TOO_SMALL;
            s = fs_sample(gpu, &head, h, R, &p, ws, need - 1, tok, val, st);
            break;
        case 3:
            want = FS_ERR_NULL_POINTER;
            s = fs_sample(gpu, &head, h, R, &p, NULL, need, tok, val, st);
            break;
        case 4:
            want = FS_ERR_NULL_POINTER;
            s = fs_sample(gpu, &head, h, R, &p, ws, need, NULL, val, st);
            break;
        case 5:
            want = FS_ERR_WORKSPACE_TOO_SMALL;
            s = fs_sample_logits(gpu, l, FS_DTYPE_F32, R, V, &p, ws, 16, tok, val, st);
            break;
        case 6:
            want = FS_ERR_NULL_POINTER;
            s = fs_draft_argmax(gpu, &head, h, R, ws, need, tok, val, NULL);
            break;
        case 7:
            want = FS_ERR_WORKSPACE_TOO_SMALL;
            s = fs_verify(gpu, &head, h, &dr, &p, vws, vneed / 2, tok, nem, val, st);
            break;
        case 8:
            want = FS_ERR_NULL_POINTER;
            s = fs_verify_logits(gpu, l, FS_DTYPE_F32, V, &dr, &p, vws, vneed, tok, NULL, val, st);
            break;
        case 9:
            want = FS_ERR_INVALID_SIZE;
            s = fs_sample(gpu, &head, h, 0, &p, ws, need, tok, val, st);
            break;
        case 10: {
            fs_lm_head bad = {w, V, 0, FS_DTYPE_BF16};
            want = FS_ERR_INVALID_SIZE;
            s = fs_sample(gpu, &bad, h, R, &p, ws, need, tok, val, st);
            break;
        }
        default: {
            fs_lm_head bad = {w, V, D, (fs_dtype)7};
            want = FS_ERR_INVALID_ARGUMENT;
            s = fs_sample(gpu, &bad, h, R, &p, ws, need, tok, val, st);
            break;
        }
        }
        if (s != want)
            fail_msg("case %d: status %s, expected %s", c, fs_status_string(s),
                     fs_status_string(want));
        assert_true(strlen(fs_context_last_error(gpu)) > 0);
        GT_CUDA(cudaDeviceSynchronize());
        unsigned char hb[64];
        void *bufs[4] = {tok, st, nem, val};
        for (int b = 0; b < 4; ++b) {
            gt_down(hb, bufs[b], out_bytes);
            if (!all_bytes(hb, out_bytes, 0xA5))
                fail_msg("case %d: output %d was written", c, b);
        }
    }
    /* and the context still works afterwards */
    GT_FS(gpu, fs_sample(gpu, &head, h, R, &p, ws, need, tok, val, st));
    GT_CUDA(cudaDeviceSynchronize());
    int32_t hst[4];
    gt_down(hst, st, sizeof hst);
    for (int r = 0; r < 4; ++r)
        assert_int_equal(hst[r], FS_ROW_OK);

    gt_dfree(w);
    gt_dfree(h);
    gt_dfree(l);
    gt_dfree(p.temperature);
    gt_dfree(p.seed);
    gt_dfree(ws);
    gt_dfree(vws);
    gt_dfree(tok);
    gt_dfree(st);
    gt_dfree(nem);
    gt_dfree(val);
    gt_dfree(dr.draft_offsets);
    fs_context_destroy(gpu);
}

/* Each filter field on its own (even only the fallback output) runs sample
 * and verify, fused and over logits: every request OK, and the fallback
 * counts written (zero or one per request: one row each here). */
static void test_filters_one_field(void **state)
{
    (void)state;
    fs_context *gpu = gt_gpu_ctx();
    const int64_t R = 4;
    float temp[4] = {1, 1, 0, 1}, topp[4] = {0.9f, 0.9f, 0.9f, 0.9f};
    float minp[4] = {0.1f, 0.1f, 0.1f, 0.1f};
    uint64_t seed[4] = {1, 2, 3, 4};
    int32_t topk[4] = {5, 5, 5, 5};
    void *w = gt_dup(g_w, sizeof(uint16_t) * V * D), *h = gt_dup(g_h, sizeof(uint16_t) * R * D);
    void *l = gt_dup(g_logits, sizeof(float) * R * V);
    fs_lm_head head = {w, V, D, FS_DTYPE_BF16};
    fs_sampling base = {gt_dup(temp, sizeof temp), gt_dup(seed, sizeof seed), NULL, NULL, NULL};
    int32_t *d_k = gt_dup(topk, sizeof topk);
    float *d_p = gt_dup(topp, sizeof topp), *d_mp = gt_dup(minp, sizeof minp);
    const size_t out_bytes = 64;
    int32_t *tok = gt_dmalloc(out_bytes), *st = gt_dmalloc(out_bytes), *nem = gt_dmalloc(out_bytes);
    int32_t *fb = gt_dmalloc(out_bytes);
    float *val = gt_dmalloc(out_bytes);
    int32_t offsets[5] = {0, 0, 0, 0, 0};
    fs_drafts dr = {R, 0, 2, NULL, gt_dup(offsets, sizeof offsets)};
    size_t need = 0, vneed = 0;
    GT_FS(gpu, fs_sample_workspace_size(gpu, R, V, &need));
    GT_FS(gpu, fs_verify_workspace_size(gpu, R, 0, V, &vneed));
    void *ws = gt_dmalloc(need), *vws = gt_dmalloc(vneed);
    for (int field = 0; field < 4; ++field)
        for (int op = 0; op < 4; ++op) {
            fs_sampling p = base;
            if (field == 0)
                p.top_k = d_k;
            else if (field == 1)
                p.top_p = d_p;
            else if (field == 2)
                p.min_p = d_mp;
            else
                p.out_filter_fallback = fb;
            void *bufs[5] = {tok, st, nem, val, fb};
            for (int b = 0; b < 5; ++b)
                GT_CUDA(cudaMemset(bufs[b], 0xA5, out_bytes));
            GT_CUDA(cudaDeviceSynchronize());
            fs_status s;
            if (op == 0)
                s = fs_sample(gpu, &head, h, R, &p, ws, need, tok, val, st);
            else if (op == 1)
                s = fs_sample_logits(gpu, l, FS_DTYPE_F32, R, V, &p, ws, need, tok, val, st);
            else if (op == 2)
                s = fs_verify(gpu, &head, h, &dr, &p, vws, vneed, tok, nem, val, st);
            else
                s = fs_verify_logits(gpu, l, FS_DTYPE_F32, V, &dr, &p, vws, vneed, tok, nem, val,
                                     st);
            if (s != FS_OK)
                fail_msg("filter field %d, op %d: %s (%s)", field, op, fs_status_string(s),
                         fs_context_last_error(gpu));
            GT_CUDA(cudaDeviceSynchronize());
            int32_t hst[4], hfb[4];
            gt_down(hst, st, sizeof hst);
            for (int r = 0; r < R; ++r)
                if (hst[r] != FS_ROW_OK)
                    fail_msg("filter field %d, op %d: request %d status %d", field, op, r,
                             hst[r]);
            if (field == 3) {
                gt_down(hfb, fb, sizeof hfb);
                for (int r = 0; r < R; ++r)
                    if (hfb[r] != 0)
                        fail_msg("op %d: fallback count %d of request %d without filters", op,
                                 hfb[r], r);
            }
        }
    /* without the filter fields the same call runs */
    GT_FS(gpu, fs_sample(gpu, &head, h, R, &base, ws, need, tok, val, st));
    GT_CUDA(cudaDeviceSynchronize());
    gt_dfree(w);
    gt_dfree(h);
    gt_dfree(l);
    gt_dfree(base.temperature);
    gt_dfree(base.seed);
    gt_dfree(d_k);
    gt_dfree(d_p);
    gt_dfree(d_mp);
    gt_dfree(tok);
    gt_dfree(st);
    gt_dfree(nem);
    gt_dfree(fb);
    gt_dfree(val);
    gt_dfree(dr.draft_offsets);
    gt_dfree(ws);
    gt_dfree(vws);
    fs_context_destroy(gpu);
}

static void test_bad_ordinal(void **state)
{
    (void)state;
    fs_context *ctx = (fs_context *)0x1;
    assert_int_equal(fs_context_create(&ctx, FS_DEVICE_CUDA, 9999), FS_ERR_NO_DEVICE);
    assert_null(ctx);
    assert_int_equal(fs_context_create(&ctx, FS_DEVICE_CUDA, -1), FS_ERR_NO_DEVICE);
    assert_null(ctx);
}

int main(void)
{
    if (!fs_cuda_available()) {
        /* creating a CUDA context must fail cleanly, not crash */
        fs_context *ctx = (fs_context *)0x1;
        fs_status s = fs_context_create(&ctx, FS_DEVICE_CUDA, 0);
        if ((s != FS_ERR_NO_DEVICE && s != FS_ERR_UNSUPPORTED) || ctx != NULL) {
            fprintf(stderr, "fs_context_create(CUDA) without a GPU: %s\n", fs_status_string(s));
            return 1;
        }
        printf("test_gpu_bad_input: no-GPU context creation -> %s; SKIP: no CUDA device\n",
               fs_status_string(s));
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sample_rows),     cmocka_unit_test(test_argmax_rows),
        cmocka_unit_test(test_fused_nonfinite_rows),
        cmocka_unit_test(test_verify_requests), cmocka_unit_test(test_host_errors),
        cmocka_unit_test(test_bad_ordinal),     cmocka_unit_test(test_filters_one_field),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}

#else
GT_MAIN_WITHOUT_CUDA("test_gpu_bad_input")
#endif
