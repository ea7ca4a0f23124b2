/* CUDA graph capture: fs_sample, fs_verify and fs_sample_logits enqueued on a
 * stream under global-mode capture (which rejects any synchronising or
 * allocating call), replayed, and compared bit for bit with direct calls;
 * then the per-request seeds are changed in place and the replay follows
 * them, as a decode loop's graph would.  Again with top-k / top-p / min-p
 * (the filtered merge is a cooperative, programmatic launch that runs the
 * second pass when a row needs it), also with every filtered row forced
 * into the second pass: tokens, statuses, logprobs and second-pass counts. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "gpu_util.h"

#ifdef FS_HAVE_CUDA

enum { V = 5003, D = 256, ROWS = 33, R = 8, MAXD = 3 };

typedef struct bufs {
    int32_t *tok, *st, *nem;
    float *val;
} bufs;

static void bufs_alloc(bufs *b)
{
    b->tok = gt_dmalloc(sizeof(int32_t) * 64);
    b->st = gt_dmalloc(sizeof(int32_t) * 64);
    b->nem = gt_dmalloc(sizeof(int32_t) * 64);
    b->val = gt_dmalloc(sizeof(float) * 64);
}

static void bufs_poison(bufs *b, cudaStream_t s)
{
    GT_CUDA(cudaMemsetAsync(b->tok, 0xEE, sizeof(int32_t) * 64, s));
    GT_CUDA(cudaMemsetAsync(b->st, 0xEE, sizeof(int32_t) * 64, s));
    GT_CUDA(cudaMemsetAsync(b->nem, 0xEE, sizeof(int32_t) * 64, s));
    GT_CUDA(cudaMemsetAsync(b->val, 0xEE, sizeof(float) * 64, s));
}

static void bufs_free(bufs *b)
{
    gt_dfree(b->tok);
    gt_dfree(b->st);
    gt_dfree(b->nem);
    gt_dfree(b->val);
}

/* Byte-equal outputs (NaN logprobs included). */
static void bufs_expect_equal(const bufs *a, const bufs *b, const char *what)
{
    unsigned char ha[256], hb[256];
    const void *pa[4] = {a->tok, a->st, a->nem, a->val}, *pb[4] = {b->tok, b->st, b->nem, b->val};
    for (int i = 0; i < 4; ++i) {
        gt_down(ha, pa[i], sizeof ha);
        gt_down(hb, pb[i], sizeof hb);
        if (memcmp(ha, hb, sizeof ha) != 0)
            fail_msg("%s: replayed output %d differs from the direct call", what, i);
    }
}

/* verify's second-pass counts, equal between the direct call and the
 * replay; forced (every filtered row handed over): some request counts any. */
static void fb_expect_equal(const int32_t *d_direct, const int32_t *d_replay, int forced)
{
    int32_t a[R], b[R];
    gt_down(a, d_direct, sizeof a);
    gt_down(b, d_replay, sizeof b);
    int any = 0;
    for (int r = 0; r < R; ++r) {
        if (a[r] != b[r])
            fail_msg("verify: request %d: %d second-pass rows replayed, %d direct", r, b[r], a[r]);
        if (a[r] < 0 || a[r] > MAXD + 1)
            fail_msg("verify: request %d: %d second-pass rows", r, a[r]);
        any |= a[r] > 0;
    }
    if (forced && !any)
        fail_msg("verify: the forced second pass counted no row");
}

/* The three ops of one decode step. */
typedef struct step {
    fs_lm_head head;
    const void *hidden, *logits;
    fs_sampling p;
    fs_drafts d;
    void *ws;
    size_t ws_bytes;
} step;

/* With filters, each op's second-pass counts go to its own buffer's nem
 * (verify's nem holds its emitted counts, so its counts go to fb). */
static void enqueue(fs_context *ctx, const step *s, bufs *o_sample, bufs *o_verify, bufs *o_logits,
                    int32_t *verify_fb)
{
    fs_sampling p = s->p;
    if (p.top_k)
        p.out_filter_fallback = o_sample->nem;
    GT_FS(ctx, fs_sample(ctx, &s->head, s->hidden, ROWS, &p, s->ws, s->ws_bytes, o_sample->tok,
                         o_sample->val, o_sample->st));
    if (p.top_k)
        p.out_filter_fallback = verify_fb;
    GT_FS(ctx, fs_verify(ctx, &s->head, s->hidden, &s->d, &p, s->ws, s->ws_bytes,
                         o_verify->tok, o_verify->nem, o_verify->val, o_verify->st));
    if (p.top_k)
        p.out_filter_fallback = o_logits->nem;
    GT_FS(ctx, fs_sample_logits(ctx, s->logits, FS_DTYPE_F32, ROWS, V, &p, s->ws,
                                s->ws_bytes, o_logits->tok, o_logits->val, o_logits->st));
}

/* filters: 0 none, 1 top-k / top-p / min-p per request, 2 the same with
 * every filtered row forced into the second pass. */
static void run_graph_capture(int filters)
{
    if (filters == 2)
        setenv("FLASHSPEC_FILTER_SECOND_PASS", "1", 1);
    fs_context *ctx = gt_gpu_ctx();
    unsetenv("FLASHSPEC_FILTER_SECOND_PASS");
    cudaStream_t stream;
    GT_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    GT_FS(ctx, fs_context_set_stream(ctx, stream));

    void *w, *h;
    fst_gen_head(31337, V, D, ROWS, 3.0, FS_DTYPE_BF16, &w, &h);
    float *logits = fst_gen_logits(31338, ROWS, V, 3.0);
    float temp[ROWS];
    uint64_t seed[ROWS], seed2[ROWS], off[ROWS];
    for (int r = 0; r < ROWS; ++r) {
        temp[r] = r % 3 == 0 ? 0.0f : 0.6f + 0.1f * (float)(r % 5);
        seed[r] = 500 + (uint64_t)r;
        seed2[r] = 90000 + 3 * (uint64_t)r;
        off[r] = (uint64_t)r * 11u;
    }
    float *bias = fst_gen_bias(7, ROWS, V);
    uint32_t *allowed = fst_gen_allowed(8, ROWS, V, 0.7);
    /* verify: 8 requests, 0..3 drafts each, 8 + 17 = 25 of the 33 rows */
    int32_t offsets[R + 1] = {0, 3, 3, 5, 8, 9, 12, 14, 17};
    int32_t drafts[17];
    for (int i = 0; i < 17; ++i)
        drafts[i] = (i * 613) % V;

    step s;
    memset(&s, 0, sizeof s);
    s.head = (fs_lm_head){gt_dup(w, sizeof(uint16_t) * V * D), V, D, FS_DTYPE_BF16};
    s.hidden = gt_dup(h, sizeof(uint16_t) * ROWS * D);
    s.logits = gt_dup(logits, sizeof(float) * ROWS * V);
    uint64_t *d_seed = gt_dup(seed, sizeof seed);
    s.p = (fs_sampling){gt_dup(temp, sizeof temp), d_seed, gt_dup(off, sizeof off),
                        gt_dup(bias, sizeof(float) * ROWS * V),
                        gt_dup(allowed, sizeof(uint32_t) * ROWS * (size_t)fst_mask_words(V))};
    s.d = (fs_drafts){R, 17, MAXD, gt_dup(drafts, sizeof drafts), gt_dup(offsets, sizeof offsets)};
    if (filters) {
        /* per request: k 0 / 1 / 20 / 300, top-p 1 / 0.9 / 0.5, min-p 0 /
           0.05 -- nuclei of a few to hundreds of tokens */
        int32_t k[ROWS];
        float tp[ROWS], mp[ROWS];
        for (int r = 0; r < ROWS; ++r) {
            static const int32_t K[4] = {0, 1, 20, 300};
            static const float P[3] = {1.0f, 0.9f, 0.5f};
            k[r] = K[r % 4];
            tp[r] = P[r % 3];
            mp[r] = r % 5 == 0 ? 0.05f : 0.0f;
        }
        s.p.top_k = gt_dup(k, sizeof k);
        s.p.top_p = gt_dup(tp, sizeof tp);
        s.p.min_p = gt_dup(mp, sizeof mp);
    }
    size_t a = 0, b = 0;
    GT_FS(ctx, fs_sample_workspace_size(ctx, ROWS, V, &a));
    GT_FS(ctx, fs_verify_workspace_size(ctx, R, 17, V, &b));
    s.ws_bytes = a > b ? a : b;
    s.ws = gt_dmalloc(s.ws_bytes);

    bufs direct[3], replay[3];
    for (int i = 0; i < 3; ++i) {
        bufs_alloc(&direct[i]);
        bufs_alloc(&replay[i]);
        bufs_poison(&direct[i], stream);
        bufs_poison(&replay[i], stream);
    }
    int32_t *fb_direct = gt_dmalloc(sizeof(int32_t) * R), *fb_replay = gt_dmalloc(sizeof(int32_t) * R);
    GT_CUDA(cudaMemsetAsync(fb_direct, 0xEE, sizeof(int32_t) * R, stream));
    GT_CUDA(cudaStreamSynchronize(stream));

    /* direct */
    enqueue(ctx, &s, &direct[0], &direct[1], &direct[2], fb_direct);
    GT_CUDA(cudaStreamSynchronize(stream));

    /* capture */
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    GT_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    enqueue(ctx, &s, &replay[0], &replay[1], &replay[2], fb_replay);
    GT_CUDA(cudaStreamEndCapture(stream, &graph));
    GT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    size_t nodes = 0;
    GT_CUDA(cudaGraphGetNodes(graph, NULL, &nodes));
    printf("captured graph (%s): %zu nodes for sample + verify + sample_logits\n",
           filters == 0 ? "no filters" : filters == 1 ? "filters" : "filters, second pass forced",
           nodes);
    assert_true(nodes > 0);

    for (int rep = 0; rep < 3; ++rep) {
        for (int i = 0; i < 3; ++i)
            bufs_poison(&replay[i], stream);
        GT_CUDA(cudaMemsetAsync(fb_replay, 0xEE, sizeof(int32_t) * R, stream));
        GT_CUDA(cudaGraphLaunch(exec, stream));
        GT_CUDA(cudaStreamSynchronize(stream));
        bufs_expect_equal(&direct[0], &replay[0], "sample");
        bufs_expect_equal(&direct[1], &replay[1], "verify");
        bufs_expect_equal(&direct[2], &replay[2], "sample_logits");
        if (filters)
            fb_expect_equal(fb_direct, fb_replay, filters == 2 ? 1 : 0);
    }

    /* new seeds in place: the replay follows the device arrays */
    GT_CUDA(cudaMemcpy(d_seed, seed2, sizeof seed2, cudaMemcpyHostToDevice));
    for (int i = 0; i < 3; ++i)
        bufs_poison(&replay[i], stream);
    GT_CUDA(cudaGraphLaunch(exec, stream));
    enqueue(ctx, &s, &direct[0], &direct[1], &direct[2], fb_direct);
    GT_CUDA(cudaStreamSynchronize(stream));
    bufs_expect_equal(&direct[0], &replay[0], "sample, new seeds");
    bufs_expect_equal(&direct[1], &replay[1], "verify, new seeds");
    bufs_expect_equal(&direct[2], &replay[2], "sample_logits, new seeds");
    if (filters)
        fb_expect_equal(fb_direct, fb_replay, filters == 2 ? 1 : 0);
    gt_dfree(fb_direct);
    gt_dfree(fb_replay);
    gt_dfree((void *)s.p.top_k);
    gt_dfree((void *)s.p.top_p);
    gt_dfree((void *)s.p.min_p);

    GT_CUDA(cudaGraphExecDestroy(exec));
    GT_CUDA(cudaGraphDestroy(graph));
    for (int i = 0; i < 3; ++i) {
        bufs_free(&direct[i]);
        bufs_free(&replay[i]);
    }
    gt_dfree(s.head.weight);
    gt_dfree(s.hidden);
    gt_dfree(s.logits);
    gt_dfree(s.p.temperature);
    gt_dfree(s.p.seed);
    gt_dfree(s.p.offset);
    gt_dfree(s.p.logit_bias);
    gt_dfree(s.p.allowed);
    gt_dfree(s.d.draft_tokens);
    gt_dfree(s.d.draft_offsets);
    gt_dfree(s.ws);
    GT_FS(ctx, fs_context_set_stream(ctx, NULL));
    GT_CUDA(cudaStreamDestroy(stream));
    fs_context_destroy(ctx);
    free(w);
    free(h);
    free(logits);
    free(bias);
    free(allowed);
}

static void test_graph_capture(void **state)
{
    (void)state;
    run_graph_capture(0);
}

static void test_graph_capture_filters(void **state)
{
    (void)state;
    run_graph_capture(1);
    run_graph_capture(2);
}

int main(void)
{
    GT_SKIP_WITHOUT_GPU("test_gpu_graph");
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_graph_capture),
                                       cmocka_unit_test(test_graph_capture_filters)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else
GT_MAIN_WITHOUT_CUDA("test_gpu_graph")
#endif
