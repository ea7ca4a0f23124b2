/* Tree verify on the GPU against the matmul and the materialised pipeline.
 *
 * For each LM-head shape, tree size (nodes per request) and request count,
 * in one process with the methods alternated in rounds (L2 flushed before
 * every call, CUDA events), on peaked logits (filter_inputs.cu):
 *   cublas            the matmul of the same rows (nodes + 1 per request)
 *   tree              fs_verify_tree: one fused pass, no logits written
 *   cublas+tree       matmul, then fs_verify_tree_logits (one pass over logits)
 *   cublas+softmax    matmul, then the probabilities written in fp32: the part
 *                     of a materialised tree verify before its walk (a lower
 *                     bound on that pipeline, which then also walks the tree
 *                     over the probabilities)
 * Trees: the first 4 nodes are the root's children, node i > 3 is a child of
 * node (i - 4) / 3 -- up to 4 children a node, depth ~log3(n).  Drafts are
 * random tokens (the cost does not depend on acceptance).  Temperature 1.
 *
 * TREE_BENCH_ALT=VAR=VALUE adds a method "tree@alt": fs_verify_tree on a
 * second context created with VAR=VALUE in the environment (a knob of
 * docs/TUNING.md), alternated with the others in the same process -- an A/B
 * of a knob that runs in separate processes moves with the chip's power
 * state between them (5-12% at 400-1600 rows on an H200).  tree@alt always
 * follows the same method in a round, so run it both ways round (the knob
 * set for the process, the default as TREE_BENCH_ALT) and read the two with
 * bench/tools/alt_table.py.
 *
 * Usage: tree_bench [--requests 1,4,16,64] [--nodes 8,16,32,64] [--rounds 3]
 *                   [--reps 10] [--shapes 151936x4096,128256x8192] */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "baselines.h"
#include "filter_inputs.h"
#include "flashspec.h"
#include "bench_util.h"
#include "timing.h"

enum { M_CUBLAS, M_TREE, M_TREE_LOGITS, M_SOFTMAX, M_TREE_ALT, M_COUNT, MAX_SAMPLES = 512 };
static const char *const NAMES[M_COUNT] = {"cublas", "tree", "cublas+tree", "cublas+softmax",
                                           "tree@alt"};

typedef struct bench {
    fs_context *ctx, *alt; /* alt: TREE_BENCH_ALT's context, or NULL */
    cudaStream_t stream;
    int64_t V, D, requests, nodes, rows;
    void *w, *h, *logits;
    float *probs;
    bl_gemm *gemm;
    void *bl_ws, *ws;
    size_t ws_bytes;
    fs_draft_tree tree;
    float *temp;
    uint64_t *seed;
    int32_t *tok, *path, *nem, *st;
    float *lp;
    int method;
} bench;

static int run(void *arg)
{
    bench *b = arg;
    fs_context *ctx = b->method == M_TREE_ALT ? b->alt : b->ctx;
    fs_lm_head head = {b->w, b->V, b->D, FS_DTYPE_BF16};
    fs_sampling p;
    memset(&p, 0, sizeof p);
    p.temperature = b->temp;
    p.seed = b->seed;
    fs_status s = FS_OK;
    switch (b->method) {
    case M_CUBLAS:
        return bl_gemm_run(b->gemm, b->w, b->h, b->logits, b->stream);
    case M_SOFTMAX:
        if (bl_gemm_run(b->gemm, b->w, b->h, b->logits, b->stream))
            return 1;
        return bl_softmax(b->logits, b->rows, b->V, b->temp, b->nodes + 1, b->bl_ws, b->probs,
                          b->stream) != cudaSuccess;
    case M_TREE_LOGITS:
        if (bl_gemm_run(b->gemm, b->w, b->h, b->logits, b->stream))
            return 1;
        s = fs_verify_tree_logits(ctx, b->logits, FS_DTYPE_BF16, b->V, &b->tree, &p, b->ws,
                                  b->ws_bytes, b->tok, b->path, b->nem, b->lp, b->st);
        break;
    default:
        s = fs_verify_tree(ctx, &head, b->h, &b->tree, &p, b->ws, b->ws_bytes, b->tok, b->path,
                           b->nem, b->lp, b->st);
    }
    if (s != FS_OK)
        fprintf(stderr, "%s: %s\n", NAMES[b->method], fs_context_last_error(ctx));
    return s != FS_OK;
}

/* The tree of `nodes` nodes (see above) for each of `requests` requests. */
static void make_tree(bench *b, int64_t V)
{
    const int64_t R = b->requests, n = b->nodes, N = R * n;
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)N), *par = malloc(sizeof(int32_t) * (size_t)N);
    int32_t *off = malloc(sizeof(int32_t) * (size_t)(R + 1));
    int32_t depth[256];
    int64_t max_depth = 1;
    for (int64_t i = 0; i < n; ++i) {
        const int32_t p = i < 4 ? -1 : (int32_t)((i - 4) / 3);
        depth[i] = p < 0 ? 1 : depth[p] + 1;
        if (depth[i] > max_depth)
            max_depth = depth[i];
        for (int64_t r = 0; r < R; ++r) {
            par[r * n + i] = p;
            tok[r * n + i] = (int32_t)(((uint64_t)(r * n + i) * 2654435761u) % (uint64_t)V);
        }
    }
    for (int64_t r = 0; r <= R; ++r)
        off[r] = (int32_t)(r * n);
    b->tree.num_requests = R;
    b->tree.num_nodes = N;
    b->tree.max_depth = max_depth;
    b->tree.max_children = 4;
    b->tree.tokens = bu_dup(tok, sizeof(int32_t) * (size_t)N);
    b->tree.parents = bu_dup(par, sizeof(int32_t) * (size_t)N);
    b->tree.node_offsets = bu_dup(off, sizeof(int32_t) * (size_t)(R + 1));
    free(tok);
    free(par);
    free(off);
}

int main(int argc, char **argv)
{
    int64_t reqs[16] = {1, 4, 16, 64}, nodes[16] = {8, 16, 32, 64};
    int64_t shapes[8] = {151936, 4096, 128256, 8192};
    int nreq = 4, nnode = 4, nshape = 4, rounds = 3, reps = 10;
    const bu_list_opt lists[] = {{"requests", reqs, &nreq, 16},
                                 {"nodes", nodes, &nnode, 16},
                                 {"shapes", shapes, &nshape, 8}};
    bu_parse_args(argc, argv, lists, 3, &rounds, &reps, MAX_SAMPLES);
    int64_t max_rows = 0, max_req = 0;
    for (int i = 0; i < nreq; ++i)
        for (int j = 0; j < nnode; ++j) {
            if (nodes[j] > 250) {
                fprintf(stderr, "at most 250 nodes a request\n");
                return 1;
            }
            if (reqs[i] * (nodes[j] + 1) > max_rows)
                max_rows = reqs[i] * (nodes[j] + 1);
            if (reqs[i] > max_req)
                max_req = reqs[i];
        }
    CUDA_CHECK(cudaSetDevice(0));
    CUDA_CHECK(bl_init(0));
    int l2 = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
    bench b;
    memset(&b, 0, sizeof b);
    CUDA_CHECK(cudaStreamCreate(&b.stream));
    if (fs_context_create(&b.ctx, FS_DEVICE_CUDA, 0) != FS_OK) {
        fprintf(stderr, "no CUDA context\n");
        return 1;
    }
    fs_context_set_stream(b.ctx, b.stream);
    const char *alt = getenv("TREE_BENCH_ALT");
    if (alt && *alt) {
        if (!(b.alt = bu_context_with_env(alt, 0, b.stream)))
            return 1;
        printf("# tree@alt: fs_verify_tree with %s\n", alt);
    }
    const int nm = b.alt ? M_COUNT : M_TREE_ALT; /* methods timed */
    bench_timer t;
    bench_timer_init(&t, b.stream, (size_t)l2, reps);
    float *temp = malloc(sizeof(float) * (size_t)max_rows);
    uint64_t *seed = malloc(sizeof(uint64_t) * (size_t)max_rows);
    for (int64_t i = 0; i < max_rows; ++i) {
        temp[i] = 1.0f;
        seed[i] = 99u + (uint64_t)i * 7919u;
    }
    b.temp = bu_dup(temp, sizeof(float) * (size_t)max_rows);
    b.seed = bu_dup(seed, sizeof(uint64_t) * (size_t)max_rows);
    free(temp);
    free(seed);
    b.tok = bu_dmalloc(sizeof(int32_t) * (size_t)max_rows);
    b.path = bu_dmalloc(sizeof(int32_t) * (size_t)max_rows);
    b.lp = bu_dmalloc(sizeof(float) * (size_t)max_rows);
    b.nem = bu_dmalloc(sizeof(int32_t) * (size_t)max_req);
    b.st = bu_dmalloc(sizeof(int32_t) * (size_t)max_req);
    printf("# tree_bench: rounds %d x reps %d per method, L2 flushed, medians (ms)\n", rounds,
           reps);
    printf("%-16s %5s %5s %5s  %-15s %9s %17s %9s\n", "shape", "reqs", "nodes", "rows", "method",
           "median", "p10-p90", "/cublas");
    for (int si = 0; si + 1 < nshape; si += 2) {
        b.V = shapes[si];
        b.D = shapes[si + 1];
        b.w = bu_dmalloc((size_t)(b.V * b.D) * 2);
        b.h = bu_dmalloc((size_t)(max_rows * b.D) * 2);
        b.logits = bu_dmalloc((size_t)(max_rows * b.V) * 2);
        b.probs = bu_dmalloc((size_t)(max_rows * b.V) * 4);
        b.bl_ws = bu_dmalloc(bl_workspace_bytes(max_rows, b.V));
        CUDA_CHECK(cudaMemset(b.bl_ws, 0, bl_workspace_bytes(max_rows, b.V)));
        CUDA_CHECK(fb_fill_head(b.w, b.h, b.V, b.D, max_rows, FB_PEAKED, 7, b.stream));
        CUDA_CHECK(cudaStreamSynchronize(b.stream));
        for (int ri = 0; ri < nreq; ++ri)
            for (int ni = 0; ni < nnode; ++ni) {
                b.requests = reqs[ri];
                b.nodes = nodes[ni];
                b.rows = b.requests * (b.nodes + 1);
                make_tree(&b, b.V);
                /* one workspace serves both contexts */
                fs_context *const ctxs[2] = {b.ctx, b.alt};
                size_t wsb = 0;
                for (int c = 0; c < 2 && ctxs[c]; ++c) {
                    size_t need = 0;
                    if (fs_verify_tree_workspace_size(ctxs[c], b.requests, b.tree.num_nodes, b.V,
                                                      &need) != FS_OK) {
                        fprintf(stderr, "workspace: %s\n", fs_context_last_error(ctxs[c]));
                        return 1;
                    }
                    wsb = need > wsb ? need : wsb;
                }
                b.ws_bytes = wsb;
                b.ws = bu_dmalloc(wsb);
                if (bl_gemm_create(&b.gemm, b.V, b.D, b.rows, b.w, b.h, b.logits, 0, b.stream)) {
                    fprintf(stderr, "gemm: %s\n", bl_gemm_last_error());
                    return 1;
                }
                static double samples[M_COUNT * MAX_SAMPLES];
                double med[M_COUNT];
                const int ns = rounds * reps;
                if (bu_time_rounds(&t, nm, NAMES, &b.method, run, &b, rounds, reps, samples, med))
                    return 1;
                for (int m = 0; m < nm; ++m) {
                    char spread[32];
                    bu_spread(samples + (size_t)m * ns, ns, spread, sizeof spread);
                    printf("%7lldx%-8lld %5lld %5lld %5lld  %-15s %9.4f %17s %9.3f\n",
                           (long long)b.V, (long long)b.D, (long long)b.requests,
                           (long long)b.nodes, (long long)b.rows, NAMES[m], med[m], spread,
                           med[m] / med[M_CUBLAS]);
                }
                fflush(stdout);
                bl_gemm_destroy(b.gemm);
                CUDA_CHECK(cudaFree(b.ws));
                CUDA_CHECK(cudaFree((void *)b.tree.tokens));
                CUDA_CHECK(cudaFree((void *)b.tree.parents));
                CUDA_CHECK(cudaFree((void *)b.tree.node_offsets));
            }
        CUDA_CHECK(cudaFree(b.w));
        CUDA_CHECK(cudaFree(b.h));
        CUDA_CHECK(cudaFree(b.logits));
        CUDA_CHECK(cudaFree(b.probs));
        CUDA_CHECK(cudaFree(b.bl_ws));
    }
    bench_timer_destroy(&t);
    fs_context_destroy(b.ctx);
    if (b.alt)
        fs_context_destroy(b.alt);
    return 0;
}
