/* The public API contract: status strings, version, contexts, workspace
 * queries, host-side validation of every op (right status, a message on the
 * context, nothing written), and per-row value errors on the CPU context
 * (FS_ERR_INVALID_ROWS, the right fs_row_status, sentinels for the bad row,
 * and every other row exactly as in a run without it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_test.h"
#include "naive_ref.h"

/* ---- strings, version, contexts ------------------------------------------ */

static void test_status_strings(void **state)
{
    (void)state;
    const char *seen[16];
    for (int s = FS_OK; s <= FS_ERR_OUT_OF_MEMORY; ++s) {
        const char *m = fs_status_string((fs_status)s);
        assert_non_null(m);
        assert_true(strlen(m) > 0);
        for (int t = 0; t < s; ++t)
            if (strcmp(seen[t], m) == 0)
                fail_msg("statuses %d and %d share the string \"%s\"", t, s, m);
        seen[s] = m;
    }
    assert_non_null(fs_status_string((fs_status)99));
    assert_non_null(fs_status_string((fs_status)-1));
    assert_true(strcmp(fs_status_string((fs_status)99), fs_status_string(FS_OK)) != 0);
    for (int s = FS_ROW_OK; s <= FS_ROW_BAD_FILTER; ++s) {
        const char *m = fs_row_status_string(s);
        assert_non_null(m);
        assert_true(strlen(m) > 0);
        for (int t = 0; t < s; ++t)
            if (strcmp(seen[t], m) == 0)
                fail_msg("row statuses %d and %d share a string", t, s);
        seen[s] = m;
    }
    assert_non_null(fs_row_status_string(42));
    assert_non_null(fs_row_status_string(-3));
}

static void test_version(void **state)
{
    (void)state;
    assert_int_equal(fs_version(), FS_VERSION);
    assert_int_equal(FS_VERSION, FS_VERSION_MAJOR * 10000 + FS_VERSION_MINOR * 100 +
                                     FS_VERSION_PATCH);
}

static void test_context_lifetime(void **state)
{
    (void)state;
    fs_context *ctx = (fs_context *)0x1;
    assert_int_equal(fs_context_create(NULL, FS_DEVICE_CPU, 0), FS_ERR_NULL_POINTER);
    assert_int_equal(fs_context_create(&ctx, (fs_device_kind)7, 0), FS_ERR_INVALID_ARGUMENT);
    assert_null(ctx);
    assert_int_equal(fs_context_create(&ctx, FS_DEVICE_CPU, 0), FS_OK);
    assert_non_null(ctx);
    assert_int_equal(fs_context_device(ctx), FS_DEVICE_CPU);
    assert_string_equal(fs_context_last_error(ctx), "");
    assert_int_equal(fs_context_set_stream(ctx, NULL), FS_OK);
    assert_int_equal(fs_context_set_stream(NULL, NULL), FS_ERR_NULL_POINTER);
    /* a CPU context has no stream and no tensor parallelism */
    int dummy;
    assert_int_not_equal(fs_context_set_stream(ctx, &dummy), FS_OK);
    assert_true(strlen(fs_context_last_error(ctx)) > 0);
    assert_int_equal(fs_context_set_vocab_shard(ctx, NULL, 0, 0), FS_OK); /* detach: no-op */
    assert_int_not_equal(fs_context_set_vocab_shard(ctx, &dummy, 0, 100), FS_OK);
    assert_int_equal(fs_context_set_vocab_shard(NULL, NULL, 0, 0), FS_ERR_NULL_POINTER);
    /* a shard must start on a noise block (checked before the device kind) */
    assert_int_equal(fs_context_set_vocab_shard(ctx, &dummy, 40, 100), FS_ERR_INVALID_SIZE);
    assert_non_null(strstr(fs_context_last_error(ctx), "multiple of 16"));
    assert_int_equal(fs_context_set_vocab_shard(ctx, &dummy, 48, 100), FS_ERR_UNSUPPORTED);
    fs_context_destroy(ctx);
    fs_context_destroy(NULL); /* allowed */
    /* several contexts at once are independent */
    fs_context *a = fst_cpu_ctx(), *b = fst_cpu_ctx();
    assert_ptr_not_equal(a, b);
    size_t n;
    assert_int_equal(fs_sample_workspace_size(a, 0, 10, &n), FS_ERR_INVALID_SIZE);
    assert_true(strlen(fs_context_last_error(a)) > 0);
    assert_string_equal(fs_context_last_error(b), "");
    fs_context_destroy(a);
    fs_context_destroy(b);
    assert_non_null(fs_context_last_error(NULL));
    /* CUDA: fails cleanly without a GPU build or device */
    int cuda = fs_cuda_available();
    assert_true(cuda == 0 || cuda == 1);
    if (!cuda) {
        ctx = (fs_context *)0x1;
        fs_status s = fs_context_create(&ctx, FS_DEVICE_CUDA, 0);
        assert_true(s == FS_ERR_UNSUPPORTED || s == FS_ERR_NO_DEVICE || s == FS_ERR_CUDA);
        assert_null(ctx);
    }
}

/* ---- workspace queries ---------------------------------------------------- */

#define POISON_BYTES 0xA5A5A5A5A5A5A5A5ull

static void test_workspace_queries(void **state)
{
    (void)state;
    fs_context *ctx = fst_cpu_ctx();
    size_t n = POISON_BYTES;
    /* NULL pointers */
    assert_int_equal(fs_sample_workspace_size(NULL, 4, 10, &n), FS_ERR_NULL_POINTER);
    assert_int_equal(fs_sample_workspace_size(ctx, 4, 10, NULL), FS_ERR_NULL_POINTER);
    assert_int_equal(fs_draft_argmax_workspace_size(NULL, 4, 10, &n), FS_ERR_NULL_POINTER);
    assert_int_equal(fs_draft_argmax_workspace_size(ctx, 4, 10, NULL), FS_ERR_NULL_POINTER);
    assert_int_equal(fs_verify_workspace_size(NULL, 2, 3, 10, &n), FS_ERR_NULL_POINTER);
    assert_int_equal(fs_verify_workspace_size(ctx, 2, 3, 10, NULL), FS_ERR_NULL_POINTER);
    assert_true(n == POISON_BYTES);
    /* bad sizes: status, message, nothing written */
    struct {
        int which;
        int64_t a, b, c;
    } bad[] = {
        {0, 0, 10, 0},  {0, -1, 10, 0}, {0, 4, 0, 0},  {0, 4, -5, 0},
        {1, 0, 10, 0},  {1, -1, 10, 0}, {1, 4, 0, 0},  {1, 4, -5, 0},
        {2, 0, 3, 10},  {2, -1, 3, 10}, {2, 2, -1, 10}, {2, 2, 3, 0}, {2, 2, 3, -1},
        {2, 0, 5, 10}, /* rows = 5 looks fine, but there are no requests */
        /* past INT32_MAX, and counts whose sum overflows int64 (found by fuzz_verify) */
        {0, (int64_t)INT32_MAX + 1, 10, 0}, {1, 4, (int64_t)INT32_MAX + 1, 0},
        {2, INT64_MAX, 3, 10}, {2, 2, INT64_MAX, 10}, {2, INT64_MAX, INT64_MAX, 10},
        {2, 2, 3, (int64_t)INT32_MAX + 1},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        fs_context *c = fst_cpu_ctx();
        fs_status s = bad[i].which == 0   ? fs_sample_workspace_size(c, bad[i].a, bad[i].b, &n)
                      : bad[i].which == 1 ? fs_draft_argmax_workspace_size(c, bad[i].a, bad[i].b, &n)
                                          : fs_verify_workspace_size(c, bad[i].a, bad[i].b,
                                                                     bad[i].c, &n);
        if (s != FS_ERR_INVALID_SIZE)
            fail_msg("query %zu: %s, expected invalid size", i, fs_status_string(s));
        assert_true(strlen(fs_context_last_error(c)) > 0);
        if (n != POISON_BYTES)
            fail_msg("query %zu wrote %zu on failure", i, n);
        fs_context_destroy(c);
    }
    /* valid queries */
    size_t s1 = 0, s2 = 0, a1 = 0, v1 = 0, v0 = 0;
    assert_int_equal(fs_sample_workspace_size(ctx, 1, 1, &s1), FS_OK);
    assert_int_equal(fs_sample_workspace_size(ctx, 1000, 151936, &s2), FS_OK);
    assert_int_equal(fs_draft_argmax_workspace_size(ctx, 7, 100, &a1), FS_OK);
    assert_int_equal(fs_verify_workspace_size(ctx, 3, 9, 100, &v1), FS_OK);
    assert_int_equal(fs_verify_workspace_size(ctx, 3, 0, 100, &v0), FS_OK);
    assert_true(s2 >= s1);
    assert_true(v1 >= v0);
    fs_context_destroy(ctx);
}

/* ---- host validation of every op ------------------------------------------ */

enum { OP_SAMPLE, OP_SAMPLE_LOGITS, OP_ARGMAX, OP_ARGMAX_LOGITS, OP_VERIFY, OP_VERIFY_LOGITS,
       OP_COUNT };
static const char *OP_NAMES[OP_COUNT] = {"fs_sample", "fs_sample_logits", "fs_draft_argmax",
                                         "fs_draft_argmax_logits", "fs_verify",
                                         "fs_verify_logits"};
#define M_FUSED ((1u << OP_SAMPLE) | (1u << OP_ARGMAX) | (1u << OP_VERIFY))
#define M_LOGITS ((1u << OP_SAMPLE_LOGITS) | (1u << OP_ARGMAX_LOGITS) | (1u << OP_VERIFY_LOGITS))
#define M_PARAMS ((1u << OP_SAMPLE) | (1u << OP_SAMPLE_LOGITS) | (1u << OP_VERIFY) | \
                  (1u << OP_VERIFY_LOGITS))
#define M_VERIFY ((1u << OP_VERIFY) | (1u << OP_VERIFY_LOGITS))
#define M_ROWS ((1u << OP_SAMPLE) | (1u << OP_SAMPLE_LOGITS) | (1u << OP_ARGMAX) | \
                (1u << OP_ARGMAX_LOGITS))
#define M_ALL ((1u << OP_COUNT) - 1u)

enum { AV = 40, AD = 8, AROWS = 3, AR = 2, ANDT = 3, AMAXD = 2, OUTN = 64, WS_BIG = 1 << 16 };

typedef struct args {
    fs_context *ctx;
    fs_lm_head head;
    const fs_lm_head *headp;
    const void *hidden, *logits;
    fs_dtype dtype;
    int64_t rows, V;
    fs_sampling params;
    const fs_sampling *paramsp;
    fs_drafts drafts;
    const fs_drafts *draftsp;
    void *ws;
    size_t ws_bytes;
    int32_t *tok;
    float *vals;
    int32_t *nem, *st;
} args;

static float g_weight[AV * AD], g_hidden[8 * AD], g_logits[8 * AV];
static float g_T[4] = {1.0f, 0.0f, 0.5f, 2.0f};
static uint64_t g_seed[4] = {11, 22, 33, 44}, g_off[4] = {1, 2, 3, 4};
static int32_t g_drafts[8] = {3, 5, 7}, g_offsets[4] = {0, 2, 3};
static int32_t o_tok[OUTN], o_nem[OUTN], o_st[OUTN];
static float o_vals[OUTN];
static unsigned char g_ws[WS_BIG];

static void poison(void)
{
    memset(o_tok, 0xA5, sizeof o_tok);
    memset(o_nem, 0xA5, sizeof o_nem);
    memset(o_st, 0xA5, sizeof o_st);
    memset(o_vals, 0xA5, sizeof o_vals);
    memset(g_ws, 0xA5, sizeof g_ws);
}

static int poisoned(const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; ++i)
        if (c[i] != 0xA5)
            return 0;
    return 1;
}

static void default_args(args *a, int op, fs_context *ctx)
{
    memset(a, 0, sizeof *a);
    a->ctx = ctx;
    a->head.weight = g_weight;
    a->head.vocab_size = AV;
    a->head.hidden_dim = AD;
    a->head.dtype = FS_DTYPE_F32;
    a->headp = &a->head;
    a->hidden = g_hidden;
    a->logits = g_logits;
    a->dtype = FS_DTYPE_F32;
    a->rows = AROWS;
    a->V = AV;
    a->params.temperature = g_T;
    a->params.seed = g_seed;
    a->params.offset = g_off;
    a->paramsp = &a->params;
    a->drafts.num_requests = AR;
    a->drafts.num_draft_tokens = ANDT;
    a->drafts.max_drafts = AMAXD;
    a->drafts.draft_tokens = g_drafts;
    a->drafts.draft_offsets = g_offsets;
    a->draftsp = &a->drafts;
    a->ws = g_ws;
    a->ws_bytes = WS_BIG;
    a->tok = o_tok;
    a->vals = o_vals;
    a->nem = o_nem;
    a->st = o_st;
    (void)op;
}

static size_t need_bytes(int op, fs_context *ctx)
{
    size_t n = 0;
    fs_status s;
    if (op == OP_VERIFY || op == OP_VERIFY_LOGITS)
        s = fs_verify_workspace_size(ctx, AR, ANDT, AV, &n);
    else if (op == OP_ARGMAX || op == OP_ARGMAX_LOGITS)
        s = fs_draft_argmax_workspace_size(ctx, AROWS, AV, &n);
    else
        s = fs_sample_workspace_size(ctx, AROWS, AV, &n);
    assert_int_equal(s, FS_OK);
    assert_true(n <= WS_BIG);
    return n;
}

static fs_status call(int op, const args *a)
{
    switch (op) {
    case OP_SAMPLE:
        return fs_sample(a->ctx, a->headp, a->hidden, a->rows, a->paramsp, a->ws, a->ws_bytes,
                         a->tok, a->vals, a->st);
    case OP_SAMPLE_LOGITS:
        return fs_sample_logits(a->ctx, a->logits, a->dtype, a->rows, a->V, a->paramsp, a->ws,
                                a->ws_bytes, a->tok, a->vals, a->st);
    case OP_ARGMAX:
        return fs_draft_argmax(a->ctx, a->headp, a->hidden, a->rows, a->ws, a->ws_bytes, a->tok,
                               a->vals, a->st);
    case OP_ARGMAX_LOGITS:
        return fs_draft_argmax_logits(a->ctx, a->logits, a->dtype, a->rows, a->V, a->ws,
                                      a->ws_bytes, a->tok, a->vals, a->st);
    case OP_VERIFY:
        return fs_verify(a->ctx, a->headp, a->hidden, a->draftsp, a->paramsp, a->ws, a->ws_bytes,
                         a->tok, a->nem, a->vals, a->st);
    default:
        return fs_verify_logits(a->ctx, a->logits, a->dtype, a->V, a->draftsp, a->paramsp, a->ws,
                                a->ws_bytes, a->tok, a->nem, a->vals, a->st);
    }
}

typedef struct mutation {
    const char *name;
    unsigned ops;
    fs_status expect;
    void (*apply)(args *a, size_t need);
} mutation;

#define MUT(fn_name, body)                                      \
    static void fn_name(args *a, size_t need)                   \
    {                                                           \
        (void)need;                                             \
        body;                                                   \
    }
MUT(m_head_null, a->headp = NULL)
MUT(m_weight_null, a->head.weight = NULL)
MUT(m_hidden_null, a->hidden = NULL)
MUT(m_logits_null, a->logits = NULL)
MUT(m_head_dtype_3, a->head.dtype = (fs_dtype)3)
MUT(m_head_dtype_neg, a->head.dtype = (fs_dtype)-1)
MUT(m_dtype_3, a->dtype = (fs_dtype)3)
MUT(m_dtype_neg, a->dtype = (fs_dtype)-1)
MUT(m_rows_0, a->rows = 0)
MUT(m_rows_neg, a->rows = -1)
MUT(m_vocab_0, a->V = 0; a->head.vocab_size = 0)
MUT(m_vocab_neg, a->V = -3; a->head.vocab_size = -3)
MUT(m_vocab_big, a->V = (int64_t)INT32_MAX + 1; a->head.vocab_size = (int64_t)INT32_MAX + 1)
MUT(m_rows_big, a->rows = (int64_t)INT32_MAX + 1)
MUT(m_dim_big, a->head.hidden_dim = (int64_t)INT32_MAX + 1)
MUT(m_req_big, a->drafts.num_requests = (int64_t)INT32_MAX / 2 + 1)
MUT(m_maxd_big, a->drafts.max_drafts = (int64_t)(1u << 24) - 1)
MUT(m_dim_0, a->head.hidden_dim = 0)
MUT(m_dim_neg, a->head.hidden_dim = -8)
MUT(m_params_null, a->paramsp = NULL)
MUT(m_temp_null, a->params.temperature = NULL)
MUT(m_seed_null, a->params.seed = NULL)
MUT(m_ws_null, a->ws = NULL; a->ws_bytes = need)
MUT(m_ws_small, a->ws_bytes = need - 1)
MUT(m_ws_zero, a->ws_bytes = 0)
MUT(m_tok_null, a->tok = NULL)
MUT(m_st_null, a->st = NULL)
MUT(m_nem_null, a->nem = NULL)
MUT(m_drafts_null, a->draftsp = NULL)
MUT(m_req_0, a->drafts.num_requests = 0)
MUT(m_req_neg, a->drafts.num_requests = -2)
MUT(m_maxd_neg, a->drafts.max_drafts = -1)
MUT(m_ndt_neg, a->drafts.num_draft_tokens = -1)
MUT(m_ndt_big, a->drafts.num_draft_tokens = AR * AMAXD + 1)
MUT(m_offsets_null, a->drafts.draft_offsets = NULL)
MUT(m_dtoks_null, a->drafts.draft_tokens = NULL)
MUT(m_ctx_null, a->ctx = NULL)

static const mutation MUTATIONS[] = {
    {"ctx NULL", M_ALL, FS_ERR_NULL_POINTER, m_ctx_null},
    {"head NULL", M_FUSED, FS_ERR_NULL_POINTER, m_head_null},
    {"head->weight NULL", M_FUSED, FS_ERR_NULL_POINTER, m_weight_null},
    {"hidden NULL", M_FUSED, FS_ERR_NULL_POINTER, m_hidden_null},
    {"logits NULL", M_LOGITS, FS_ERR_NULL_POINTER, m_logits_null},
    {"head->dtype 3", M_FUSED, FS_ERR_INVALID_ARGUMENT, m_head_dtype_3},
    {"head->dtype -1", M_FUSED, FS_ERR_INVALID_ARGUMENT, m_head_dtype_neg},
    {"dtype 3", M_LOGITS, FS_ERR_INVALID_ARGUMENT, m_dtype_3},
    {"dtype -1", M_LOGITS, FS_ERR_INVALID_ARGUMENT, m_dtype_neg},
    {"rows 0", M_ROWS, FS_ERR_INVALID_SIZE, m_rows_0},
    {"rows -1", M_ROWS, FS_ERR_INVALID_SIZE, m_rows_neg},
    {"vocab 0", M_ALL, FS_ERR_INVALID_SIZE, m_vocab_0},
    {"vocab -3", M_ALL, FS_ERR_INVALID_SIZE, m_vocab_neg},
    {"vocab INT32_MAX + 1", M_ALL, FS_ERR_INVALID_SIZE, m_vocab_big},
    {"rows INT32_MAX + 1", M_ROWS, FS_ERR_INVALID_SIZE, m_rows_big},
    {"hidden_dim INT32_MAX + 1", M_FUSED, FS_ERR_INVALID_SIZE, m_dim_big},
    {"num_requests INT32_MAX / 2 + 1", M_VERIFY, FS_ERR_INVALID_SIZE, m_req_big},
    {"max_drafts 2^24 - 1", M_VERIFY, FS_ERR_INVALID_SIZE, m_maxd_big},
    {"hidden_dim 0", M_FUSED, FS_ERR_INVALID_SIZE, m_dim_0},
    {"hidden_dim -8", M_FUSED, FS_ERR_INVALID_SIZE, m_dim_neg},
    {"params NULL", M_PARAMS, FS_ERR_NULL_POINTER, m_params_null},
    {"params->temperature NULL", M_PARAMS, FS_ERR_NULL_POINTER, m_temp_null},
    {"params->seed NULL", M_PARAMS, FS_ERR_NULL_POINTER, m_seed_null},
    {"workspace NULL", M_ALL, FS_ERR_NULL_POINTER, m_ws_null},
    {"workspace 1 byte short", M_ALL, FS_ERR_WORKSPACE_TOO_SMALL, m_ws_small},
    {"workspace 0 bytes", M_ALL, FS_ERR_WORKSPACE_TOO_SMALL, m_ws_zero},
    {"out_tokens NULL", M_ALL, FS_ERR_NULL_POINTER, m_tok_null},
    {"out_row_status NULL", M_ALL, FS_ERR_NULL_POINTER, m_st_null},
    {"out_num_emitted NULL", M_VERIFY, FS_ERR_NULL_POINTER, m_nem_null},
    {"drafts NULL", M_VERIFY, FS_ERR_NULL_POINTER, m_drafts_null},
    {"num_requests 0", M_VERIFY, FS_ERR_INVALID_SIZE, m_req_0},
    {"num_requests -2", M_VERIFY, FS_ERR_INVALID_SIZE, m_req_neg},
    {"max_drafts -1", M_VERIFY, FS_ERR_INVALID_SIZE, m_maxd_neg},
    {"num_draft_tokens -1", M_VERIFY, FS_ERR_INVALID_SIZE, m_ndt_neg},
    {"num_draft_tokens > num_requests * max_drafts", M_VERIFY, FS_ERR_INVALID_SIZE, m_ndt_big},
    {"draft_offsets NULL", M_VERIFY, FS_ERR_NULL_POINTER, m_offsets_null},
    {"draft_tokens NULL with drafts", M_VERIFY, FS_ERR_NULL_POINTER, m_dtoks_null},
};

static void fill_inputs(void)
{
    fst_rng r;
    fst_rng_seed(&r, 5);
    for (int i = 0; i < AV * AD; ++i)
        g_weight[i] = (float)(fst_normal(&r) * 0.7);
    for (int i = 0; i < 8 * AD; ++i)
        g_hidden[i] = (float)fst_normal(&r);
    for (int i = 0; i < 8 * AV; ++i)
        g_logits[i] = (float)(fst_normal(&r) * 2);
}

static void test_validation(void **state)
{
    (void)state;
    fill_inputs();
    int checked = 0;
    for (int op = 0; op < OP_COUNT; ++op) {
        /* the unmutated call is valid */
        fs_context *ctx = fst_cpu_ctx();
        args a;
        default_args(&a, op, ctx);
        size_t need = need_bytes(op, ctx);
        poison();
        fs_status s = call(op, &a);
        if (s != FS_OK)
            fail_msg("%s: valid call returned %s (%s)", OP_NAMES[op], fs_status_string(s),
                     fs_context_last_error(ctx));
        assert_false(poisoned(o_tok, sizeof(int32_t)));
        fs_context_destroy(ctx);
        for (size_t m = 0; m < sizeof MUTATIONS / sizeof MUTATIONS[0]; ++m) {
            const mutation *mu = &MUTATIONS[m];
            if (!(mu->ops & (1u << op)))
                continue;
            if ((mu->apply == m_ws_null || mu->apply == m_ws_small) && need == 0)
                continue; /* nothing needed, nothing to get wrong */
            ctx = fst_cpu_ctx();
            default_args(&a, op, ctx);
            mu->apply(&a, need);
            poison();
            s = call(op, &a);
            if (s != mu->expect)
                fail_msg("%s with %s: %s, expected %s (%s)", OP_NAMES[op], mu->name,
                         fs_status_string(s), fs_status_string(mu->expect),
                         fs_context_last_error(ctx));
            if (a.ctx && strlen(fs_context_last_error(ctx)) == 0)
                fail_msg("%s with %s: no last-error message", OP_NAMES[op], mu->name);
            if (!poisoned(o_tok, sizeof o_tok) || !poisoned(o_vals, sizeof o_vals) ||
                !poisoned(o_nem, sizeof o_nem) || !poisoned(o_st, sizeof o_st))
                fail_msg("%s with %s: an output was written", OP_NAMES[op], mu->name);
            if (!poisoned(g_ws, sizeof g_ws))
                fail_msg("%s with %s: the workspace was written", OP_NAMES[op], mu->name);
            fs_context_destroy(ctx);
            ++checked;
        }
    }
    print_message("%d invalid calls checked\n", checked);
    assert_true(checked > 100);
}

/* Optional pointers really are optional, and a larger workspace is fine. */
static void test_optional_pointers(void **state)
{
    (void)state;
    fill_inputs();
    fs_context *ctx = fst_cpu_ctx();
    for (int op = 0; op < OP_COUNT; ++op) {
        args a;
        default_args(&a, op, ctx);
        poison();
        assert_int_equal(call(op, &a), FS_OK);
        int32_t ref_tok[OUTN];
        memcpy(ref_tok, o_tok, sizeof ref_tok);
        a.vals = NULL; /* logprobs / logits optional */
        poison();
        assert_int_equal(call(op, &a), FS_OK);
        assert_true(poisoned(o_vals, sizeof o_vals));
        int n = op >= OP_VERIFY ? AR * (AMAXD + 1) : AROWS;
        assert_memory_equal(o_tok, ref_tok, sizeof(int32_t) * (size_t)n);
        /* exactly the workspace asked for */
        a.ws_bytes = need_bytes(op, ctx);
        assert_int_equal(call(op, &a), FS_OK);
        assert_memory_equal(o_tok, ref_tok, sizeof(int32_t) * (size_t)n);
        /* outputs beyond the op's extent untouched */
        assert_true(poisoned(o_tok + n, sizeof(int32_t) * (size_t)(OUTN - n)));
        int nst = op >= OP_VERIFY ? AR : AROWS;
        assert_true(poisoned(o_st + nst, sizeof(int32_t) * (size_t)(OUTN - nst)));
    }
    /* offset NULL = all offsets 0 */
    args a;
    default_args(&a, OP_SAMPLE_LOGITS, ctx);
    uint64_t zeros[4] = {0, 0, 0, 0};
    a.params.offset = zeros;
    assert_int_equal(call(OP_SAMPLE_LOGITS, &a), FS_OK);
    int32_t t0[AROWS];
    memcpy(t0, o_tok, sizeof t0);
    a.params.offset = NULL;
    assert_int_equal(call(OP_SAMPLE_LOGITS, &a), FS_OK);
    assert_memory_equal(t0, o_tok, sizeof t0);
    /* draft_tokens may be NULL when there are no drafts */
    default_args(&a, OP_VERIFY_LOGITS, ctx);
    int32_t zoff[3] = {0, 0, 0};
    a.drafts.num_draft_tokens = 0;
    a.drafts.draft_tokens = NULL;
    a.drafts.draft_offsets = zoff;
    assert_int_equal(call(OP_VERIFY_LOGITS, &a), FS_OK);
    assert_int_equal(o_nem[0], 1);
    assert_int_equal(o_nem[1], 1);
    /* max_drafts = 0 is allowed */
    a.drafts.max_drafts = 0;
    assert_int_equal(call(OP_VERIFY_LOGITS, &a), FS_OK);
    fs_context_destroy(ctx);
}

/* ---- per-row value errors -------------------------------------------------- */

enum { SV = 29, SROWS = 6, SW = 1 };

typedef struct srun {
    int32_t tok[SROWS], st[SROWS];
    float lp[SROWS];
    fs_status s;
    char err[512];
} srun;

typedef struct sprob {
    int64_t rows;
    float logits[SROWS * SV], bias[SROWS * SV];
    uint32_t allowed[SROWS * SW];
    float T[SROWS];
    uint64_t seed[SROWS], off[SROWS];
    int use_bias, use_mask;
} sprob;

static void sprob_init(sprob *p, uint64_t seed)
{
    fst_rng r;
    fst_rng_seed(&r, seed);
    memset(p, 0, sizeof *p);
    p->rows = SROWS;
    for (int i = 0; i < SROWS * SV; ++i) {
        p->logits[i] = (float)(fst_normal(&r) * 2);
        p->bias[i] = 0.0f;
    }
    for (int i = 0; i < SROWS; ++i) {
        p->T[i] = (float)(i % 3) * 0.5f; /* 0, 0.5, 1 */
        p->seed[i] = fst_next(&r);
        p->off[i] = (uint64_t)i;
        p->allowed[i] = 0xFFFFFFFFu;
    }
}

/* the problem without row k */
static void sprob_without(const sprob *p, int64_t k, sprob *q)
{
    *q = *p;
    q->rows = p->rows - 1;
    for (int64_t i = k; i < q->rows; ++i) {
        memcpy(q->logits + i * SV, p->logits + (i + 1) * SV, sizeof(float) * SV);
        memcpy(q->bias + i * SV, p->bias + (i + 1) * SV, sizeof(float) * SV);
        q->allowed[i] = p->allowed[i + 1];
        q->T[i] = p->T[i + 1];
        q->seed[i] = p->seed[i + 1];
        q->off[i] = p->off[i + 1];
    }
}

static void sprob_run(const sprob *p, int argmax, srun *o)
{
    fs_context *ctx = fst_cpu_ctx();
    fs_sampling ps = {p->T, p->seed, p->off, p->use_bias ? p->bias : NULL,
                      p->use_mask ? p->allowed : NULL};
    memset(o, 0xA5, sizeof *o);
    o->s = argmax ? fst_argmax_logits(ctx, p->logits, FS_DTYPE_F32, p->rows, SV, o->tok, o->lp,
                                      o->st)
                  : fst_sample_logits(ctx, p->logits, FS_DTYPE_F32, p->rows, SV, &ps, o->tok,
                                      o->lp, o->st);
    snprintf(o->err, sizeof o->err, "%s", fs_context_last_error(ctx));
    fs_context_destroy(ctx);
}

/* Row k of p is bad with `expect` (0 = any non-OK status): check the call. */
static void check_bad_row(const sprob *p, int64_t k, int32_t expect, int argmax, const char *what)
{
    srun bad, good;
    sprob q;
    sprob_run(p, argmax, &bad);
    if (bad.s != FS_ERR_INVALID_ROWS)
        fail_msg("%s (row %lld): %s, expected FS_ERR_INVALID_ROWS", what, (long long)k,
                 fs_status_string(bad.s));
    if (strlen(bad.err) == 0)
        fail_msg("%s: no last-error message", what);
    if (expect ? bad.st[k] != expect : bad.st[k] == FS_ROW_OK)
        fail_msg("%s: row status %d (%s), expected %d", what, bad.st[k],
                 fs_row_status_string(bad.st[k]), expect);
    if (bad.tok[k] != -1 || !isnan(bad.lp[k]))
        fail_msg("%s: sentinels not written (token %d, value %g)", what, bad.tok[k], bad.lp[k]);
    sprob_without(p, k, &q);
    sprob_run(&q, argmax, &good);
    assert_int_equal(good.s, FS_OK);
    for (int64_t i = 0, j = 0; i < p->rows; ++i) {
        if (i == k)
            continue;
        if (bad.st[i] != FS_ROW_OK || bad.tok[i] != good.tok[j] ||
            memcmp(&bad.lp[i], &good.lp[j], sizeof(float)) != 0)
            fail_msg("%s: row %lld changed by the bad row %lld: (%d, %d, %g) vs (%d, %d, %g)",
                     what, (long long)i, (long long)k, bad.st[i], bad.tok[i], bad.lp[i],
                     FS_ROW_OK, good.tok[j], good.lp[j]);
        ++j;
    }
}

static void test_row_errors_sample(void **state)
{
    (void)state;
    const float bad_t[] = {-1.0f, -0.0001f, NAN, INFINITY, -INFINITY, 1e-40f /* denormal */};
    for (int64_t k = 0; k < SROWS; k += 2) {
        sprob p;
        char what[128];
        for (size_t i = 0; i < sizeof bad_t / sizeof bad_t[0]; ++i) {
            sprob_init(&p, 100 + (uint64_t)k);
            p.T[k] = bad_t[i];
            snprintf(what, sizeof what, "sample T = %g", bad_t[i]);
            check_bad_row(&p, k, FS_ROW_BAD_TEMPERATURE, 0, what);
        }
        const float bad_l[] = {NAN, INFINITY};
        for (int i = 0; i < 2; ++i)
            for (int use_mask = 0; use_mask < 2; ++use_mask) {
                sprob_init(&p, 200 + (uint64_t)k);
                p.use_mask = use_mask;
                p.allowed[k] = 0x00F0F0F0u;
                p.logits[k * SV + 5] = bad_l[i]; /* token 5: allowed in both */
                snprintf(what, sizeof what, "sample logit %g (mask %d)", bad_l[i], use_mask);
                check_bad_row(&p, k, FS_ROW_NONFINITE, 0, what);
            }
        /* logit + bias nonfinite */
        const float bad_b[][2] = {{1.0f, INFINITY}, {1.0f, NAN}, {-INFINITY, INFINITY},
                                  {3e38f, 3e38f}};
        for (int i = 0; i < 4; ++i) {
            sprob_init(&p, 300 + (uint64_t)k);
            p.use_bias = 1;
            p.logits[k * SV + 7] = bad_b[i][0];
            p.bias[k * SV + 7] = bad_b[i][1];
            snprintf(what, sizeof what, "sample logit %g + bias %g", bad_b[i][0], bad_b[i][1]);
            check_bad_row(&p, k, FS_ROW_NONFINITE, 0, what);
        }
        /* every token masked */
        sprob_init(&p, 400 + (uint64_t)k);
        p.use_mask = 1;
        p.allowed[k] = 0xE0000000u; /* only padding bits (29..31) set */
        check_bad_row(&p, k, FS_ROW_ALL_MASKED, 0, "sample all masked");
        /* every logit -inf: no distribution to sample from */
        sprob_init(&p, 500 + (uint64_t)k);
        for (int v = 0; v < SV; ++v)
            p.logits[k * SV + v] = -INFINITY;
        check_bad_row(&p, k, 0, 0, "sample all -inf");
        /* bias -inf everywhere */
        sprob_init(&p, 600 + (uint64_t)k);
        p.use_bias = 1;
        for (int v = 0; v < SV; ++v)
            p.bias[k * SV + v] = -INFINITY;
        check_bad_row(&p, k, 0, 0, "sample bias all -inf");
        /* greedy rows are checked too */
        sprob_init(&p, 700 + (uint64_t)k);
        p.T[k] = 0.0f;
        p.logits[k * SV + 28] = NAN;
        check_bad_row(&p, k, FS_ROW_NONFINITE, 0, "greedy sample NaN");
    }
}

/* Values that are NOT errors: NaN / +inf on a masked token, -inf logits. */
static void test_row_non_errors_sample(void **state)
{
    (void)state;
    sprob p;
    srun o;
    sprob_init(&p, 800);
    p.use_mask = 1;
    p.allowed[2] = 0x0FFFFFFFu & ~(1u << 4);
    p.logits[2 * SV + 4] = NAN;      /* masked NaN: ignored */
    p.logits[2 * SV + 28] = INFINITY; /* masked +inf (bit 28 cleared): ignored */
    p.logits[3 * SV + 0] = -INFINITY;
    sprob_run(&p, 0, &o);
    if (o.s != FS_OK)
        fail_msg("%s: %s", fs_status_string(o.s), o.err);
    for (int i = 0; i < SROWS; ++i)
        assert_int_equal(o.st[i], FS_ROW_OK);
    assert_true(o.tok[2] != 4 && o.tok[2] != 28);
    /* a -inf token is never drawn, over many seeds */
    sprob q;
    sprob_init(&q, 801);
    for (int i = 0; i < SROWS; ++i) {
        memcpy(q.logits + i * SV, p.logits + 3 * SV, sizeof(float) * SV);
        q.T[i] = 1.0f;
        q.logits[i * SV + 1] = 30.0f; /* a finite token that dominates... */
        q.logits[i * SV + 0] = -INFINITY;
    }
    for (int rep = 0; rep < 50; ++rep) {
        for (int i = 0; i < SROWS; ++i)
            q.seed[i] = (uint64_t)(rep * SROWS + i);
        sprob_run(&q, 0, &o);
        assert_int_equal(o.s, FS_OK);
        for (int i = 0; i < SROWS; ++i)
            assert_true(o.tok[i] != 0);
    }
}

/* The smallest valid temperatures (FLT_MIN and a little above: the header
 * makes only (0, FLT_MIN) invalid) with ordinary finite logits are valid rows:
 * the law softmax((l + b) / T) is then the argmax.  (l + b) / T overflows
 * float for |l + b| > FLT_MAX * T, which is not a non-finite logit. */
static void test_tiny_temperature(void **state)
{
    (void)state;
    const float temps[] = {FLT_MIN, 1e-37f, 1e-36f};
    for (size_t i = 0; i < sizeof temps / sizeof temps[0]; ++i) {
        sprob p;
        srun o;
        sprob_init(&p, 850 + i);
        for (int r = 0; r < SROWS; ++r)
            p.T[r] = temps[i];
        sprob_run(&p, 0, &o);
        for (int r = 0; r < SROWS; ++r) {
            int32_t am = 0;
            for (int v = 1; v < SV; ++v)
                if (p.logits[r * SV + v] > p.logits[r * SV + am])
                    am = v;
            if (o.st[r] != FS_ROW_OK || o.tok[r] != am)
                fail_msg("T = %g (valid), finite logits (max %g): row %d status %d (%s), token "
                         "%d, expected FS_ROW_OK and the argmax %d",
                         temps[i], p.logits[r * SV + am], r, o.st[r],
                         fs_row_status_string(o.st[r]), o.tok[r], am);
        }
        assert_int_equal(o.s, FS_OK);
    }
}

static void test_row_errors_argmax(void **state)
{
    (void)state;
    for (int64_t k = 0; k < SROWS; k += 1) {
        sprob p;
        sprob_init(&p, 900 + (uint64_t)k);
        p.logits[k * SV + 3] = NAN;
        check_bad_row(&p, k, FS_ROW_NONFINITE, 1, "argmax NaN");
        sprob_init(&p, 910 + (uint64_t)k);
        p.logits[k * SV + 0] = INFINITY;
        check_bad_row(&p, k, FS_ROW_NONFINITE, 1, "argmax +inf");
        sprob_init(&p, 920 + (uint64_t)k);
        for (int v = 0; v < SV; ++v)
            p.logits[k * SV + v] = -INFINITY;
        check_bad_row(&p, k, 0, 1, "argmax all -inf");
    }
}

/* Fused ops: a NaN in one row's hidden state poisons only that row. */
static void test_row_errors_fused(void **state)
{
    (void)state;
    fill_inputs();
    fs_context *ctx = fst_cpu_ctx();
    fs_lm_head head = {g_weight, AV, AD, FS_DTYPE_F32};
    float hid[4 * AD];
    memcpy(hid, g_hidden, sizeof hid);
    hid[1 * AD + 3] = NAN;
    float T[4] = {1.0f, 0.5f, 0.0f, 2.0f};
    fs_sampling p = {T, g_seed, g_off, NULL, NULL};
    int32_t tok[4], st[4];
    float lp[4];
    assert_int_equal(fst_sample(ctx, &head, hid, 4, &p, tok, lp, st), FS_ERR_INVALID_ROWS);
    assert_true(strlen(fs_context_last_error(ctx)) > 0);
    assert_int_equal(st[1], FS_ROW_NONFINITE);
    assert_int_equal(tok[1], -1);
    assert_true(isnan(lp[1]));
    /* the others equal a run without row 1 */
    float hid3[3 * AD];
    memcpy(hid3, hid, sizeof(float) * AD);
    memcpy(hid3 + AD, hid + 2 * AD, sizeof(float) * 2 * AD);
    float T3[3] = {1.0f, 0.0f, 2.0f};
    uint64_t s3[3] = {g_seed[0], g_seed[2], g_seed[3]}, o3[3] = {g_off[0], g_off[2], g_off[3]};
    fs_sampling p3 = {T3, s3, o3, NULL, NULL};
    int32_t tok3[3], st3[3];
    float lp3[3];
    assert_int_equal(fst_sample(ctx, &head, hid3, 3, &p3, tok3, lp3, st3), FS_OK);
    assert_int_equal(tok[0], tok3[0]);
    assert_int_equal(tok[2], tok3[1]);
    assert_int_equal(tok[3], tok3[2]);
    assert_true(lp[0] == lp3[0] && lp[2] == lp3[1] && lp[3] == lp3[2]);
    /* argmax alike */
    float val[4];
    assert_int_equal(fst_argmax(ctx, &head, hid, 4, tok, val, st), FS_ERR_INVALID_ROWS);
    assert_int_equal(st[1], FS_ROW_NONFINITE);
    assert_int_equal(tok[1], -1);
    assert_true(isnan(val[1]));
    assert_int_equal(st[0], FS_ROW_OK);
    /* a bad temperature on a fused op */
    T[3] = NAN;
    assert_int_equal(fst_sample(ctx, &head, g_hidden, 4, &p, tok, lp, st), FS_ERR_INVALID_ROWS);
    assert_int_equal(st[3], FS_ROW_BAD_TEMPERATURE);
    assert_int_equal(tok[3], -1);
    fs_context_destroy(ctx);
}

/* ---- verify per-request errors --------------------------------------------- */

enum { VV = 23, VMAXR = 6, VMAXD = 3, VMAXROWS = VMAXR * (VMAXD + 1) };

typedef struct vprob {
    int64_t R, maxd, ndt;
    int32_t offsets[VMAXR + 1], drafts[VMAXR * VMAXD + 4];
    float logits[VMAXROWS * VV];
    uint32_t allowed[VMAXROWS];
    float T[VMAXR];
    uint64_t seed[VMAXR], off[VMAXR];
    int use_mask;
} vprob;

typedef struct vrun {
    int32_t tok[VMAXR * (VMAXD + 1)], nem[VMAXR], st[VMAXR];
    float lp[VMAXR * (VMAXD + 1)];
    fs_status s;
    char err[512];
} vrun;

static void vprob_init(vprob *p, uint64_t seed)
{
    fst_rng r;
    fst_rng_seed(&r, seed);
    memset(p, 0, sizeof *p);
    p->R = 5;
    p->maxd = VMAXD;
    int32_t n[5] = {2, 0, 3, 1, 3};
    p->offsets[0] = 0;
    for (int i = 0; i < 5; ++i)
        p->offsets[i + 1] = p->offsets[i] + n[i];
    p->ndt = p->offsets[5];
    for (int i = 0; i < VMAXROWS * VV; ++i)
        p->logits[i] = (float)(fst_normal(&r) * 1.5);
    for (int i = 0; i < VMAXROWS; ++i)
        p->allowed[i] = 0xFFFFFFFFu;
    for (int i = 0; i < p->ndt; ++i)
        p->drafts[i] = (int32_t)fst_randint(&r, VV);
    for (int i = 0; i < VMAXR; ++i) {
        p->T[i] = i == 1 ? 0.0f : 1.0f;
        p->seed[i] = fst_next(&r);
        p->off[i] = (uint64_t)i;
    }
}

static void vprob_without(const vprob *p, int64_t k, vprob *q)
{
    *q = *p;
    q->R = p->R - 1;
    int64_t row_src = 0, row_dst = 0, d_dst = 0;
    q->offsets[0] = 0;
    for (int64_t r = 0, i = 0; r < p->R; ++r) {
        int64_t b = p->offsets[r], n = p->offsets[r + 1] - b;
        if (r != k) {
            memcpy(q->drafts + d_dst, p->drafts + b, sizeof(int32_t) * (size_t)n);
            memcpy(q->logits + row_dst * VV, p->logits + row_src * VV,
                   sizeof(float) * (size_t)((n + 1) * VV));
            memcpy(q->allowed + row_dst, p->allowed + row_src, sizeof(uint32_t) * (size_t)(n + 1));
            q->T[i] = p->T[r];
            q->seed[i] = p->seed[r];
            q->off[i] = p->off[r];
            d_dst += n;
            row_dst += n + 1;
            q->offsets[++i] = (int32_t)d_dst;
        }
        row_src += n + 1;
    }
    q->ndt = d_dst;
}

static void vprob_run(const vprob *p, vrun *o)
{
    fs_context *ctx = fst_cpu_ctx();
    fs_sampling ps = {p->T, p->seed, p->off, NULL, p->use_mask ? p->allowed : NULL};
    fs_drafts d = {p->R, p->ndt, p->maxd, p->drafts, p->offsets};
    memset(o, 0xA5, sizeof *o);
    o->s = fst_verify_logits(ctx, p->logits, FS_DTYPE_F32, VV, &d, &ps, o->tok, o->nem, o->lp,
                             o->st);
    snprintf(o->err, sizeof o->err, "%s", fs_context_last_error(ctx));
    fs_context_destroy(ctx);
}

static void check_bad_request(const vprob *p, int64_t k, int32_t expect, const char *what)
{
    vrun bad, good;
    vprob q;
    vprob_run(p, &bad);
    int64_t stride = p->maxd + 1;
    if (bad.s != FS_ERR_INVALID_ROWS)
        fail_msg("%s (request %lld): %s, expected FS_ERR_INVALID_ROWS", what, (long long)k,
                 fs_status_string(bad.s));
    if (strlen(bad.err) == 0)
        fail_msg("%s: no last-error message", what);
    if (bad.st[k] != expect)
        fail_msg("%s: request %lld status %d (%s), expected %d (%s)", what, (long long)k,
                 bad.st[k], fs_row_status_string(bad.st[k]), expect, fs_row_status_string(expect));
    if (bad.nem[k] != 0)
        fail_msg("%s: bad request emitted %d tokens", what, bad.nem[k]);
    for (int64_t j = 0; j < stride; ++j)
        if (bad.tok[k * stride + j] != -1 || !isnan(bad.lp[k * stride + j]))
            fail_msg("%s: sentinel [%lld] = (%d, %g)", what, (long long)j,
                     bad.tok[k * stride + j], bad.lp[k * stride + j]);
    vprob_without(p, k, &q);
    vprob_run(&q, &good);
    if (good.s != FS_OK)
        fail_msg("%s: the run without request %lld failed: %s", what, (long long)k, good.err);
    for (int64_t i = 0, j = 0; i < p->R; ++i) {
        if (i == k)
            continue;
        if (bad.st[i] != FS_ROW_OK || bad.nem[i] != good.nem[j] ||
            memcmp(bad.tok + i * stride, good.tok + j * stride, sizeof(int32_t) * stride) ||
            memcmp(bad.lp + i * stride, good.lp + j * stride, sizeof(float) * bad.nem[i]))
            fail_msg("%s: request %lld changed by bad request %lld", what, (long long)i,
                     (long long)k);
        ++j;
    }
}

static void test_request_errors_verify(void **state)
{
    (void)state;
    char what[128];
    for (int64_t k = 0; k < 5; ++k) {
        vprob p;
        const float bad_t[] = {-2.0f, NAN, INFINITY, 1e-39f};
        for (int i = 0; i < 4; ++i) {
            vprob_init(&p, 50 + (uint64_t)k);
            p.T[k] = bad_t[i];
            snprintf(what, sizeof what, "verify T = %g", bad_t[i]);
            check_bad_request(&p, k, FS_ROW_BAD_TEMPERATURE, what);
        }
        int64_t b = p.offsets[k], n = p.offsets[k + 1] - b;
        if (n > 0) {
            const int32_t bad_d[] = {-1, VV, INT32_MAX, INT32_MIN};
            for (int i = 0; i < 4; ++i) {
                vprob_init(&p, 60 + (uint64_t)k);
                p.drafts[b + n - 1] = bad_d[i];
                snprintf(what, sizeof what, "verify draft id %d", bad_d[i]);
                check_bad_request(&p, k, FS_ROW_BAD_DRAFT, what);
            }
        }
        /* a NaN / +inf logit on an allowed token of the request's first row */
        vprob_init(&p, 70 + (uint64_t)k);
        p.logits[(b + k) * VV + 4] = NAN;
        check_bad_request(&p, k, FS_ROW_NONFINITE, "verify NaN in first target row");
        vprob_init(&p, 71 + (uint64_t)k);
        p.logits[(b + k) * VV + 9] = INFINITY;
        check_bad_request(&p, k, FS_ROW_NONFINITE, "verify +inf in first target row");
        /* every token of the first row masked */
        vprob_init(&p, 80 + (uint64_t)k);
        p.use_mask = 1;
        p.allowed[b + k] = 0;
        check_bad_request(&p, k, FS_ROW_ALL_MASKED, "verify row all masked");
    }
    /* a request with more drafts than max_drafts: offsets {0,1,4,5} max 2 */
    vprob p;
    vprob_init(&p, 90);
    p.R = 3;
    p.maxd = 2;
    p.offsets[0] = 0;
    p.offsets[1] = 1;
    p.offsets[2] = 4;
    p.offsets[3] = 5;
    p.ndt = 5;
    check_bad_request(&p, 1, FS_ROW_BAD_OFFSETS, "verify n_r > max_drafts");
}

/* Offsets malformed as a whole: not starting at 0, or not ending at
 * num_draft_tokens -- no request can be laid out, all are flagged. */
static void test_offsets_malformed_ends(void **state)
{
    (void)state;
    for (int which = 0; which < 3; ++which) {
        vprob p;
        vprob_init(&p, 95);
        if (which == 0)
            p.offsets[0] = 1;
        else if (which == 1)
            p.ndt -= 1; /* offsets end one past num_draft_tokens */
        else
            p.offsets[p.R] += 1;
        vrun o;
        vprob_run(&p, &o);
        assert_int_equal(o.s, FS_ERR_INVALID_ROWS);
        for (int64_t r = 0; r < p.R; ++r) {
            if (o.st[r] != FS_ROW_BAD_OFFSETS)
                fail_msg("malformed ends %d: request %lld status %d", which, (long long)r,
                         o.st[r]);
            assert_int_equal(o.nem[r], 0);
            for (int64_t j = 0; j <= p.maxd; ++j)
                assert_int_equal(o.tok[r * (p.maxd + 1) + j], -1);
        }
    }
}

/* Offsets not monotone in the middle: {0, 3, 1, 4}.  Request 1 is malformed
 * (end < begin).  Requests 0 and 2 each must be either flagged
 * FS_ROW_BAD_OFFSETS or computed correctly from their own target rows (which
 * here overlap at row 3) -- never a wrong token with FS_ROW_OK. */
static void test_offsets_not_monotone(void **state)
{
    (void)state;
    vprob p;
    vprob_init(&p, 97);
    p.R = 3;
    p.maxd = 3;
    p.offsets[0] = 0;
    p.offsets[1] = 3;
    p.offsets[2] = 1;
    p.offsets[3] = 4;
    p.ndt = 4;
    int32_t x[4] = {2, 5, 8, 11};
    memcpy(p.drafts, x, sizeof x);
    /* request 0 owns rows 0..3 (drafts 2, 5, 8); request 2 owns rows 3..6
       (drafts 5, 8, 11).  Make every draft near-certain in its row, so request
       0 accepts all three drafts and its bonus (row 3) is almost surely 5 --
       the very token request 2 removes from row 3's recovery candidate. */
    for (int row = 0; row < 7; ++row)
        for (int v = 0; v < VV; ++v)
            p.logits[row * VV + v] = 0.0f;
    p.logits[0 * VV + 2] = 25.0f;
    p.logits[1 * VV + 5] = 25.0f;
    p.logits[2 * VV + 8] = 25.0f;
    p.logits[3 * VV + 5] = 25.0f;
    p.logits[4 * VV + 8] = 25.0f;
    p.logits[5 * VV + 11] = 25.0f;
    p.T[0] = p.T[1] = p.T[2] = 1.0f;
    vrun o;
    vprob_run(&p, &o);
    assert_int_equal(o.s, FS_ERR_INVALID_ROWS);
    assert_int_equal(o.st[1], FS_ROW_BAD_OFFSETS);
    /* the oracle, request by request on its own rows */
    double *ref = ref_logits_stored(p.logits, FS_DTYPE_F32, 7, VV);
    fs_sampling ps = {p.T, p.seed, p.off, NULL, NULL};
    fs_drafts d = {p.R, p.ndt, p.maxd, p.drafts, p.offsets};
    int32_t rt[3 * 4], rn[3], rs[3];
    double rl[3 * 4];
    ref_verify(ref, VV, &d, &ps, rt, rn, rl, rs, NULL);
    assert_int_equal(rs[1], FS_ROW_BAD_OFFSETS);
    assert_int_equal(rn[0], 4);
    assert_int_equal(rt[3], 5);
    for (int r = 0; r < 3; r += 2) {
        if (o.st[r] == FS_ROW_BAD_OFFSETS) {
            assert_int_equal(o.nem[r], 0);
            continue;
        }
        if (o.st[r] != FS_ROW_OK || o.nem[r] != rn[r] ||
            memcmp(o.tok + r * 4, rt + r * 4, sizeof(int32_t) * 4) != 0)
            fail_msg("offsets {0,3,1,4}: request %d got status %d, %d emitted [%d %d %d %d]; "
                     "its own rows give %d emitted [%d %d %d %d] (or it must be flagged "
                     "FS_ROW_BAD_OFFSETS)",
                     r, o.st[r], o.nem[r], o.tok[r * 4], o.tok[r * 4 + 1], o.tok[r * 4 + 2],
                     o.tok[r * 4 + 3], rn[r], rt[r * 4], rt[r * 4 + 1], rt[r * 4 + 2],
                     rt[r * 4 + 3]);
    }
    free(ref);
}

/* A non-finite or all-masked target row that the accept/reject walk never
 * reaches (it stops earlier) is still a bad row of its request: the status
 * must not depend on where the random walk happened to stop. */
static void test_verify_bad_row_after_stop(void **state)
{
    (void)state;
    for (int kind = 1; kind >= 0; --kind) {
        vprob p;
        vprob_init(&p, 99);
        int64_t k = 2, b = p.offsets[k], n = p.offsets[k + 1] - b; /* 3 drafts */
        assert_int_equal(n, 3);
        p.use_mask = 1;
        /* draft 0 masked in its row: p(x) = 0, rejected for sure at T = 1 */
        p.T[k] = 1.0f;
        p.allowed[b + k] &= ~(1u << p.drafts[b]);
        if (kind == 0)
            p.logits[(b + k + n) * VV + 6] = NAN; /* the bonus row */
        else
            p.allowed[b + k + 2] = 0; /* the row of draft 2 */
        check_bad_request(&p, k, kind == 0 ? FS_ROW_NONFINITE : FS_ROW_ALL_MASKED,
                          kind == 0 ? "verify NaN in a row after the stop"
                                    : "verify all-masked row after the stop");
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_strings),
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_context_lifetime),
        cmocka_unit_test(test_workspace_queries),
        cmocka_unit_test(test_validation),
        cmocka_unit_test(test_optional_pointers),
        cmocka_unit_test(test_row_errors_sample),
        cmocka_unit_test(test_row_non_errors_sample),
        cmocka_unit_test(test_tiny_temperature),
        cmocka_unit_test(test_row_errors_argmax),
        cmocka_unit_test(test_row_errors_fused),
        cmocka_unit_test(test_request_errors_verify),
        cmocka_unit_test(test_offsets_malformed_ends),
        cmocka_unit_test(test_offsets_not_monotone),
        cmocka_unit_test(test_verify_bad_row_after_stop),
    };
    return cmocka_run_group_tests_name("api", tests, NULL, NULL);
}
