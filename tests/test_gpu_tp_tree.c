/* Tensor-parallel tree verify: the vocabulary split into ragged shards over
 * every visible GPU (one thread and one NCCL rank each).  Every rank must
 * produce bit-identical outputs, equal to one GPU's over the whole
 * vocabulary with the same trees and seeds: tokens, accepted node paths,
 * counts and statuses exactly, logprobs within the rounding of the order in
 * which the shards' partition functions are summed.
 *
 * Cases: fused (bf16 head) and over logits (fp32, each rank its own columns),
 * mixed trees, stars of 16 children at the root (children spread over every
 * shard), chains, a batch past 160 rows (the rows-as-M Hopper kernel on an
 * H100), greedy to hot temperatures, bias and a mask, and bad requests
 * (a parent after its child, a token outside the vocabulary, and over
 * logits a NaN that only the last shard's rank sees) that must fail alike
 * on every rank without a hang.  Filters: top-k / top-p / min-p per
 * request (one bad value: FS_ROW_BAD_FILTER) over logits, whose scores are
 * the same floats in the one pass and the second: rows resolved from the
 * exchanged summaries and rows the second pass draws over the shards (wide
 * nuclei), kept children's scores then all-reduced; second-pass counts
 * bit-identical over the ranks (a rank's count may differ from one GPU's,
 * whose candidate prefix is another).  A first child is its parent row's
 * argmax 80% of the time, so walks go deep and stop everywhere.  Skipped
 * (77) with fewer than two GPUs or without NCCL. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flashspec.h"

#ifdef FS_HAVE_NCCL
#include "tp_util.h"

#include "fs_test.h"
#include "tree_test.h"

enum { V = 50021, D = 256, MAXRANKS = 8, NCASES = 7 };

typedef struct tcase {
    const char *name;
    int fused;
    int64_t R, max_nodes, max_depth, max_children;
    int bias_mask, bad_requests;
    int filters;
} tcase;

static const tcase cases[NCASES] = {
    {"mixed, fused", 1, 12, 10, 4, 4, 0, 1},
    {"stars of 16, fused", 1, 8, 16, 1, 16, 1, 0},
    {"past 160 rows, fused", 1, 40, 8, 5, 3, 1, 1},
    {"mixed, logits", 0, 10, 12, 4, 4, 1, 1},
    {"chains, logits", 0, 9, 6, 6, 1, 0, 0},
    {"mixed, logits, filters", 0, 12, 12, 4, 4, 1, 1, 1},
    {"stars of 16, logits, filt", 0, 8, 16, 1, 16, 0, 0, 1},
};

/* Filter values of request r (filtered cases): top-k 50, top-p 0.9, min-p
 * 0.05, all three, k = 1, a wide nucleus, none, and a bad k. */
enum { NFILT = 8 };
static const int32_t FILT_K[NFILT] = {50, 0, 0, 50, 1, 0, 0, -1};
static const float FILT_P[NFILT] = {1.0f, 0.9f, 1.0f, 0.9f, 1.0f, 0.995f, 1.0f, 1.0f};
static const float FILT_MP[NFILT] = {0.0f, 0.0f, 0.05f, 0.05f, 0.0f, 0.0f, 0.0f, 0.0f};

/* One case's host inputs, shared by every rank. */
typedef struct tprob {
    fstt_tree tr;
    int64_t rows, words;
    uint16_t *hidden;   /* fused: [rows, D] bf16 */
    float *logits;      /* logits: [rows, V] */
    float *temperature, *bias;
    uint64_t *seed, *offset;
    uint32_t *allowed;
    int32_t *top_k; /* filtered cases */
    float *top_p, *min_p;
} tprob;

/* What a run returns for one case. */
typedef struct tout {
    int32_t *tok, *path, *nem, *st;
    int32_t *fb; /* filtered cases: second-pass rows per request */
    float *lp;
    size_t ntok, npath, nreq;
} tout;

static uint16_t *h_weight; /* [V, D] bf16 */
static tprob probs[NCASES];

static float from_bf16(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Row `row`'s best allowed score (after bias) and its token, on the host in
 * float: only used to pick likely children, so rounding does not matter. */
static int32_t host_argmax(const tprob *pb, int64_t row)
{
    float best = -INFINITY;
    int32_t arg = 0;
    for (int64_t v = 0; v < V; ++v) {
        if (pb->allowed && !((pb->allowed[row * pb->words + v / 32] >> (v % 32)) & 1u))
            continue;
        float l;
        if (pb->logits) {
            l = pb->logits[row * V + v];
        } else {
            l = 0.0f;
            for (int64_t k = 0; k < D; ++k)
                l += from_bf16(h_weight[v * D + k]) * from_bf16(pb->hidden[row * D + k]);
        }
        if (pb->bias)
            l += pb->bias[row * V + v];
        if (l > best)
            best = l, arg = (int32_t)v;
    }
    return arg;
}

static void make_case(int ci, tprob *pb)
{
    const tcase *c = &cases[ci];
    fst_rng g;
    fst_rng_seed(&g, 4242 + (uint64_t)ci);
    memset(pb, 0, sizeof *pb);
    pb->rows = fstt_make_shapes(&pb->tr, c->R, c->max_nodes, c->max_depth, c->max_children,
                                77 + (uint64_t)ci);
    const int64_t rows = pb->rows, R = c->R;
    pb->words = (V + 31) / 32;
    if (c->fused) {
        pb->hidden = malloc(sizeof(uint16_t) * (size_t)(rows * D));
        for (int64_t i = 0; i < rows * D; ++i)
            pb->hidden[i] = tp_to_bf16((float)((fst_unif(&g) - 0.5) * 3.46));
    } else {
        pb->logits = malloc(sizeof(float) * (size_t)(rows * V));
        for (int64_t i = 0; i < rows * V; ++i) /* a heavy top: cubed uniforms, std ~2.5 */
            pb->logits[i] = (float)(8.0 * pow(fst_unif(&g) - 0.5, 3.0) * 8.0);
    }
    if (c->bias_mask) {
        pb->bias = malloc(sizeof(float) * (size_t)(rows * V));
        pb->allowed = malloc(sizeof(uint32_t) * (size_t)(rows * pb->words));
        for (int64_t i = 0; i < rows * V; ++i)
            pb->bias[i] = fst_unif(&g) < 0.01 ? (float)(fst_unif(&g) * 4.0 - 2.0) : 0.0f;
        for (int64_t i = 0; i < rows * pb->words; ++i)
            pb->allowed[i] = (uint32_t)(fst_unif(&g) * 4294967295.0) | 0x11111111u;
    }
    static const float temps[] = {0.0f, 0.05f, 0.7f, 1.0f, 1.3f, 2.0f};
    pb->temperature = malloc(sizeof(float) * (size_t)R);
    pb->seed = malloc(sizeof(uint64_t) * (size_t)R);
    pb->offset = malloc(sizeof(uint64_t) * (size_t)R);
    for (int64_t r = 0; r < R; ++r) {
        pb->temperature[r] = temps[r % 6];
        pb->seed[r] = 9000 + 31 * (uint64_t)r + (uint64_t)ci;
        pb->offset[r] = (uint64_t)r;
    }
    if (c->filters) {
        pb->top_k = malloc(sizeof(int32_t) * (size_t)R);
        pb->top_p = malloc(sizeof(float) * (size_t)R);
        pb->min_p = malloc(sizeof(float) * (size_t)R);
        for (int64_t r = 0; r < R; ++r) {
            pb->top_k[r] = FILT_K[r % NFILT];
            pb->top_p[r] = FILT_P[r % NFILT];
            pb->min_p[r] = FILT_MP[r % NFILT];
        }
    }
    /* children: the parent row's argmax for a first child 80% of the time,
       else a uniform token (accepted at high temperature only, rejected
       siblings move the recovery elsewhere) */
    fstt_tree *tr = &pb->tr;
    for (int64_t r = 0; r < R; ++r) {
        const int64_t begin = tr->offsets[r], n = tr->offsets[r + 1] - begin;
        int first_child_seen[64] = {0};
        for (int64_t j = 0; j < n; ++j) {
            const int32_t par = tr->parents[begin + j]; /* -1 = root */
            const int64_t prow = begin + r + 1 + par;   /* the root's row is begin + r */
            const int first = !first_child_seen[par + 1]++;
            tr->tokens[begin + j] = first && fst_unif(&g) < 0.8
                                        ? host_argmax(pb, prow)
                                        : (int32_t)fst_randint(&g, V - 1);
        }
    }
    if (c->bad_requests) {
        /* the first request with two nodes gets a parent after its child,
           the next one with a node a token outside the vocabulary */
        int64_t r = 1;
        while (r < R && tr->offsets[r + 1] - tr->offsets[r] < 2)
            ++r;
        CHECK(r < R, "%s: no request with two nodes", c->name);
        tr->parents[tr->offsets[r]] = tr->offsets[r + 1] - tr->offsets[r] - 1;
        for (++r; r < R && tr->offsets[r + 1] == tr->offsets[r]; ++r)
            ;
        CHECK(r < R, "%s: no request left for a bad token", c->name);
        tr->tokens[tr->offsets[r]] = V + 5;
        if (pb->logits) {
            /* the next request with a node: a NaN logit in its first
               node's row, in the last shard only (the top of the
               vocabulary), so one rank alone sees it and every rank must
               fail the request with FS_ROW_NONFINITE */
            for (++r; r < R && tr->offsets[r + 1] == tr->offsets[r]; ++r)
                ;
            CHECK(r < R, "%s: no request left for a NaN logit", c->name);
            const int64_t row = tr->offsets[r] + r + 1, v = V - 3;
            pb->logits[row * V + v] = NAN;
            if (pb->allowed) /* allowed, or the mask would hide it */
                pb->allowed[row * pb->words + v / 32] |= 1u << (v % 32);
        }
    }
}

typedef struct rank_job {
    int rank, ranks;
    int64_t vocab_offset, vocab_size; /* shard; the whole vocabulary for the reference */
    ncclUniqueId id;
    tout out[NCASES];
} rank_job;

static void run_case(fs_context *ctx, const fs_lm_head *head, const rank_job *job, int ci,
                     tout *o)
{
    const tcase *c = &cases[ci];
    const tprob *pb = &probs[ci];
    const fs_draft_tree *t = &pb->tr.t;
    const int64_t R = c->R, S = t->max_depth + 1, rows = pb->rows;
    fs_draft_tree dt = *t;
    dt.tokens = tp_upload(t->tokens, sizeof(int32_t) * (size_t)t->num_nodes);
    dt.parents = tp_upload(t->parents, sizeof(int32_t) * (size_t)t->num_nodes);
    dt.node_offsets = tp_upload(t->node_offsets, sizeof(int32_t) * (size_t)(R + 1));
    fs_sampling p;
    memset(&p, 0, sizeof p);
    p.temperature = tp_upload(pb->temperature, sizeof(float) * (size_t)R);
    p.seed = tp_upload(pb->seed, sizeof(uint64_t) * (size_t)R);
    p.offset = tp_upload(pb->offset, sizeof(uint64_t) * (size_t)R);
    p.logit_bias = tp_upload(pb->bias, sizeof(float) * (size_t)(rows * V));
    p.allowed = tp_upload(pb->allowed, sizeof(uint32_t) * (size_t)(rows * pb->words));
    p.top_k = tp_upload(pb->top_k, sizeof(int32_t) * (size_t)R);
    p.top_p = tp_upload(pb->top_p, sizeof(float) * (size_t)R);
    p.min_p = tp_upload(pb->min_p, sizeof(float) * (size_t)R);
    p.out_filter_fallback = c->filters ? tp_dalloc(sizeof(int32_t) * (size_t)R) : NULL;

    size_t ws_bytes = 0;
    FS_OK_(ctx, fs_verify_tree_workspace_size(ctx, R, t->num_nodes, job->vocab_size, &ws_bytes));
    void *ws = tp_dalloc(ws_bytes);
    o->ntok = (size_t)(R * S);
    o->npath = (size_t)(R * t->max_depth);
    o->nreq = (size_t)R;
    int32_t *d_tok = tp_dalloc(sizeof(int32_t) * o->ntok), *d_path = tp_dalloc(sizeof(int32_t) * o->npath);
    int32_t *d_nem = tp_dalloc(sizeof(int32_t) * o->nreq), *d_st = tp_dalloc(sizeof(int32_t) * o->nreq);
    float *d_lp = tp_dalloc(sizeof(float) * o->ntok);
    void *shard_input = NULL;
    if (c->fused) {
        shard_input = tp_upload(pb->hidden, sizeof(uint16_t) * (size_t)(rows * D));
        FS_OK_(ctx, fs_verify_tree(ctx, head, shard_input, &dt, &p, ws, ws_bytes, d_tok, d_path,
                                   d_nem, d_lp, d_st));
    } else {
        /* this rank's columns of the logits, contiguous */
        float *cols = malloc(sizeof(float) * (size_t)(rows * job->vocab_size));
        for (int64_t r = 0; r < rows; ++r)
            memcpy(cols + r * job->vocab_size, pb->logits + r * V + job->vocab_offset,
                   sizeof(float) * (size_t)job->vocab_size);
        shard_input = tp_upload(cols, sizeof(float) * (size_t)(rows * job->vocab_size));
        free(cols);
        FS_OK_(ctx, fs_verify_tree_logits(ctx, shard_input, FS_DTYPE_F32, job->vocab_size, &dt, &p,
                                          ws, ws_bytes, d_tok, d_path, d_nem, d_lp, d_st));
    }
    o->tok = malloc(sizeof(int32_t) * o->ntok);
    o->path = malloc(sizeof(int32_t) * (o->npath ? o->npath : 1));
    o->nem = malloc(sizeof(int32_t) * o->nreq);
    o->st = malloc(sizeof(int32_t) * o->nreq);
    o->lp = malloc(sizeof(float) * o->ntok);
    o->fb = calloc(o->nreq, sizeof(int32_t));
    if (p.out_filter_fallback)
        tp_download(o->fb, p.out_filter_fallback, sizeof(int32_t) * o->nreq);
    tp_download(o->tok, d_tok, sizeof(int32_t) * o->ntok);
    tp_download(o->path, d_path, sizeof(int32_t) * o->npath);
    tp_download(o->nem, d_nem, sizeof(int32_t) * o->nreq);
    tp_download(o->st, d_st, sizeof(int32_t) * o->nreq);
    tp_download(o->lp, d_lp, sizeof(float) * o->ntok);
    CUDA_OK(cudaDeviceSynchronize());
    cudaFree(ws), cudaFree(d_tok), cudaFree(d_path), cudaFree(d_nem), cudaFree(d_st);
    cudaFree(d_lp), cudaFree(shard_input);
    cudaFree((void *)dt.tokens), cudaFree((void *)dt.parents), cudaFree((void *)dt.node_offsets);
    cudaFree((void *)p.temperature), cudaFree((void *)p.seed), cudaFree((void *)p.offset);
    cudaFree((void *)p.logit_bias), cudaFree((void *)p.allowed);
    cudaFree((void *)p.top_k), cudaFree((void *)p.top_p), cudaFree((void *)p.min_p);
    cudaFree(p.out_filter_fallback);
}

static void *run_rank(void *arg)
{
    rank_job *job = arg;
    ncclComm_t comm;
    fs_context *ctx = tp_open_rank(job->rank, job->ranks, &job->id, job->vocab_offset, V, &comm);
    fs_lm_head head = {tp_upload(h_weight + job->vocab_offset * D,
                              sizeof(uint16_t) * (size_t)(job->vocab_size * D)),
                       job->vocab_size, D, FS_DTYPE_BF16};
    for (int ci = 0; ci < NCASES; ++ci)
        run_case(ctx, &head, job, ci, &job->out[ci]);
    cudaFree((void *)head.weight);
    tp_close_rank(ctx, comm);
    return NULL;
}

static int same_bits(const tout *a, const tout *b)
{
    return !memcmp(a->tok, b->tok, sizeof(int32_t) * a->ntok) &&
           !memcmp(a->path, b->path, sizeof(int32_t) * a->npath) &&
           !memcmp(a->nem, b->nem, sizeof(int32_t) * a->nreq) &&
           !memcmp(a->st, b->st, sizeof(int32_t) * a->nreq) &&
           !memcmp(a->fb, b->fb, sizeof(int32_t) * a->nreq) &&
           !memcmp(a->lp, b->lp, sizeof(float) * a->ntok);
}

/* Tokens, paths, counts and statuses exactly; logprobs within rounding. */
static int compare(const tout *a, const tout *ref, int ci, int tp)
{
    int bad = 0;
    const int64_t S = probs[ci].tr.t.max_depth + 1, MD = probs[ci].tr.t.max_depth;
    for (size_t r = 0; r < ref->nreq; ++r) {
        int req_bad = a->nem[r] != ref->nem[r] || a->st[r] != ref->st[r];
        for (int64_t k = 0; k < S; ++k) {
            req_bad |= a->tok[r * S + k] != ref->tok[r * S + k];
            const float x = a->lp[r * S + k], y = ref->lp[r * S + k];
            req_bad |= !(isnan(x) && isnan(y)) && !tp_near(x, y); /* NaN: padding */
        }
        for (int64_t k = 0; k < MD; ++k)
            req_bad |= a->path[r * MD + k] != ref->path[r * MD + k];
        if (req_bad && bad < 3)
            printf("  TP=%d %s: request %zu differs: emitted %d vs %d, status %d vs %d\n", tp,
                   cases[ci].name, r, a->nem[r], ref->nem[r], a->st[r], ref->st[r]);
        bad += req_bad;
    }
    return bad;
}

int main(void)
{
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev < 2) {
        printf("SKIP: tensor-parallel tree test needs >= 2 GPUs (found %d)\n", ndev);
        return 77;
    }
    const int ranks = ndev < MAXRANKS ? ndev : MAXRANKS;
    fst_rng g;
    fst_rng_seed(&g, 99);
    h_weight = malloc(sizeof(uint16_t) * (size_t)V * D);
    for (int64_t i = 0; i < (int64_t)V * D; ++i) /* logits of std ~3 */
        h_weight[i] = tp_to_bf16((float)((fst_unif(&g) - 0.5) * 3.46 * 3.0 / sqrt(D)));
    for (int ci = 0; ci < NCASES; ++ci)
        make_case(ci, &probs[ci]);

    static rank_job ref;
    ref = (rank_job){.rank = 0, .ranks = 1, .vocab_offset = 0, .vocab_size = V};
    run_rank(&ref);
    for (int ci = 0; ci < NCASES; ++ci) {
        int emitted = 0, failed = 0, deep = 0, second = 0, bad_filter = 0;
        for (size_t r = 0; r < ref.out[ci].nreq; ++r) {
            emitted += ref.out[ci].nem[r];
            failed += ref.out[ci].st[r] != FS_ROW_OK;
            deep += ref.out[ci].nem[r] > 2;
            second += ref.out[ci].fb[r];
            /* a request with a bad filter value fails (with FS_ROW_BAD_FILTER
               unless its tree failed first) */
            if (cases[ci].filters && probs[ci].top_k[r] < 0)
                bad_filter += ref.out[ci].st[r] != FS_ROW_OK ? 1 : -1000;
        }
        printf("reference %-22s %4lld rows: %d tokens emitted, %d requests past depth 1, "
               "%d failed requests, %d second-pass rows\n",
               cases[ci].name, (long long)probs[ci].rows, emitted, deep, failed, second);
        CHECK(!cases[ci].bad_requests || failed >= (cases[ci].fused ? 2 : 3),
              "the bad requests must fail");
        CHECK(!cases[ci].filters || (second > 0 && bad_filter > 0),
              "%s: a filtered case must take the second pass and fail its bad filter",
              cases[ci].name);
    }

    int failures = 0;
    static rank_job jobs[MAXRANKS];
    for (int n = 2; n <= ranks; n *= 2) {
        pthread_t th[MAXRANKS];
        ncclUniqueId id;
        CHECK(ncclGetUniqueId(&id) == ncclSuccess, "ncclGetUniqueId");
        int64_t offset[MAXRANKS], size[MAXRANKS];
        tp_ragged_shards(n, V, offset, size);
        for (int k = 0; k < n; ++k)
            jobs[k] = (rank_job){.rank = k, .ranks = n, .vocab_offset = offset[k],
                                 .vocab_size = size[k], .id = id};
        for (int k = 0; k < n; ++k)
            CHECK(pthread_create(&th[k], NULL, run_rank, &jobs[k]) == 0, "pthread_create");
        for (int k = 0; k < n; ++k)
            pthread_join(th[k], NULL);
        for (int ci = 0; ci < NCASES; ++ci) {
            int identical = 1;
            for (int k = 1; k < n; ++k)
                identical &= same_bits(&jobs[k].out[ci], &jobs[0].out[ci]);
            int bad = compare(&jobs[0].out[ci], &ref.out[ci], ci, n);
            int second = 0;
            for (size_t r = 0; r < jobs[0].out[ci].nreq; ++r)
                second += jobs[0].out[ci].fb[r];
            printf("TP=%d %-22s ranks %s, vs one GPU: %s (%d requests differ), %d second-pass "
                   "rows\n",
                   n, cases[ci].name, identical ? "bit-identical" : "DIFFER",
                   bad ? "DIFFERS" : "equal", bad, second);
            failures += !identical || bad;
        }
    }
    printf("%d failed\n", failures);
    return failures ? 1 : 0;
}

#else
int main(void)
{
    printf("SKIP: flashspec built without NCCL\n");
    return 77;
}
#endif
