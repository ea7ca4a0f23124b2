/* Tensor-parallel benchmark: the fused ops with the LM head sharded over the
 * vocabulary across TP GPUs (one process per GPU, NCCL), against
 *   ideal      = the TP=1 fused time / TP
 *   allgather  = each rank's cuBLAS GEMM of its shard, NCCL all-gather of the
 *                logits, the [ranks][rows][V/TP] -> [rows][V] copy, then one
 *                pass over the whole logits (what engines do today):
 *                sample: the unfused Gumbel sampler; filtered, verify and
 *                tree: the op's _logits variant on an unsharded context.
 * Ops: sample (one row a request), filtered (sample with top_k 50, top_p
 * 0.9, min_p 0.05; on a sharded context the call also reads the count of
 * rows handed to the second pass to the host), verify (requests of 4 greedy drafts, 5
 * rows each), tree (requests of a 7-node binary draft tree, 8 rows each:
 * two children at the root and under the first four nodes); rows is the
 * target row count, rounded down to whole requests (at least one).
 * CUDA events on rank 0, the L2 flushed before every rep, medians.
 *   tp_bench [--vocab V] [--dim D] [--rows 1,64,256,1024] [--ops sample,filtered,verify,tree]
 *            [--max-tp N] [--reps N] [--csv F] */
#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "baselines.h"
#include "flashspec.h"
#include "timing.h"
#include "tp_permute.h"

#define MAX_ROWS_LIST 16
#define MAX_TP 8
#define TREE_ROWS 8   /* a request's rows in the tree op: 7 nodes + the root */
#define VERIFY_ROWS 5 /* 4 drafts + the bonus row */

enum { OP_SAMPLE, OP_FILTERED, OP_VERIFY, OP_TREE, NUM_OPS };
static const char *const op_names[NUM_OPS] = {"sample", "filtered", "verify", "tree"};

typedef struct shared {
    volatile int id_ready;
    ncclUniqueId id;
    volatile int failed;
    double fused_ms[NUM_OPS][MAX_ROWS_LIST], allgather_ms[NUM_OPS][MAX_ROWS_LIST];
} shared;

typedef struct options {
    int64_t vocab, dim, rows[MAX_ROWS_LIST];
    int nrows, max_tp, reps, warmup;
    int ops[NUM_OPS]; /* which ops run */
    const char *csv;
} options;

typedef struct rank_state {
    int rank, tp, op;
    int64_t rows, v_local, dim;
    fs_context *ctx, *ctx_whole; /* sharded (TP > 1), and unsharded for the baseline */
    ncclComm_t comm;
    cudaStream_t stream;
    fs_lm_head head;
    void *hidden, *logits_local, *gathered, *logits;
    fs_sampling params, fparams; /* fparams: params with the three filters */
    float *temperature;
    uint64_t *seed;
    int32_t *tokens, *status, *num_emitted;
    float *logprobs;
    fs_drafts drafts;    /* verify: requests of VERIFY_ROWS - 1 drafts */
    fs_draft_tree tree;  /* tree: requests of TREE_ROWS - 1 nodes */
    int32_t *offsets_verify, *offsets_tree, *draft_tokens, *tree_parents;
    void *ws, *bl_ws;
    size_t ws_bytes;
    bl_gemm *gemm;
} rank_state;

#define FS_CHECK(st_, what)                                                                  \
    do {                                                                                     \
        if ((st_) != FS_OK) {                                                                \
            fprintf(stderr, "rank %d: %s: %s\n", s->rank, what, fs_context_last_error(s->ctx)); \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)

static int run_fused(void *arg)
{
    rank_state *s = arg;
    switch (s->op) {
    case OP_VERIFY:
        return fs_verify(s->ctx, &s->head, s->hidden, &s->drafts, &s->params, s->ws,
                         s->ws_bytes, s->tokens, s->num_emitted, NULL, s->status) != FS_OK;
    case OP_TREE:
        return fs_verify_tree(s->ctx, &s->head, s->hidden, &s->tree, &s->params, s->ws,
                              s->ws_bytes, s->tokens, NULL, s->num_emitted, NULL,
                              s->status) != FS_OK;
    case OP_FILTERED:
        return fs_sample(s->ctx, &s->head, s->hidden, s->rows, &s->fparams, s->ws, s->ws_bytes,
                         s->tokens, NULL, s->status) != FS_OK;
    default:
        return fs_sample(s->ctx, &s->head, s->hidden, s->rows, &s->params, s->ws, s->ws_bytes,
                         s->tokens, NULL, s->status) != FS_OK;
    }
}

/* The one pass over the gathered logits [rows, V]. */
static int pass_over_logits(rank_state *s, const void *logits)
{
    const int64_t V = s->v_local * s->tp;
    switch (s->op) {
    case OP_VERIFY:
        return fs_verify_logits(s->ctx_whole, logits, FS_DTYPE_BF16, V, &s->drafts, &s->params,
                                s->ws, s->ws_bytes, s->tokens, s->num_emitted, NULL,
                                s->status) != FS_OK;
    case OP_TREE:
        return fs_verify_tree_logits(s->ctx_whole, logits, FS_DTYPE_BF16, V, &s->tree,
                                     &s->params, s->ws, s->ws_bytes, s->tokens, NULL,
                                     s->num_emitted, NULL, s->status) != FS_OK;
    case OP_FILTERED:
        return fs_sample_logits(s->ctx_whole, logits, FS_DTYPE_BF16, s->rows, V, &s->fparams,
                                s->ws, s->ws_bytes, s->tokens, NULL, s->status) != FS_OK;
    default:
        return bl_gumbel_sample(logits, s->rows, V, s->temperature, s->seed, s->bl_ws,
                                s->tokens, s->stream) != cudaSuccess;
    }
}

static int run_allgather(void *arg)
{
    rank_state *s = arg;
    if (bl_gemm_run(s->gemm, s->head.weight, s->hidden, s->logits_local, s->stream) != 0)
        return 1;
    const void *logits = s->logits_local;
    if (s->tp > 1) {
        size_t n = (size_t)(s->rows * s->v_local);
        if (ncclAllGather(s->logits_local, s->gathered, n, ncclBfloat16, s->comm, s->stream) !=
            ncclSuccess)
            return 1;
        if (tp_permute_bf16(s->gathered, s->logits, s->rows, s->v_local, s->tp, s->stream) !=
            cudaSuccess)
            return 1;
        logits = s->logits;
    }
    return pass_over_logits(s, logits);
}

/* Requests of `per` rows for op: verify's drafts (greedy chains) or the
 * tree's binary shape; rows is rounded down to whole requests. */
static int64_t set_requests(rank_state *s, int64_t rows)
{
    const int per = s->op == OP_TREE ? TREE_ROWS : VERIFY_ROWS;
    int64_t R = rows / per > 0 ? rows / per : 1;
    int64_t n = rows / per > 0 ? per - 1 : rows - 1; /* fewer rows than a request: a shorter one */
    int32_t *off = malloc(sizeof(int32_t) * (size_t)(R + 1));
    for (int64_t r = 0; r <= R; ++r)
        off[r] = (int32_t)(r * n);
    int32_t *dst = s->op == OP_TREE ? s->offsets_tree : s->offsets_verify;
    CUDA_CHECK(cudaMemcpy(dst, off, sizeof(int32_t) * (size_t)(R + 1), cudaMemcpyHostToDevice));
    free(off);
    if (s->op == OP_TREE)
        s->tree = (fs_draft_tree){R, R * n, 3, 2, s->draft_tokens, s->tree_parents,
                                  s->offsets_tree};
    else
        s->drafts = (fs_drafts){R, R * n, VERIFY_ROWS - 1, s->draft_tokens, s->offsets_verify};
    return R * (n + 1);
}


static void *dalloc(size_t bytes)
{
    void *p = NULL;
    CUDA_CHECK(cudaMalloc(&p, bytes));
    return p;
}

static void rank_main(const options *o, shared *sh, int rank, int tp)
{
    rank_state st = {0}, *s = &st;
    s->rank = rank;
    s->tp = tp;
    s->dim = o->dim;
    s->v_local = o->vocab / tp;
    CUDA_CHECK(cudaSetDevice(rank));
    CUDA_CHECK(cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking));
    CUDA_CHECK(bl_init(rank));
    if (rank == 0 && tp > 1) {
        if (ncclGetUniqueId(&sh->id) != ncclSuccess)
            sh->failed = 1;
        __sync_synchronize();
        sh->id_ready = 1;
    }
    FS_CHECK(fs_context_create(&s->ctx, FS_DEVICE_CUDA, rank), "context");
    FS_CHECK(fs_context_set_stream(s->ctx, s->stream), "stream");
    if (tp > 1) {
        while (!sh->id_ready)
            usleep(1000);
        if (ncclCommInitRank(&s->comm, tp, sh->id, rank) != ncclSuccess) {
            fprintf(stderr, "rank %d: ncclCommInitRank failed\n", rank);
            exit(1);
        }
        FS_CHECK(fs_context_set_vocab_shard(s->ctx, s->comm, rank * s->v_local, o->vocab),
                 "set_vocab_shard");
    }
    int64_t max_rows = 0;
    for (int i = 0; i < o->nrows; ++i)
        max_rows = o->rows[i] > max_rows ? o->rows[i] : max_rows;
    size_t wbytes = (size_t)(s->v_local * o->dim) * 2;
    s->head = (fs_lm_head){dalloc(wbytes), s->v_local, o->dim, FS_DTYPE_BF16};
    /* random weights of realistic scale (logits of std ~3); values do not affect timing */
    CUDA_CHECK(bl_fill_normal_bf16((void *)s->head.weight, (size_t)(s->v_local * o->dim),
                                   3.0f / 90.5f, 77 + (uint64_t)rank * 1000003u, s->stream));
    s->hidden = dalloc((size_t)(max_rows * o->dim) * 2);
    CUDA_CHECK(bl_fill_normal_bf16(s->hidden, (size_t)(max_rows * o->dim), 1.0f, 5, s->stream));
    s->logits_local = dalloc((size_t)(max_rows * s->v_local) * 2);
    s->gathered = dalloc((size_t)(max_rows * o->vocab) * 2);
    s->logits = dalloc((size_t)(max_rows * o->vocab) * 2);
    s->temperature = dalloc(sizeof(float) * (size_t)max_rows);
    s->seed = dalloc(sizeof(uint64_t) * (size_t)max_rows);
    float *ht = malloc(sizeof(float) * (size_t)max_rows);
    uint64_t *hs = malloc(sizeof(uint64_t) * (size_t)max_rows);
    for (int64_t r = 0; r < max_rows; ++r)
        ht[r] = 1.0f, hs[r] = 1000 + (uint64_t)r;
    CUDA_CHECK(cudaMemcpy(s->temperature, ht, sizeof(float) * (size_t)max_rows,
                          cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(s->seed, hs, sizeof(uint64_t) * (size_t)max_rows, cudaMemcpyHostToDevice));
    free(ht), free(hs);
    s->params = (fs_sampling){s->temperature, s->seed, NULL, NULL, NULL};
    {
        int32_t *hk = malloc(sizeof(int32_t) * (size_t)max_rows);
        float *hp = malloc(sizeof(float) * (size_t)max_rows);
        float *hm = malloc(sizeof(float) * (size_t)max_rows);
        for (int64_t r = 0; r < max_rows; ++r)
            hk[r] = 50, hp[r] = 0.9f, hm[r] = 0.05f;
        void *dk = dalloc(sizeof(int32_t) * (size_t)max_rows);
        void *dp = dalloc(sizeof(float) * (size_t)max_rows);
        void *dm = dalloc(sizeof(float) * (size_t)max_rows);
        CUDA_CHECK(cudaMemcpy(dk, hk, sizeof(int32_t) * (size_t)max_rows, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(dp, hp, sizeof(float) * (size_t)max_rows, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(dm, hm, sizeof(float) * (size_t)max_rows, cudaMemcpyHostToDevice));
        free(hk), free(hp), free(hm);
        s->fparams = s->params;
        s->fparams.top_k = dk;
        s->fparams.top_p = dp;
        s->fparams.min_p = dm;
    }
    s->tokens = dalloc(sizeof(int32_t) * (size_t)max_rows * TREE_ROWS);
    s->status = dalloc(sizeof(int32_t) * (size_t)max_rows);
    s->num_emitted = dalloc(sizeof(int32_t) * (size_t)max_rows);
    s->offsets_verify = dalloc(sizeof(int32_t) * (size_t)(max_rows + 1));
    s->offsets_tree = dalloc(sizeof(int32_t) * (size_t)(max_rows + 1));
    s->draft_tokens = dalloc(sizeof(int32_t) * (size_t)max_rows);
    s->tree_parents = dalloc(sizeof(int32_t) * (size_t)max_rows);
    {
        /* drafts and tree nodes: tokens spread over the vocabulary (the
           values do not change the timing); every request's tree is the
           same binary shape, parents -1 -1 0 0 1 1 2 */
        int32_t *ht = malloc(sizeof(int32_t) * (size_t)max_rows);
        int32_t *hp = malloc(sizeof(int32_t) * (size_t)max_rows);
        for (int64_t i = 0; i < max_rows; ++i) {
            int64_t j = i % (TREE_ROWS - 1);
            ht[i] = (int32_t)((i * 7919) % o->vocab);
            hp[i] = j < 2 ? -1 : (int32_t)((j - 2) / 2);
        }
        CUDA_CHECK(cudaMemcpy(s->draft_tokens, ht, sizeof(int32_t) * (size_t)max_rows,
                              cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(s->tree_parents, hp, sizeof(int32_t) * (size_t)max_rows,
                              cudaMemcpyHostToDevice));
        free(ht), free(hp);
    }
    FS_CHECK(fs_context_create(&s->ctx_whole, FS_DEVICE_CUDA, rank), "unsharded context");
    FS_CHECK(fs_context_set_stream(s->ctx_whole, s->stream), "stream");
    /* one workspace for every op, sharded or over the whole logits */
    s->ws_bytes = 0;
    for (int whole = 0; whole < 2; ++whole) {
        fs_context *c = whole ? s->ctx_whole : s->ctx;
        int64_t v = whole ? o->vocab : s->v_local;
        size_t b = 0;
        FS_CHECK(fs_sample_workspace_size(c, max_rows, v, &b), "ws size");
        s->ws_bytes = b > s->ws_bytes ? b : s->ws_bytes;
        FS_CHECK(fs_verify_workspace_size(c, max_rows, max_rows, v, &b), "ws size");
        s->ws_bytes = b > s->ws_bytes ? b : s->ws_bytes;
        FS_CHECK(fs_verify_tree_workspace_size(c, max_rows, max_rows, v, &b), "ws size");
        s->ws_bytes = b > s->ws_bytes ? b : s->ws_bytes;
    }
    s->ws = dalloc(s->ws_bytes);
    size_t blb = bl_workspace_bytes(max_rows, o->vocab);
    s->bl_ws = dalloc(blb);
    CUDA_CHECK(cudaMemset(s->bl_ws, 0, blb));
    CUDA_CHECK(cudaDeviceSynchronize());

    int l2_bytes = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&l2_bytes, cudaDevAttrL2CacheSize, rank));
    bench_timer timer;
    bench_timer_init(&timer, s->stream, (size_t)l2_bytes, o->reps);
    double *ms = malloc(sizeof(double) * (size_t)o->reps);
    for (int op = 0; op < NUM_OPS; ++op) {
      if (!o->ops[op])
          continue;
      s->op = op;
      for (int i = 0; i < o->nrows; ++i) {
        s->rows = op == OP_SAMPLE || op == OP_FILTERED ? o->rows[i] : set_requests(s, o->rows[i]);
        if (bl_gemm_create(&s->gemm, s->v_local, o->dim, s->rows, s->head.weight, s->hidden,
                           s->logits_local, 0, s->stream) != 0) {
            fprintf(stderr, "rank %d: gemm: %s\n", rank, bl_gemm_last_error());
            exit(1);
        }
        if (bench_time(&timer, run_fused, s, o->warmup, o->reps, ms) != 0) {
            fprintf(stderr, "rank %d: fused %s failed: %s\n", rank, op_names[op],
                    fs_context_last_error(s->ctx));
            exit(1);
        }
        if (rank == 0)
            sh->fused_ms[op][i] = bench_quantile(ms, o->reps, 0.5);
        if (bench_time(&timer, run_allgather, s, o->warmup, o->reps, ms) != 0) {
            fprintf(stderr, "rank %d: all-gather baseline of %s failed: %s\n", rank,
                    op_names[op], fs_context_last_error(s->ctx_whole));
            exit(1);
        }
        if (rank == 0)
            sh->allgather_ms[op][i] = bench_quantile(ms, o->reps, 0.5);
        bl_gemm_destroy(s->gemm);
      }
    }
    free(ms);
    bench_timer_destroy(&timer);
    if (s->comm)
        ncclCommDestroy(s->comm);
    fs_context_destroy(s->ctx);
    fs_context_destroy(s->ctx_whole);
    bl_gemm_shutdown();
}

static int parse_list(const char *arg, int64_t *out, int max)
{
    int n = 0;
    char *copy = strdup(arg), *save = NULL;
    for (char *t = strtok_r(copy, ",", &save); t && n < max; t = strtok_r(NULL, ",", &save))
        out[n++] = strtoll(t, NULL, 10);
    free(copy);
    return n;
}

int main(int argc, char **argv)
{
    options o = {128256, 8192, {1, 64, 256, 1024}, 4, MAX_TP, 30, 5, {1, 1, 1, 1}, NULL};
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--vocab") && v) o.vocab = strtoll(v, NULL, 10), ++i;
        else if (!strcmp(a, "--dim") && v) o.dim = strtoll(v, NULL, 10), ++i;
        else if (!strcmp(a, "--rows") && v) o.nrows = parse_list(v, o.rows, MAX_ROWS_LIST), ++i;
        else if (!strcmp(a, "--ops") && v) {
            memset(o.ops, 0, sizeof o.ops);
            for (int k = 0; k < NUM_OPS; ++k)
                o.ops[k] = strstr(v, op_names[k]) != NULL;
            ++i;
        }
        else if (!strcmp(a, "--max-tp") && v) o.max_tp = atoi(v), ++i;
        else if (!strcmp(a, "--reps") && v) o.reps = atoi(v), ++i;
        else if (!strcmp(a, "--csv") && v) o.csv = v, ++i;
        else {
            fprintf(stderr, "usage: %s [--vocab V] [--dim D] [--rows a,b,c] "
                            "[--ops sample,filtered,verify,tree] [--max-tp N] [--reps N] "
                            "[--csv FILE]\n",
                    argv[0]);
            return 2;
        }
    }
    int ndev = 0;
    /* counted in a child so that the parent never initialises CUDA before fork */
    int pipefd[2];
    if (pipe(pipefd) != 0)
        return 1;
    if (fork() == 0) {
        if (cudaGetDeviceCount(&ndev) != cudaSuccess)
            ndev = 0;
        if (write(pipefd[1], &ndev, sizeof ndev) != (ssize_t)sizeof ndev)
            _exit(1);
        _exit(0);
    }
    if (read(pipefd[0], &ndev, sizeof ndev) != (ssize_t)sizeof ndev)
        ndev = 0;
    wait(NULL);
    if (ndev < 1) {
        fprintf(stderr, "tp_bench: no GPU\n");
        return 1;
    }
    FILE *csv = o.csv ? fopen(o.csv, "w") : NULL;
    if (csv)
        fprintf(csv, "op,tp,vocab,dim,rows,fused_ms,ideal_ms,allgather_ms\n");
    printf("V=%lld D=%lld bf16, %d GPUs; median of %d reps, L2 flushed\n", (long long)o.vocab,
           (long long)o.dim, ndev, o.reps);
    printf("%-7s %4s %6s %10s %10s %10s %12s %12s\n", "op", "TP", "rows", "fused_ms",
           "ideal_ms", "fused/ideal", "allgather_ms", "allgather/fused");
    double tp1[NUM_OPS][MAX_ROWS_LIST] = {{0}};
    int failed = 0;
    for (int tp = 1; tp <= ndev && tp <= o.max_tp; tp *= 2) {
        if (o.vocab % tp) {
            fprintf(stderr, "skipping TP=%d: vocab %lld not divisible\n", tp, (long long)o.vocab);
            continue;
        }
        shared *sh = mmap(NULL, sizeof(shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                          -1, 0);
        memset(sh, 0, sizeof *sh);
        for (int k = 0; k < tp; ++k)
            if (fork() == 0) {
                rank_main(&o, sh, k, tp);
                _exit(0);
            }
        int ok = 1, wst;
        for (int k = 0; k < tp; ++k) {
            wait(&wst);
            ok &= WIFEXITED(wst) && WEXITSTATUS(wst) == 0;
        }
        if (!ok || sh->failed) {
            fprintf(stderr, "TP=%d failed\n", tp);
            failed = 1;
            munmap(sh, sizeof *sh);
            continue;
        }
        for (int op = 0; op < NUM_OPS; ++op)
            for (int i = 0; o.ops[op] && i < o.nrows; ++i) {
                const double f = sh->fused_ms[op][i], g = sh->allgather_ms[op][i];
                if (tp == 1)
                    tp1[op][i] = f;
                const double ideal = tp1[op][i] / tp;
                printf("%-7s %4d %6lld %10.4f %10.4f %10.2f %12.4f %12.2f\n", op_names[op], tp,
                       (long long)o.rows[i], f, ideal, f / ideal, g, g / f);
                if (csv)
                    fprintf(csv, "%s,%d,%lld,%lld,%lld,%.5f,%.5f,%.5f\n", op_names[op], tp,
                            (long long)o.vocab, (long long)o.dim, (long long)o.rows[i], f, ideal,
                            g);
            }
        munmap(sh, sizeof *sh);
    }
    if (csv)
        fclose(csv);
    return failed;
}
