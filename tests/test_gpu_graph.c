/* CUDA graph capture: fs_sample, fs_verify and fs_sample_logits enqueued on a
 * stream under global-mode capture (which rejects any synchronising or
 * allocating call), replayed, and compared bit for bit with direct calls;
 * then the per-request seeds are changed in place and the replay follows
 * them, as a decode loop's graph would. */
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

/* The three ops of one decode step. */
typedef struct step {
    fs_lm_head head;
    const void *hidden, *logits;
    fs_sampling p;
    fs_drafts d;
    void *ws;
    size_t ws_bytes;
} step;

static void enqueue(fs_context *ctx, const step *s, bufs *o_sample, bufs *o_verify, bufs *o_logits)
{
    GT_FS(ctx, fs_sample(ctx, &s->head, s->hidden, ROWS, &s->p, s->ws, s->ws_bytes, o_sample->tok,
                         o_sample->val, o_sample->st));
    GT_FS(ctx, fs_verify(ctx, &s->head, s->hidden, &s->d, &s->p, s->ws, s->ws_bytes,
                         o_verify->tok, o_verify->nem, o_verify->val, o_verify->st));
    GT_FS(ctx, fs_sample_logits(ctx, s->logits, FS_DTYPE_F32, ROWS, V, &s->p, s->ws,
                                s->ws_bytes, o_logits->tok, o_logits->val, o_logits->st));
}

static void test_graph_capture(void **state)
{
    (void)state;
    fs_context *ctx = gt_gpu_ctx();
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
    GT_CUDA(cudaStreamSynchronize(stream));

    /* direct */
    enqueue(ctx, &s, &direct[0], &direct[1], &direct[2]);
    GT_CUDA(cudaStreamSynchronize(stream));

    /* capture */
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    GT_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    enqueue(ctx, &s, &replay[0], &replay[1], &replay[2]);
    GT_CUDA(cudaStreamEndCapture(stream, &graph));
    GT_CUDA(cudaGraphInstantiate(&exec, graph, 0));
    size_t nodes = 0;
    GT_CUDA(cudaGraphGetNodes(graph, NULL, &nodes));
    printf("captured graph: %zu nodes for sample + verify + sample_logits\n", nodes);
    assert_true(nodes > 0);

    for (int rep = 0; rep < 3; ++rep) {
        for (int i = 0; i < 3; ++i)
            bufs_poison(&replay[i], stream);
        GT_CUDA(cudaGraphLaunch(exec, stream));
        GT_CUDA(cudaStreamSynchronize(stream));
        bufs_expect_equal(&direct[0], &replay[0], "sample");
        bufs_expect_equal(&direct[1], &replay[1], "verify");
        bufs_expect_equal(&direct[2], &replay[2], "sample_logits");
    }

    /* new seeds in place: the replay follows the device arrays */
    GT_CUDA(cudaMemcpy(d_seed, seed2, sizeof seed2, cudaMemcpyHostToDevice));
    for (int i = 0; i < 3; ++i)
        bufs_poison(&replay[i], stream);
    GT_CUDA(cudaGraphLaunch(exec, stream));
    enqueue(ctx, &s, &direct[0], &direct[1], &direct[2]);
    GT_CUDA(cudaStreamSynchronize(stream));
    bufs_expect_equal(&direct[0], &replay[0], "sample, new seeds");
    bufs_expect_equal(&direct[1], &replay[1], "verify, new seeds");
    bufs_expect_equal(&direct[2], &replay[2], "sample_logits, new seeds");

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

int main(void)
{
    GT_SKIP_WITHOUT_GPU("test_gpu_graph");
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_graph_capture)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else
GT_MAIN_WITHOUT_CUDA("test_gpu_graph")
#endif
