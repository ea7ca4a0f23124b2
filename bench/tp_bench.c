/* Tensor-parallel benchmark: fs_sample with the LM head sharded over the
 * vocabulary across TP GPUs (one process per GPU, NCCL), against
 *   ideal      = the TP=1 fused time / TP
 *   allgather  = each rank's cuBLAS GEMM of its shard, NCCL all-gather of the
 *                logits, the [ranks][rows][V/TP] -> [rows][V] copy, and the
 *                unfused Gumbel sampler (what engines do today);
 * and the fused op with filters (top_k 50, top_p 0.9, min_p 0.05, which
 * these rows settle in the one pass; on a sharded context the call also
 * reads the handed-over count to the host) against the unfiltered one.
 * CUDA events on rank 0, the L2 flushed before every rep, medians.
 *   tp_bench [--vocab V] [--dim D] [--rows 16,64,256] [--max-tp N] [--reps N] [--csv F] */
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

typedef struct shared {
    volatile int id_ready;
    ncclUniqueId id;
    volatile int failed;
    double fused_ms[MAX_ROWS_LIST], allgather_ms[MAX_ROWS_LIST], filtered_ms[MAX_ROWS_LIST];
} shared;

typedef struct options {
    int64_t vocab, dim, rows[MAX_ROWS_LIST];
    int nrows, max_tp, reps, warmup;
    const char *csv;
} options;

typedef struct rank_state {
    int rank, tp;
    int64_t rows, v_local, dim;
    fs_context *ctx;
    ncclComm_t comm;
    cudaStream_t stream;
    fs_lm_head head;
    void *hidden, *logits_local, *gathered, *logits;
    fs_sampling params, fparams;
    float *temperature;
    uint64_t *seed;
    int32_t *tokens, *status;
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
    return fs_sample(s->ctx, &s->head, s->hidden, s->rows, &s->params, s->ws, s->ws_bytes,
                     s->tokens, NULL, s->status) != FS_OK;
}

static int run_filtered(void *arg)
{
    rank_state *s = arg;
    return fs_sample(s->ctx, &s->head, s->hidden, s->rows, &s->fparams, s->ws, s->ws_bytes,
                     s->tokens, NULL, s->status) != FS_OK;
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
    return bl_gumbel_sample(logits, s->rows, s->v_local * s->tp, s->temperature, s->seed,
                            s->bl_ws, s->tokens, s->stream) != cudaSuccess;
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
    s->tokens = dalloc(sizeof(int32_t) * (size_t)max_rows);
    s->status = dalloc(sizeof(int32_t) * (size_t)max_rows);
    FS_CHECK(fs_sample_workspace_size(s->ctx, max_rows, s->v_local, &s->ws_bytes), "ws size");
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
    for (int i = 0; i < o->nrows; ++i) {
        s->rows = o->rows[i];
        if (bl_gemm_create(&s->gemm, s->v_local, o->dim, s->rows, s->head.weight, s->hidden,
                           s->logits_local, 0, s->stream) != 0) {
            fprintf(stderr, "rank %d: gemm: %s\n", rank, bl_gemm_last_error());
            exit(1);
        }
        if (bench_time(&timer, run_fused, s, o->warmup, o->reps, ms) != 0) {
            fprintf(stderr, "rank %d: fused sample failed: %s\n", rank,
                    fs_context_last_error(s->ctx));
            exit(1);
        }
        if (rank == 0)
            sh->fused_ms[i] = bench_quantile(ms, o->reps, 0.5);
        if (bench_time(&timer, run_filtered, s, o->warmup, o->reps, ms) != 0) {
            fprintf(stderr, "rank %d: fused filtered sample failed: %s\n", rank,
                    fs_context_last_error(s->ctx));
            exit(1);
        }
        if (rank == 0)
            sh->filtered_ms[i] = bench_quantile(ms, o->reps, 0.5);
        if (bench_time(&timer, run_allgather, s, o->warmup, o->reps, ms) != 0) {
            fprintf(stderr, "rank %d: all-gather baseline failed\n", rank);
            exit(1);
        }
        if (rank == 0)
            sh->allgather_ms[i] = bench_quantile(ms, o->reps, 0.5);
        bl_gemm_destroy(s->gemm);
    }
    free(ms);
    bench_timer_destroy(&timer);
    if (s->comm)
        ncclCommDestroy(s->comm);
    fs_context_destroy(s->ctx);
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
    options o = {128256, 8192, {16, 64, 256}, 3, MAX_TP, 30, 5, NULL};
    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--vocab") && v) o.vocab = strtoll(v, NULL, 10), ++i;
        else if (!strcmp(a, "--dim") && v) o.dim = strtoll(v, NULL, 10), ++i;
        else if (!strcmp(a, "--rows") && v) o.nrows = parse_list(v, o.rows, MAX_ROWS_LIST), ++i;
        else if (!strcmp(a, "--max-tp") && v) o.max_tp = atoi(v), ++i;
        else if (!strcmp(a, "--reps") && v) o.reps = atoi(v), ++i;
        else if (!strcmp(a, "--csv") && v) o.csv = v, ++i;
        else {
            fprintf(stderr, "usage: %s [--vocab V] [--dim D] [--rows a,b,c] [--max-tp N] "
                            "[--reps N] [--csv FILE]\n", argv[0]);
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
        fprintf(csv, "tp,vocab,dim,rows,fused_ms,ideal_ms,allgather_ms,filtered_ms\n");
    printf("V=%lld D=%lld bf16, %d GPUs; median of %d reps, L2 flushed\n", (long long)o.vocab,
           (long long)o.dim, ndev, o.reps);
    printf("%4s %6s %10s %10s %10s %12s %12s %12s %12s\n", "TP", "rows", "fused_ms",
           "ideal_ms", "fused/ideal", "allgather_ms", "allgather/fused", "filtered_ms",
           "filtered/fused");
    double tp1[MAX_ROWS_LIST] = {0};
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
        for (int i = 0; i < o.nrows; ++i) {
            if (tp == 1)
                tp1[i] = sh->fused_ms[i];
            double ideal = tp1[i] / tp;
            printf("%4d %6lld %10.4f %10.4f %10.2f %12.4f %12.2f %12.4f %12.3f\n", tp,
                   (long long)o.rows[i], sh->fused_ms[i], ideal, sh->fused_ms[i] / ideal,
                   sh->allgather_ms[i], sh->allgather_ms[i] / sh->fused_ms[i],
                   sh->filtered_ms[i], sh->filtered_ms[i] / sh->fused_ms[i]);
            if (csv)
                fprintf(csv, "%d,%lld,%lld,%lld,%.5f,%.5f,%.5f,%.5f\n", tp, (long long)o.vocab,
                        (long long)o.dim, (long long)o.rows[i], sh->fused_ms[i], ideal,
                        sh->allgather_ms[i], sh->filtered_ms[i]);
        }
        munmap(sh, sizeof *sh);
    }
    if (csv)
        fclose(csv);
    return failed;
}
