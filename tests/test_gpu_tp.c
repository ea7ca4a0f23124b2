/* Tensor parallel: the LM head sharded over the vocabulary (ragged shards)
 * across every visible GPU, one thread and one NCCL rank per GPU.  Every rank
 * must produce bit-identical outputs, equal to a single-GPU run of the whole
 * head with the same seeds.  Skipped (77) with fewer than two GPUs. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "flashspec.h"

#ifdef FS_HAVE_NCCL
#include <nccl.h>

enum { ROWS = 37, D = 512, V = 50021, REQS = 9, MAXD = 4, MAXRANKS = 8 };

#define CHECK(cond, ...)                                                                     \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                                  \
            fprintf(stderr, __VA_ARGS__);                                                    \
            fprintf(stderr, "\n");                                                           \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)
#define CUDA_OK(x) CHECK((x) == cudaSuccess, "%s failed", #x)
#define FS_OK_(ctx, x) CHECK((x) == FS_OK, "%s: %s", #x, fs_context_last_error(ctx))

/* Inputs shared by every rank (host copies). */
static uint16_t *h_weight, *h_hidden;
static float h_temp[ROWS];
static uint64_t h_seed[ROWS], h_off[ROWS];
static int32_t h_drafts[REQS * MAXD], h_offsets[REQS + 1];
static int64_t n_drafts, verify_rows;

/* Outputs of one run (a rank, or the single-GPU reference). */
typedef struct outputs {
    int32_t sample_tok[ROWS], sample_st[ROWS];
    float sample_lp[ROWS];
    int32_t argmax_tok[ROWS], argmax_st[ROWS];
    float argmax_val[ROWS];
    int32_t verify_tok[REQS * (MAXD + 1)], verify_n[REQS], verify_st[REQS];
    float verify_lp[REQS * (MAXD + 1)];
} outputs;

typedef struct rank_job {
    int rank, ranks;
    int64_t vocab_offset, vocab_size; /* shard; the whole vocabulary for the reference */
    ncclUniqueId id;
    outputs out;
} rank_job;

static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

static double uniform01(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return ((*s >> 11) + 0.5) / 9007199254740992.0;
}

static void make_inputs(void)
{
    uint64_t s = 12345;
    h_weight = malloc(sizeof(uint16_t) * V * D);
    h_hidden = malloc(sizeof(uint16_t) * ROWS * D);
    for (int64_t i = 0; i < (int64_t)V * D; ++i) /* logits of std ~3 */
        h_weight[i] = to_bf16((float)((uniform01(&s) - 0.5) * 3.46 * 3.0 / sqrt(D)));
    for (int64_t i = 0; i < (int64_t)ROWS * D; ++i)
        h_hidden[i] = to_bf16((float)((uniform01(&s) - 0.5) * 3.46));
    for (int r = 0; r < ROWS; ++r) {
        h_temp[r] = r % 3 == 0 ? 0.0f : (r % 3 == 1 ? 0.7f : 1.3f);
        h_seed[r] = 1000 + 7 * (uint64_t)r;
        h_off[r] = (uint64_t)r * 3;
    }
    h_offsets[0] = 0;
    for (int r = 0; r < REQS; ++r) {
        int n = r % (MAXD + 1);
        for (int j = 0; j < n; ++j)
            h_drafts[h_offsets[r] + j] = (int32_t)((r * 7919 + j * 104729) % V);
        h_offsets[r + 1] = h_offsets[r] + n;
    }
    n_drafts = h_offsets[REQS];
    verify_rows = n_drafts + REQS;
    CHECK(verify_rows <= ROWS, "verify uses the first rows of the hidden states");
}

static void *dalloc(size_t bytes)
{
    void *d = NULL;
    CUDA_OK(cudaMalloc(&d, bytes));
    return d;
}

static void *upload(const void *src, size_t bytes)
{
    void *d = dalloc(bytes);
    CUDA_OK(cudaMemcpy(d, src, bytes, cudaMemcpyHostToDevice));
    return d;
}

static void download(void *dst, const void *src, size_t bytes)
{
    CUDA_OK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}

static void *run_rank(void *arg)
{
    rank_job *job = arg;
    CUDA_OK(cudaSetDevice(job->rank));
    fs_context *ctx = NULL;
    CHECK(fs_context_create(&ctx, FS_DEVICE_CUDA, job->rank) == FS_OK, "context on GPU %d",
          job->rank);
    ncclComm_t comm = NULL;
    if (job->ranks > 1) {
        CHECK(ncclCommInitRank(&comm, job->ranks, job->id, job->rank) == ncclSuccess,
              "ncclCommInitRank rank %d", job->rank);
        FS_OK_(ctx, fs_context_set_vocab_shard(ctx, comm, job->vocab_offset, V));
    }
    fs_lm_head head = {upload(h_weight + job->vocab_offset * D,
                              sizeof(uint16_t) * job->vocab_size * D),
                       job->vocab_size, D, FS_DTYPE_BF16};
    void *hidden = upload(h_hidden, sizeof(uint16_t) * ROWS * D);
    fs_sampling p = {upload(h_temp, sizeof h_temp), upload(h_seed, sizeof h_seed),
                     upload(h_off, sizeof h_off), NULL, NULL};
    fs_drafts dr = {REQS, n_drafts, MAXD, upload(h_drafts, sizeof(int32_t) * (size_t)n_drafts),
                    upload(h_offsets, sizeof h_offsets)};

    size_t ws_bytes = 0, b;
    FS_OK_(ctx, fs_sample_workspace_size(ctx, ROWS, job->vocab_size, &b));
    ws_bytes = b;
    FS_OK_(ctx, fs_draft_argmax_workspace_size(ctx, ROWS, job->vocab_size, &b));
    ws_bytes = b > ws_bytes ? b : ws_bytes;
    FS_OK_(ctx, fs_verify_workspace_size(ctx, REQS, n_drafts, job->vocab_size, &b));
    ws_bytes = b > ws_bytes ? b : ws_bytes;
    void *ws = dalloc(ws_bytes);
    outputs o;
    int32_t *d_tok = dalloc(sizeof o.verify_tok), *d_st = dalloc(sizeof o.sample_st),
            *d_n = dalloc(sizeof o.verify_n);
    float *d_val = dalloc(sizeof o.verify_lp);

    FS_OK_(ctx, fs_sample(ctx, &head, hidden, ROWS, &p, ws, ws_bytes, d_tok, d_val, d_st));
    download(o.sample_tok, d_tok, sizeof o.sample_tok);
    download(o.sample_lp, d_val, sizeof o.sample_lp);
    download(o.sample_st, d_st, sizeof o.sample_st);

    FS_OK_(ctx, fs_draft_argmax(ctx, &head, hidden, ROWS, ws, ws_bytes, d_tok, d_val, d_st));
    download(o.argmax_tok, d_tok, sizeof o.argmax_tok);
    download(o.argmax_val, d_val, sizeof o.argmax_val);
    download(o.argmax_st, d_st, sizeof o.argmax_st);

    FS_OK_(ctx, fs_verify(ctx, &head, hidden, &dr, &p, ws, ws_bytes, d_tok, d_n, d_val, d_st));
    download(o.verify_tok, d_tok, sizeof o.verify_tok);
    download(o.verify_lp, d_val, sizeof o.verify_lp);
    download(o.verify_n, d_n, sizeof o.verify_n);
    download(o.verify_st, d_st, sizeof o.verify_st);
    CUDA_OK(cudaDeviceSynchronize());
    job->out = o;

    if (comm)
        ncclCommDestroy(comm);
    fs_context_destroy(ctx);
    cudaFree(ws), cudaFree(d_tok), cudaFree(d_st), cudaFree(d_n), cudaFree(d_val);
    cudaFree((void *)head.weight), cudaFree(hidden);
    cudaFree((void *)p.temperature), cudaFree((void *)p.seed), cudaFree((void *)p.offset);
    cudaFree((void *)dr.draft_tokens), cudaFree((void *)dr.draft_offsets);
    return NULL;
}

static int near(float a, float b)
{
    return fabsf(a - b) <= 1e-4f * (1.0f + fabsf(b));
}

/* Tokens and statuses must match exactly; logprobs up to the rounding of the
 * order in which shard partition functions are summed. */
static int compare(const outputs *a, const outputs *ref, const char *what)
{
    int bad = 0;
    for (int r = 0; r < ROWS; ++r) {
        bad += a->sample_tok[r] != ref->sample_tok[r] || a->sample_st[r] != ref->sample_st[r] ||
               !near(a->sample_lp[r], ref->sample_lp[r]);
        bad += a->argmax_tok[r] != ref->argmax_tok[r] || a->argmax_val[r] != ref->argmax_val[r];
    }
    for (int r = 0; r < REQS; ++r) {
        bad += a->verify_n[r] != ref->verify_n[r] || a->verify_st[r] != ref->verify_st[r];
        for (int k = 0; k < MAXD + 1; ++k) {
            int i = r * (MAXD + 1) + k;
            bad += a->verify_tok[i] != ref->verify_tok[i];
            if (k < a->verify_n[r])
                bad += !near(a->verify_lp[i], ref->verify_lp[i]);
        }
    }
    printf("%-28s %s (%d mismatching fields)\n", what, bad ? "DIFFERS" : "equal", bad);
    return bad;
}

int main(void)
{
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 2) {
        printf("SKIP: tensor-parallel test needs >= 2 GPUs (found %d)\n", ndev);
        return 77;
    }
    int ranks = ndev < MAXRANKS ? ndev : MAXRANKS;
    make_inputs();

    rank_job ref = {.rank = 0, .ranks = 1, .vocab_offset = 0, .vocab_size = V};
    run_rank(&ref);
    int accepted = 0;
    for (int r = 0; r < REQS; ++r)
        accepted += ref.out.verify_n[r];
    printf("reference on GPU 0: %d verify tokens emitted over %d requests\n", accepted, REQS);

    int failures = 0;
    for (int n = 2; n <= ranks; n *= 2) {
        rank_job jobs[MAXRANKS];
        pthread_t th[MAXRANKS];
        ncclUniqueId id;
        CHECK(ncclGetUniqueId(&id) == ncclSuccess, "ncclGetUniqueId");
        /* ragged shards: rank k holds a share proportional to k + 1, cut on a
           noise-block boundary (16 token ids), as fs_context_set_vocab_shard
           requires; the last shard's odd end is the vocabulary's */
        int64_t total_w = (int64_t)n * (n + 1) / 2, at = 0;
        for (int k = 0; k < n; ++k) {
            int64_t size = k == n - 1 ? V - at : ((int64_t)V * (k + 1) / total_w) / 16 * 16;
            jobs[k] = (rank_job){.rank = k, .ranks = n, .vocab_offset = at, .vocab_size = size, .id = id};
            at += size;
        }
        for (int k = 0; k < n; ++k)
            CHECK(pthread_create(&th[k], NULL, run_rank, &jobs[k]) == 0, "pthread_create");
        for (int k = 0; k < n; ++k)
            pthread_join(th[k], NULL);
        char what[64];
        for (int k = 0; k < n; ++k) {
            CHECK(memcmp(&jobs[k].out, &jobs[0].out, sizeof(outputs)) == 0,
                  "TP=%d: rank %d output is not bit-identical to rank 0", n, k);
        }
        printf("TP=%d: all %d ranks bit-identical\n", n, n);
        snprintf(what, sizeof what, "TP=%d vs single GPU:", n);
        failures += compare(&jobs[0].out, &ref.out, what) != 0;
    }
    printf("%d passed, %d failed\n", failures ? 0 : 1, failures ? 1 : 0);
    return failures ? 1 : 0;
}

#else
int main(void)
{
    printf("SKIP: flashspec built without NCCL\n");
    return 77;
}
#endif
