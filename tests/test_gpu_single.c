/* Sample, draft argmax and verify as one launch, without prep (the Hopper
 * tile kernel builds its rows' descriptors, scan_prep.cuh, and ends the op
 * after a grid barrier: CTA 0 up to tail_rows_max rows, every CTA past it;
 * cuda_ops.cu single_launch): the outputs must equal, byte for byte, those
 * of the same op with prep, merge and finalize kernels (a context created
 * under FLASHSPEC_SINGLE_LAUNCH=0), since both run the same scan and merge
 * the same records in the same order.  Cases cover what the in-kernel prep
 * decides: greedy and sampled rows, a NaN and a denormal temperature
 * (FS_ROW_BAD_TEMPERATURE), rows whose scan fails (a NaN bias on an allowed
 * token: FS_ROW_NONFINITE, verify requests' later rows too), a NULL offset
 * array, bias and mask, 1 to 160
 * rows (the tile kernel's, main pins it; its epilogue warps from 97
 * rows, on an H200 from 33 at these hidden sizes) in an order that leaves
 * a larger op's state behind on one
 * workspace; verify with drafts that the target accepts
 * (chains walked to the bonus row), ragged requests, none with drafts, a
 * draft outside the vocabulary, a request past max_drafts and a malformed
 * layout; and the one-launch ops captured in a CUDA graph replay as the
 * direct calls ran.  The agreement with the CPU oracle and the chi-squared
 * suites reach this path through their fused cases of up to 96 rows
 * (test_gpu_agree, test_gpu_stat; test_gpu_agree_tile160 up to 160).  Run
 * with FLASHSPEC_TAIL_ROWS_MAX=1000 (test_gpu_single_tail), CTA 0 ends
 * every one-launch op and the last CTA every op of the other path. */
#define _POSIX_C_SOURCE 200809L /* setenv */

#include "gpu_util.h"

#ifdef FS_HAVE_CUDA

/* rows of the tile kernel (FS_HOPPER_TILE_MAX_ROWS; main pins it); verify
   requests of at most MAXD drafts */
enum { MAXR = 160, MAXD = 7, MAXT = MAXR * (MAXD + 1) };

typedef struct shape {
    int64_t V, D;
} shape;

/* Device inputs of one shape: head, MAXR hidden rows, per-request
   parameters (MAXR requests at most). */
typedef struct dev {
    int64_t V;
    fs_lm_head head;
    void *hidden;
    fs_sampling p, p_no_offset;
    void *ws;
    size_t ws_bytes;
} dev;

/* Host copies of an op's outputs. */
typedef struct outs {
    int32_t tok[MAXT], st[MAXR], nem[MAXR];
    float val[MAXT];
} outs;

/* Device outputs, poisoned before every call. */
typedef struct dout {
    int32_t *tok, *st, *nem;
    float *val;
} dout;

/* request r's temperature: greedy, sampled at 0.05 to 1.3; with bad, a NaN
   (r % 8 == 1) and a denormal (r % 8 == 5) among them */
static float temp_of(int64_t r, int bad)
{
    static const float t[4] = {0.7f, 0.0f, 1.3f, 0.05f};
    if (bad && r % 8 == 1)
        return NAN;
    if (bad && r % 8 == 5)
        return 1e-40f;
    return t[r % 4];
}

static void dev_make(fs_context *ctx, shape s, uint64_t seed, int bad, dev *d)
{
    void *w, *h;
    fst_gen_head(seed, s.V, s.D, MAXR, 3.0, FS_DTYPE_BF16, &w, &h);
    float temp[MAXR];
    uint64_t sd[MAXR], off[MAXR];
    for (int r = 0; r < MAXR; ++r) {
        temp[r] = temp_of(r, bad);
        sd[r] = seed * 7919u + (uint64_t)r;
        off[r] = 1000u * (uint64_t)r + 3u;
    }
    float *bias = fst_gen_bias(seed + 1, MAXR, s.V);
    uint32_t *allowed = fst_gen_allowed(seed + 2, MAXR, s.V, 0.6);
    if (bad) /* rows that fail in the scan (FS_ROW_NONFINITE): a NaN on an
                allowed token, in a verify request's later rows too */
        for (int64_t r = 9; r < MAXR; r += 21) {
            const int64_t tok = (r * 7919) % s.V;
            bias[r * s.V + tok] = NAN;
            allowed[r * fst_mask_words(s.V) + tok / 32] = 0xffffffffu;
        }
    memset(d, 0, sizeof *d);
    d->V = s.V;
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
    size_t a = 0, b = 0, c = 0;
    GT_FS(ctx, fs_sample_workspace_size(ctx, MAXR, s.V, &a));
    GT_FS(ctx, fs_draft_argmax_workspace_size(ctx, MAXR, s.V, &b));
    GT_FS(ctx, fs_verify_workspace_size(ctx, MAXR, MAXR - 1, s.V, &c));
    d->ws_bytes = a > b ? a : b;
    d->ws_bytes = d->ws_bytes > c ? d->ws_bytes : c;
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

static void dout_poison(dout *o, cudaStream_t s)
{
    GT_CUDA(cudaMemsetAsync(o->tok, 0xEE, sizeof(int32_t) * MAXT, s));
    GT_CUDA(cudaMemsetAsync(o->st, 0xEE, sizeof(int32_t) * MAXR, s));
    GT_CUDA(cudaMemsetAsync(o->nem, 0xEE, sizeof(int32_t) * MAXR, s));
    GT_CUDA(cudaMemsetAsync(o->val, 0xEE, sizeof(float) * MAXT, s));
}

/* poisoned: whatever an op leaves unwritten is compared (and read back) */
static void dout_alloc(dout *o)
{
    o->tok = gt_dmalloc(sizeof(int32_t) * MAXT);
    o->st = gt_dmalloc(sizeof(int32_t) * MAXR);
    o->nem = gt_dmalloc(sizeof(int32_t) * MAXR);
    o->val = gt_dmalloc(sizeof(float) * MAXT);
    dout_poison(o, NULL);
    GT_CUDA(cudaDeviceSynchronize());
}

static void dout_down(const dout *o, outs *h)
{
    GT_CUDA(cudaDeviceSynchronize());
    gt_down(h->tok, o->tok, sizeof h->tok);
    gt_down(h->st, o->st, sizeof h->st);
    gt_down(h->nem, o->nem, sizeof h->nem);
    gt_down(h->val, o->val, sizeof h->val);
}

static void dout_free(dout *o)
{
    gt_dfree(o->tok);
    gt_dfree(o->st);
    gt_dfree(o->nem);
    gt_dfree(o->val);
}

/* An op of the test: sample / argmax of `rows` rows, or verify of `dr`
   (device draft arrays). */
typedef struct op_call {
    int op; /* enum gt_op */
    int64_t rows;
    const fs_sampling *p;
    const fs_drafts *dr;
} op_call;

static void call(fs_context *ctx, const dev *d, const op_call *c, const dout *o)
{
    if (c->op == GT_SAMPLE)
        GT_FS(ctx, fs_sample(ctx, &d->head, d->hidden, c->rows, c->p, d->ws, d->ws_bytes, o->tok,
                             o->val, o->st));
    else if (c->op == GT_ARGMAX)
        GT_FS(ctx, fs_draft_argmax(ctx, &d->head, d->hidden, c->rows, d->ws, d->ws_bytes, o->tok,
                                   o->val, o->st));
    else
        GT_FS(ctx, fs_verify(ctx, &d->head, d->hidden, c->dr, c->p, d->ws, d->ws_bytes, o->tok,
                             o->nem, o->val, o->st));
}

/* Byte-equal outputs; the number of requests (rows) and tokens compared. */
static void expect_equal(const outs *a, const outs *b, const op_call *c, const char *what)
{
    const int64_t req = c->op == GT_VERIFY ? c->dr->num_requests : c->rows;
    const int64_t ntok = c->op == GT_VERIFY ? req * (c->dr->max_drafts + 1) : req;
    if (memcmp(a->tok, b->tok, sizeof(int32_t) * (size_t)ntok) ||
        memcmp(a->val, b->val, sizeof(float) * (size_t)ntok) ||
        memcmp(a->st, b->st, sizeof(int32_t) * (size_t)req) ||
        (c->op == GT_VERIFY && memcmp(a->nem, b->nem, sizeof(int32_t) * (size_t)req)))
        fail_msg("%s: the one-launch op differs from the prep-kernel path", what);
}

static fs_context *ctx_with_prep(void)
{
    setenv("FLASHSPEC_SINGLE_LAUNCH", "0", 1);
    fs_context *ctx = gt_gpu_ctx();
    unsetenv("FLASHSPEC_SINGLE_LAUNCH");
    return ctx;
}

/* Verify layouts: drafts per request (-1 ends the list); fault: 0 none, 1 a
   draft of request 1 outside the vocabulary, 2 request 1 past max_drafts, 3
   a malformed layout (offsets not monotone). */
typedef struct vcase {
    int n[24];
    int64_t max_drafts;
    int fault;
} vcase;

static const vcase kVerify[] = {
    {{4, -1}, 4, 0},                      /* one request: 5 rows */
    {{0, 2, 7, -1}, 7, 0},                /* ragged: 12 rows */
    {{0, 0, -1}, 4, 0},                   /* no drafts: 2 rows (CTA 0 ends the op) */
    {{3, -1}, 3, 0},                      /* 4 rows */
    {{4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, -1}, 4, 0}, /* 80 rows */
    {{5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, -1}, 5, 0}, /* 88 rows */
    /* the epilogue warps' row blocks (80 and 88 rows above too on an
       H200): 104 rows (128), 160 rows */
    {{6, 5, 6, 5, 6, 5, 6, 5, 6, 5, 6, 5, 6, 5, 6, 5, -1}, 6, 0},
    {{7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, -1}, 7, 0},
    {{7, 2, 7, 3, 7, 7, 2, 7, 7, 7, 7, 1, 7, 7, 7, 7, 7, 7, 4, 7, -1}, 7, 1}, /* 137 rows */
    {{4, 4, 4, 4, -1}, 4, 1},
    {{4, 4, 1, -1}, 4, 2}, /* request 1 with 5: 10 drafts, within R x max_drafts */
    {{2, 3, 1, -1}, 4, 3},
};

/* Device drafts of case vc: each request's drafts are the target rows'
   argmax (argmax[row], on the rows that follow them), so greedy requests
   accept every draft and sampled ones accept with p(x). */
static void verify_make(const vcase *vc, const int32_t *argmax, int64_t V, fs_drafts *dr)
{
    int32_t off[MAXR + 1], drafts[MAXR];
    int64_t R = 0, nd = 0;
    off[0] = 0;
    for (; vc->n[R] >= 0; ++R) {
        int n = vc->n[R];
        if (vc->fault == 2 && R == 1)
            n = (int)vc->max_drafts + 1;
        for (int j = 0; j < n; ++j)
            drafts[nd + j] = argmax[nd + R + j];
        if (vc->fault == 1 && R == 1 && n > 0)
            drafts[nd] = (int32_t)V;
        nd += n;
        off[R + 1] = (int32_t)nd;
    }
    if (vc->fault == 3 && R >= 3) { /* same total, not monotone */
        off[2] = off[1] - 1;
    }
    *dr = (fs_drafts){R, nd, vc->max_drafts, gt_dup(drafts, sizeof(int32_t) * (size_t)(nd ? nd : 1)),
                      gt_dup(off, sizeof(int32_t) * (size_t)(R + 1))};
}

static void test_single_equals_prep(void **state)
{
    (void)state;
    fs_context *one = gt_gpu_ctx(), *two = ctx_with_prep();
    /* a large vocabulary (132 CTAs, 9 tiles a CTA) and a small one (40 CTAs);
       smaller under the sanitizers (FS_GPU_TEST_SMALL) */
    const shape full[] = {{151936, 256}, {5003, 4096}}, small[] = {{20011, 64}, {5003, 136}};
    const shape *shapes = gt_small_mode() ? small : full;
    const size_t n_shapes = 2;
    /* row counts in an order that leaves a larger op's state behind: CTA 0
       ends the op up to tail_rows_max rows (4, 8 on an H200), every CTA past
       it -- both sides of either bound */
    const int64_t order[] = {4, 1, 160, 96, 3, 17, 129, 64, 5, 112, 2, 8, 9};
    dout o1, o2;
    dout_alloc(&o1);
    dout_alloc(&o2);
    int checked = 0, bad_seen = 0, accepted = 0, verify_bad = 0, verify_nonfinite = 0;
    for (size_t si = 0; si < n_shapes; ++si)
        for (int bad = 0; bad <= 1; ++bad) {
            dev d;
            dev_make(one, shapes[si], 100 + 10 * si + (uint64_t)bad, bad, &d);
            /* the target rows' argmax, the verify cases' drafts */
            int32_t argmax[MAXR];
            {
                const op_call c = {GT_ARGMAX, MAXR, NULL, NULL};
                outs h;
                call(two, &d, &c, &o2);
                dout_down(&o2, &h);
                memcpy(argmax, h.tok, sizeof argmax);
            }
            for (int with_bias = 0; with_bias <= 1; ++with_bias) {
                const fs_sampling *p = with_bias ? &d.p : &d.p_no_offset;
                enum { NO = sizeof order / sizeof order[0], NV = sizeof kVerify / sizeof kVerify[0] };
                op_call calls[2 * NO + NV];
                fs_drafts drs[NV];
                int nc = 0;
                for (int op = GT_SAMPLE; op <= GT_ARGMAX; ++op)
                    for (size_t k = 0; k < sizeof order / sizeof order[0]; ++k)
                        if (!(op == GT_ARGMAX && with_bias))
                            calls[nc++] = (op_call){op, order[k], p, NULL};
                for (size_t k = 0; k < sizeof kVerify / sizeof kVerify[0]; ++k) {
                    verify_make(&kVerify[k], argmax, d.V, &drs[k]);
                    calls[nc++] = (op_call){GT_VERIFY, drs[k].num_draft_tokens + drs[k].num_requests,
                                            p, &drs[k]};
                }
                for (int k = 0; k < nc; ++k) {
                    const op_call *c = &calls[k];
                    outs a, b;
                    dout_poison(&o1, NULL);
                    dout_poison(&o2, NULL);
                    call(one, &d, c, &o1);
                    dout_down(&o1, &a);
                    call(two, &d, c, &o2);
                    dout_down(&o2, &b);
                    char what[200];
                    snprintf(what, sizeof what, "%s V=%lld D=%lld rows=%lld%s%s",
                             gt_op_name(c->op), (long long)shapes[si].V,
                             (long long)shapes[si].D, (long long)c->rows,
                             bad ? " bad temperatures" : "", with_bias ? " bias+mask" : "");
                    expect_equal(&a, &b, c, what);
                    const int64_t req = c->op == GT_VERIFY ? c->dr->num_requests : c->rows;
                    for (int64_t r = 0; r < req; ++r) {
                        if (a.st[r] == FS_ROW_BAD_TEMPERATURE) {
                            ++bad_seen;
                        } else if (a.st[r] != FS_ROW_OK) {
                            ++verify_bad;
                            if (c->op == GT_VERIFY && a.st[r] == FS_ROW_NONFINITE)
                                ++verify_nonfinite;
                        } else if (c->op == GT_VERIFY && a.nem[r] > 1) {
                            accepted += a.nem[r] - 1;
                        }
                    }
                    ++checked;
                }
                for (size_t k = 0; k < sizeof kVerify / sizeof kVerify[0]; ++k) {
                    gt_dfree(drs[k].draft_tokens);
                    gt_dfree(drs[k].draft_offsets);
                }
            }
            dev_free(&d);
        }
    printf("test_gpu_single: %d calls equal on both paths; %d bad-temperature requests, %d "
           "other bad requests (%d verify requests with a non-finite row), %d drafts "
           "accepted\n",
           checked, bad_seen, verify_bad, verify_nonfinite, accepted);
    /* the cases must reach what they are for: bad temperatures, the verify
       faults, rows failing in the scan, chains walked past their first draft */
    assert_true(bad_seen > 0);
    assert_true(verify_bad > 0);
    assert_true(verify_nonfinite > 0);
    assert_true(accepted > 0);
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
    int32_t argmax[MAXR];
    for (int i = 0; i < MAXR; ++i)
        argmax[i] = (i * 7919) % 32003;
    fs_drafts dr;
    verify_make(&kVerify[1], argmax, d.V, &dr);
    const op_call calls[4] = {{GT_SAMPLE, 3, &d.p, NULL},
                              {GT_ARGMAX, 1, &d.p, NULL},
                              {GT_SAMPLE, 40, &d.p, NULL},
                              {GT_VERIFY, dr.num_draft_tokens + dr.num_requests, &d.p, &dr}};
    dout direct[4], replay[4];
    outs want[4];
    for (int i = 0; i < 4; ++i) {
        dout_alloc(&direct[i]);
        dout_alloc(&replay[i]);
        dout_poison(&direct[i], stream);
    }
    for (int i = 0; i < 4; ++i)
        call(ctx, &d, &calls[i], &direct[i]);
    GT_CUDA(cudaStreamSynchronize(stream));
    for (int i = 0; i < 4; ++i)
        dout_down(&direct[i], &want[i]);

    cudaGraph_t graph;
    cudaGraphExec_t exec;
    GT_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < 4; ++i)
        call(ctx, &d, &calls[i], &replay[i]);
    GT_CUDA(cudaStreamEndCapture(stream, &graph));
    GT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    for (int rep = 0; rep < 3; ++rep) {
        for (int i = 0; i < 4; ++i)
            dout_poison(&replay[i], stream);
        GT_CUDA(cudaGraphLaunch(exec, stream));
        GT_CUDA(cudaStreamSynchronize(stream));
        for (int i = 0; i < 4; ++i) {
            outs got;
            dout_down(&replay[i], &got);
            expect_equal(&want[i], &got, &calls[i], "graph replay");
        }
    }
    GT_CUDA(cudaGraphExecDestroy(exec));
    GT_CUDA(cudaGraphDestroy(graph));
    for (int i = 0; i < 4; ++i) {
        dout_free(&direct[i]);
        dout_free(&replay[i]);
    }
    gt_dfree(dr.draft_tokens);
    gt_dfree(dr.draft_offsets);
    dev_free(&d);
    GT_FS(ctx, fs_context_set_stream(ctx, NULL));
    GT_CUDA(cudaStreamDestroy(stream));
    fs_context_destroy(ctx);
}

int main(void)
{
    GT_SKIP_WITHOUT_GPU("test_gpu_single");
    /* the tile kernel, which alone runs ops as one launch, at every row
       count here: by default the rows kernel takes some of them by op, chip
       and shape (fs_hopper_kernel_for) */
    setenv("FLASHSPEC_HOPPER_ROWS_MIN", "161", 1);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_single_equals_prep),
                                       cmocka_unit_test(test_single_graph)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else
GT_MAIN_WITHOUT_CUDA("test_gpu_single")
#endif
