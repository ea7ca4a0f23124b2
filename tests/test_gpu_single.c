/* Sample and draft argmax of 1-4 rows as one launch (the Hopper tile kernel
 * builds its rows' descriptors and ends the op at a grid barrier, no prep
 * kernel; cuda_ops.cu single_launch): the outputs must equal, byte for byte,
 * those of the same op with a prep kernel first (a context created under
 * FLASHSPEC_SINGLE_LAUNCH=0), since both run the same scan over the same
 * records.  Cases cover what the in-kernel prep decides: greedy and sampled
 * rows, a NaN and a denormal temperature (FS_ROW_BAD_TEMPERATURE), a NULL
 * offset array, bias and mask; calls alternate row counts on one workspace
 * (nothing left behind between calls); and the one-launch ops captured in a
 * CUDA graph replay as the direct calls ran.  The agreement with the CPU
 * oracle and the chi-squared suites reach this path through their 1-4-row
 * fused cases (test_gpu_agree, test_gpu_stat). */
#define _POSIX_C_SOURCE 200809L /* setenv */

#include "gpu_util.h"

#ifdef FS_HAVE_CUDA

enum { MAXR = 4 };

typedef struct shape {
    int64_t V, D;
} shape;

/* Device inputs of one shape: head, MAXR hidden rows, parameters. */
typedef struct dev {
    fs_lm_head head;
    void *hidden;
    fs_sampling p, p_no_offset;
    void *ws;
    size_t ws_bytes;
} dev;

typedef struct outs {
    int32_t tok[MAXR], st[MAXR];
    float val[MAXR];
} outs;

static void dev_make(fs_context *ctx, shape s, uint64_t seed, int bad_rows, dev *d)
{
    void *w, *h;
    fst_gen_head(seed, s.V, s.D, MAXR, 3.0, FS_DTYPE_BF16, &w, &h);
    float temp[MAXR] = {0.7f, 0.0f, 1.3f, 0.05f};
    if (bad_rows) {
        temp[1] = NAN;
        temp[3] = 1e-40f; /* denormal: rejected */
    }
    uint64_t sd[MAXR], off[MAXR];
    for (int r = 0; r < MAXR; ++r) {
        sd[r] = seed * 7919u + (uint64_t)r;
        off[r] = 1000u * (uint64_t)r + 3u;
    }
    float *bias = fst_gen_bias(seed + 1, MAXR, s.V);
    uint32_t *allowed = fst_gen_allowed(seed + 2, MAXR, s.V, 0.6);
    memset(d, 0, sizeof *d);
    d->head = (fs_lm_head){gt_dup(w, sizeof(uint16_t) * (size_t)(s.V * s.D)), s.V, s.D,
                           FS_DTYPE_BF16};
    d->hidden = gt_dup(h, sizeof(uint16_t) * (size_t)(MAXR * s.D));
    d->p = (fs_sampling){gt_dup(temp, sizeof temp), gt_dup(sd, sizeof sd),
                         gt_dup(off, sizeof off),
                         gt_dup(bias, sizeof(float) * (size_t)(MAXR * s.V)),
                         gt_dup(allowed, sizeof(uint32_t) * (size_t)(MAXR * fst_mask_words(s.V)))};
    d->p_no_offset = d->p;
    d->p_no_offset.offset = NULL;
    d->p_no_offset.logit_bias = NULL;
    d->p_no_offset.allowed = NULL;
    size_t a = 0, b = 0;
    GT_FS(ctx, fs_sample_workspace_size(ctx, MAXR, s.V, &a));
    GT_FS(ctx, fs_draft_argmax_workspace_size(ctx, MAXR, s.V, &b));
    d->ws_bytes = a > b ? a : b;
    d->ws = gt_dmalloc(d->ws_bytes);
    free(w);
    free(h);
    free(bias);
    free(allowed);
}

static void dev_free(dev *d)
{
    gt_dfree(d->head.weight);
    gt_dfree(d->hidden);
    gt_dfree(d->p.temperature);
    gt_dfree(d->p.seed);
    gt_dfree(d->p.offset);
    gt_dfree(d->p.logit_bias);
    gt_dfree(d->p.allowed);
    gt_dfree(d->ws);
}

/* Device outputs, poisoned before every call. */
typedef struct dout {
    int32_t *tok, *st;
    float *val;
} dout;

static void dout_alloc(dout *o)
{
    o->tok = gt_dmalloc(sizeof(int32_t) * MAXR);
    o->st = gt_dmalloc(sizeof(int32_t) * MAXR);
    o->val = gt_dmalloc(sizeof(float) * MAXR);
}

static void dout_poison(dout *o, cudaStream_t s)
{
    GT_CUDA(cudaMemsetAsync(o->tok, 0xEE, sizeof(int32_t) * MAXR, s));
    GT_CUDA(cudaMemsetAsync(o->st, 0xEE, sizeof(int32_t) * MAXR, s));
    GT_CUDA(cudaMemsetAsync(o->val, 0xEE, sizeof(float) * MAXR, s));
}

static void dout_down(const dout *o, outs *h)
{
    GT_CUDA(cudaDeviceSynchronize());
    gt_down(h->tok, o->tok, sizeof h->tok);
    gt_down(h->st, o->st, sizeof h->st);
    gt_down(h->val, o->val, sizeof h->val);
}

static void dout_free(dout *o)
{
    gt_dfree(o->tok);
    gt_dfree(o->st);
    gt_dfree(o->val);
}

/* op 0: sample (params p), 1: draft argmax. */
static void call(fs_context *ctx, const dev *d, int op, const fs_sampling *p, int64_t rows,
                 const dout *o)
{
    if (op == 0)
        GT_FS(ctx, fs_sample(ctx, &d->head, d->hidden, rows, p, d->ws, d->ws_bytes, o->tok,
                             o->val, o->st));
    else
        GT_FS(ctx, fs_draft_argmax(ctx, &d->head, d->hidden, rows, d->ws, d->ws_bytes, o->tok,
                                   o->val, o->st));
}

static void expect_equal(const outs *a, const outs *b, int64_t rows, const char *what)
{
    if (memcmp(a->tok, b->tok, sizeof(int32_t) * (size_t)rows) ||
        memcmp(a->st, b->st, sizeof(int32_t) * (size_t)rows) ||
        memcmp(a->val, b->val, sizeof(float) * (size_t)rows))
        fail_msg("%s: the one-launch op differs from the prep-kernel path", what);
}

static fs_context *ctx_with_prep(void)
{
    setenv("FLASHSPEC_SINGLE_LAUNCH", "0", 1);
    fs_context *ctx = gt_gpu_ctx();
    unsetenv("FLASHSPEC_SINGLE_LAUNCH");
    return ctx;
}

static void test_single_equals_prep(void **state)
{
    (void)state;
    fs_context *one = gt_gpu_ctx(), *two = ctx_with_prep();
    /* a large vocabulary (132 CTAs, 9 tiles a CTA) and a small one (40 CTAs) */
    const shape shapes[] = {{151936, 256}, {5003, 4096}};
    /* the row counts in an order that leaves a larger op's state behind */
    const int64_t order[] = {4, 1, 3, 2, 4, 1};
    dout o1, o2;
    dout_alloc(&o1);
    dout_alloc(&o2);
    int checked = 0, bad_seen = 0;
    for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; ++si)
        for (int bad = 0; bad <= 1; ++bad) {
            dev d;
            dev_make(one, shapes[si], 100 + 10 * si + (uint64_t)bad, bad, &d);
            for (int op = 0; op <= 1; ++op)
                for (int with_bias = 0; with_bias <= 1; ++with_bias) {
                    if (op == 1 && with_bias)
                        continue;
                    const fs_sampling *p = with_bias ? &d.p : &d.p_no_offset;
                    for (size_t k = 0; k < sizeof order / sizeof order[0]; ++k) {
                        const int64_t rows = order[k];
                        outs a, b;
                        dout_poison(&o1, NULL);
                        dout_poison(&o2, NULL);
                        call(one, &d, op, p, rows, &o1);
                        dout_down(&o1, &a);
                        call(two, &d, op, p, rows, &o2);
                        dout_down(&o2, &b);
                        char what[160];
                        snprintf(what, sizeof what, "%s V=%lld D=%lld rows=%lld%s%s",
                                 op == 0 ? "sample" : "argmax", (long long)shapes[si].V,
                                 (long long)shapes[si].D, (long long)rows,
                                 bad ? " bad temperatures" : "", with_bias ? " bias+mask" : "");
                        expect_equal(&a, &b, rows, what);
                        for (int64_t r = 0; r < rows; ++r) {
                            if (a.st[r] == FS_ROW_BAD_TEMPERATURE) {
                                ++bad_seen;
                                assert_int_equal(a.tok[r], -1);
                            } else {
                                assert_int_equal(a.st[r], FS_ROW_OK);
                                assert_true(a.tok[r] >= 0 && a.tok[r] < shapes[si].V);
                            }
                        }
                        ++checked;
                    }
                }
            dev_free(&d);
        }
    printf("test_gpu_single: %d calls equal on both paths, %d bad-temperature rows\n", checked,
           bad_seen);
    /* rows 1 and 3 of the bad cases: NaN and denormal, sample only */
    assert_true(bad_seen > 0);
    dout_free(&o1);
    dout_free(&o2);
    fs_context_destroy(one);
    fs_context_destroy(two);
}

/* The one-launch ops (a cooperative kernel) captured and replayed. */
static void test_single_graph(void **state)
{
    (void)state;
    fs_context *ctx = gt_gpu_ctx();
    cudaStream_t stream;
    GT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    GT_FS(ctx, fs_context_set_stream(ctx, stream));
    dev d;
    dev_make(ctx, (shape){32003, 512}, 7, 0, &d);
    dout direct[2], replay[2];
    for (int i = 0; i < 2; ++i) {
        dout_alloc(&direct[i]);
        dout_alloc(&replay[i]);
        dout_poison(&direct[i], stream);
    }
    call(ctx, &d, 0, &d.p, 3, &direct[0]);
    call(ctx, &d, 1, &d.p, 1, &direct[1]);
    GT_CUDA(cudaStreamSynchronize(stream));
    outs want[2];
    dout_down(&direct[0], &want[0]);
    dout_down(&direct[1], &want[1]);

    cudaGraph_t graph;
    cudaGraphExec_t exec;
    GT_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    call(ctx, &d, 0, &d.p, 3, &replay[0]);
    call(ctx, &d, 1, &d.p, 1, &replay[1]);
    GT_CUDA(cudaStreamEndCapture(stream, &graph));
    GT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    for (int rep = 0; rep < 3; ++rep) {
        dout_poison(&replay[0], stream);
        dout_poison(&replay[1], stream);
        GT_CUDA(cudaGraphLaunch(exec, stream));
        GT_CUDA(cudaStreamSynchronize(stream));
        outs got[2];
        dout_down(&replay[0], &got[0]);
        dout_down(&replay[1], &got[1]);
        expect_equal(&want[0], &got[0], 3, "sample, graph replay");
        expect_equal(&want[1], &got[1], 1, "argmax, graph replay");
    }
    GT_CUDA(cudaGraphExecDestroy(exec));
    GT_CUDA(cudaGraphDestroy(graph));
    for (int i = 0; i < 2; ++i) {
        dout_free(&direct[i]);
        dout_free(&replay[i]);
    }
    dev_free(&d);
    GT_FS(ctx, fs_context_set_stream(ctx, NULL));
    GT_CUDA(cudaStreamDestroy(stream));
    fs_context_destroy(ctx);
}

int main(void)
{
    GT_SKIP_WITHOUT_GPU("test_gpu_single");
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_single_equals_prep),
                                       cmocka_unit_test(test_single_graph)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else
GT_MAIN_WITHOUT_CUDA("test_gpu_single")
#endif
