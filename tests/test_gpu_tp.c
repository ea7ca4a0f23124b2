/* Tensor parallel: the LM head sharded over the vocabulary (ragged shards)
 * across every visible GPU, one thread and one NCCL rank per GPU.  Every rank
 * must produce bit-identical outputs, equal to a single-GPU run of the whole
 * head with the same seeds.  Skipped (77) with fewer than two GPUs.
 *
 * Filters: sample and verify (ragged drafts: the argmax of each position,
 * so that some are accepted) under k = 50, p = 0.9, min_p = 0.05, all
 * three, k = 1, p = 1e-6, per-row values (with a wide k and a wide nucleus,
 * which take the second pass), the same with a logit bias and a mask, bad
 * values on some rows (their status on every rank, no hang), and one call
 * captured in a CUDA graph (the second pass then runs without reading the
 * handed-over count).  Everything runs twice: as is, and with every filtered
 * row forced through the second pass (FLASHSPEC_FILTER_SECOND_PASS=1).
 * Their LM head makes every logit exact in fp32 whatever the summation order
 * (entries multiples of 1/8, hidden states multiples of 1/2, as in
 * test_gpu_filter.c), so token ids, statuses and fallback counts must equal
 * the single GPU's exactly, through the second pass too.  The single GPU
 * that must match field for field runs without its wide resolve
 * (FLASHSPEC_FILTER_WIDE=0), as sharded contexts do; against one with it,
 * tokens, statuses and logprobs must still match, and the shards may only
 * hand over more rows. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "flashspec.h"

#ifdef FS_HAVE_NCCL
#include "tp_util.h"

enum { ROWS = 37, D = 512, V = 50021, REQS = 9, MAXD = 4, MAXRANKS = 8 };

/* Filter cases; per-row values, bias + mask and bad values use the table
   below row by row. */
enum { FCASES = 9, FCAPTURED = 3 /* the case also run under graph capture */ };
static const char *FNAME[FCASES] = {"k=50",        "p=0.9",  "min_p=0.05",
                                    "all three",   "k=1",    "p=1e-6",
                                    "per row",     "per row + bias + mask", "bad values"};
static const int32_t FK[FCASES] = {50, 0, 0, 50, 1, 0, -1, -1, -1};
static const float FP[FCASES] = {1.0f, 0.9f, 1.0f, 0.9f, 1.0f, 1e-6f, -1, -1, -1};
static const float FMP[FCASES] = {0.0f, 0.0f, 0.05f, 0.05f, 0.0f, 0.0f, -1, -1, -1};
enum { PER_ROW = 8 };
static const int32_t RK[PER_ROW] = {50, 0, 0, 50, 1, 200, 0, 0};
static const float RP[PER_ROW] = {1.0f, 0.9f, 1.0f, 0.9f, 1.0f, 1.0f, 0.995f, 1e-6f};
static const float RMP[PER_ROW] = {0.0f, 0.0f, 0.05f, 0.05f, 0.0f, 0.0f, 0.0f, 0.0f};

/* Inputs shared by every rank (host copies). */
static uint16_t *h_weight, *h_hidden;
static uint16_t *h_xweight, *h_xhidden; /* the exact head */
static float *h_bias;                   /* [ROWS, V], multiples of 1/16 */
static uint32_t *h_mask;                /* [ROWS, ceil(V / 32)] */
static int32_t h_fk[FCASES][ROWS];
static float h_fp[FCASES][ROWS], h_fmp[FCASES][ROWS];
static int32_t h_xdrafts[REQS * MAXD]; /* argmax drafts of the exact head */
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
    /* filtered, per case; fcapt: case FCAPTURED's sample under graph capture */
    int32_t fs_tok[FCASES][ROWS], fs_st[FCASES][ROWS], fs_fb[FCASES][ROWS];
    float fs_lp[FCASES][ROWS];
    int32_t fv_tok[FCASES][REQS * (MAXD + 1)], fv_n[FCASES][REQS], fv_st[FCASES][REQS],
        fv_fb[FCASES][REQS];
    float fv_lp[FCASES][REQS * (MAXD + 1)];
    int32_t fcapt_tok[ROWS], fcapt_st[ROWS], fcapt_fb[ROWS];
    float fcapt_lp[ROWS];
} outputs;

typedef struct rank_job {
    int rank, ranks;
    int64_t vocab_offset, vocab_size; /* shard; the whole vocabulary for the reference */
    ncclUniqueId id;
    outputs *out;
} rank_job;

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
        h_weight[i] = tp_to_bf16((float)((uniform01(&s) - 0.5) * 3.46 * 3.0 / sqrt(D)));
    for (int64_t i = 0; i < (int64_t)ROWS * D; ++i)
        h_hidden[i] = tp_to_bf16((float)((uniform01(&s) - 0.5) * 3.46));
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

    /* the exact head: W = k / 8 (k in -4..4), H = j / 2 (j in -2..2) */
    h_xweight = malloc(sizeof(uint16_t) * V * D);
    h_xhidden = malloc(sizeof(uint16_t) * ROWS * D);
    float *wf = malloc(sizeof(float) * V * D), hf[D];
    for (int64_t i = 0; i < (int64_t)V * D; ++i) {
        wf[i] = (float)((int)(uniform01(&s) * 9.0) - 4) / 8.0f;
        h_xweight[i] = tp_to_bf16(wf[i]);
    }
    for (int r = 0; r < ROWS; ++r)
        for (int k = 0; k < D; ++k)
            h_xhidden[r * D + k] = tp_to_bf16((float)((int)(uniform01(&s) * 5.0) - 2) / 2.0f);
    /* drafts: each position's argmax (row begin + r + j of the target), so
       that verify accepts some */
    for (int r = 0; r < REQS; ++r)
        for (int j = 0; j < h_offsets[r + 1] - h_offsets[r]; ++j) {
            const int row = h_offsets[r] + r + j;
            for (int k = 0; k < D; ++k) {
                const uint32_t u = (uint32_t)h_xhidden[row * D + k] << 16;
                memcpy(&hf[k], &u, 4);
            }
            float best = -INFINITY;
            int32_t arg = 0;
            for (int64_t v = 0; v < V; ++v) {
                float l = 0.0f;
                for (int k = 0; k < D; ++k)
                    l += wf[v * D + k] * hf[k];
                if (l > best) {
                    best = l;
                    arg = (int32_t)v;
                }
            }
            h_xdrafts[h_offsets[r] + j] = arg;
        }
    free(wf);
    const int64_t words = (V + 31) / 32;
    h_bias = malloc(sizeof(float) * ROWS * V);
    h_mask = malloc(sizeof(uint32_t) * ROWS * words);
    for (int64_t i = 0; i < (int64_t)ROWS * V; ++i)
        h_bias[i] = (float)((int)(uniform01(&s) * 33.0) - 16) / 16.0f;
    for (int64_t i = 0; i < (int64_t)ROWS * words; ++i) /* ~3/4 of the tokens allowed */
        h_mask[i] = (uint32_t)(uniform01(&s) * 4294967296.0) |
                    (uint32_t)(uniform01(&s) * 4294967296.0);
    for (int r = 0; r < ROWS; ++r) /* token 0 allowed: no row is wholly masked */
        h_mask[r * words] |= 1u;
    for (int c = 0; c < FCASES; ++c)
        for (int r = 0; r < ROWS; ++r) {
            const int q = (r + c) % PER_ROW;
            h_fk[c][r] = FK[c] >= 0 ? FK[c] : RK[q];
            h_fp[c][r] = FP[c] >= 0 ? FP[c] : RP[q];
            h_fmp[c][r] = FMP[c] >= 0 ? FMP[c] : RMP[q];
        }
    /* bad values: each field alone, on sample rows and verify requests */
    h_fk[FCASES - 1][3] = -1;
    h_fp[FCASES - 1][5] = 1.5f;
    h_fmp[FCASES - 1][7] = NAN;
    h_fp[FCASES - 1][11] = 0.0f;
}

static void *run_rank(void *arg)
{
    rank_job *job = arg;
    ncclComm_t comm;
    fs_context *ctx = tp_open_rank(job->rank, job->ranks, &job->id, job->vocab_offset, V, &comm);
    fs_lm_head head = {tp_upload(h_weight + job->vocab_offset * D,
                              sizeof(uint16_t) * job->vocab_size * D),
                       job->vocab_size, D, FS_DTYPE_BF16};
    void *hidden = tp_upload(h_hidden, sizeof(uint16_t) * ROWS * D);
    fs_sampling p = {tp_upload(h_temp, sizeof h_temp), tp_upload(h_seed, sizeof h_seed),
                     tp_upload(h_off, sizeof h_off), NULL, NULL};
    fs_drafts dr = {REQS, n_drafts, MAXD, tp_upload(h_drafts, sizeof(int32_t) * (size_t)n_drafts),
                    tp_upload(h_offsets, sizeof h_offsets)};

    size_t ws_bytes = 0, b;
    FS_OK_(ctx, fs_sample_workspace_size(ctx, ROWS, job->vocab_size, &b));
    ws_bytes = b;
    FS_OK_(ctx, fs_draft_argmax_workspace_size(ctx, ROWS, job->vocab_size, &b));
    ws_bytes = b > ws_bytes ? b : ws_bytes;
    FS_OK_(ctx, fs_verify_workspace_size(ctx, REQS, n_drafts, job->vocab_size, &b));
    ws_bytes = b > ws_bytes ? b : ws_bytes;
    void *ws = tp_dalloc(ws_bytes);
    outputs o;
    int32_t *d_tok = tp_dalloc(sizeof o.verify_tok), *d_st = tp_dalloc(sizeof o.sample_st),
            *d_n = tp_dalloc(sizeof o.verify_n);
    float *d_val = tp_dalloc(sizeof o.verify_lp);

    FS_OK_(ctx, fs_sample(ctx, &head, hidden, ROWS, &p, ws, ws_bytes, d_tok, d_val, d_st));
    tp_download(o.sample_tok, d_tok, sizeof o.sample_tok);
    tp_download(o.sample_lp, d_val, sizeof o.sample_lp);
    tp_download(o.sample_st, d_st, sizeof o.sample_st);

    FS_OK_(ctx, fs_draft_argmax(ctx, &head, hidden, ROWS, ws, ws_bytes, d_tok, d_val, d_st));
    tp_download(o.argmax_tok, d_tok, sizeof o.argmax_tok);
    tp_download(o.argmax_val, d_val, sizeof o.argmax_val);
    tp_download(o.argmax_st, d_st, sizeof o.argmax_st);

    FS_OK_(ctx, fs_verify(ctx, &head, hidden, &dr, &p, ws, ws_bytes, d_tok, d_n, d_val, d_st));
    tp_download(o.verify_tok, d_tok, sizeof o.verify_tok);
    tp_download(o.verify_lp, d_val, sizeof o.verify_lp);
    tp_download(o.verify_n, d_n, sizeof o.verify_n);
    tp_download(o.verify_st, d_st, sizeof o.verify_st);
    CUDA_OK(cudaDeviceSynchronize());

    /* the filters, on the exact head */
    fs_lm_head xhead = {tp_upload(h_xweight + job->vocab_offset * D,
                               sizeof(uint16_t) * job->vocab_size * D),
                        job->vocab_size, D, FS_DTYPE_BF16};
    void *xhidden = tp_upload(h_xhidden, sizeof(uint16_t) * ROWS * D);
    float *d_bias = tp_upload(h_bias, sizeof(float) * ROWS * V);
    uint32_t *d_mask = tp_upload(h_mask, sizeof(uint32_t) * ROWS * ((V + 31) / 32));
    int32_t *d_fk = tp_upload(h_fk, sizeof h_fk), *d_fb = tp_dalloc(sizeof(int32_t) * ROWS);
    float *d_fp = tp_upload(h_fp, sizeof h_fp), *d_fmp = tp_upload(h_fmp, sizeof h_fmp);
    fs_drafts xdr = dr;
    xdr.draft_tokens = tp_upload(h_xdrafts, sizeof(int32_t) * (size_t)n_drafts);
    for (int c = 0; c < FCASES; ++c) {
        fs_sampling fp = p;
        fp.top_k = d_fk + c * ROWS;
        fp.top_p = d_fp + c * ROWS;
        fp.min_p = d_fmp + c * ROWS;
        fp.out_filter_fallback = d_fb;
        if (c == FCASES - 2) {
            fp.logit_bias = d_bias;
            fp.allowed = d_mask;
        }
        FS_OK_(ctx, fs_sample(ctx, &xhead, xhidden, ROWS, &fp, ws, ws_bytes, d_tok, d_val, d_st));
        tp_download(o.fs_tok[c], d_tok, sizeof o.fs_tok[c]);
        tp_download(o.fs_lp[c], d_val, sizeof o.fs_lp[c]);
        tp_download(o.fs_st[c], d_st, sizeof o.fs_st[c]);
        tp_download(o.fs_fb[c], d_fb, sizeof o.fs_fb[c]);
        FS_OK_(ctx, fs_verify(ctx, &xhead, xhidden, &xdr, &fp, ws, ws_bytes, d_tok, d_n, d_val,
                              d_st));
        tp_download(o.fv_tok[c], d_tok, sizeof o.fv_tok[c]);
        tp_download(o.fv_lp[c], d_val, sizeof o.fv_lp[c]);
        tp_download(o.fv_n[c], d_n, sizeof o.fv_n[c]);
        tp_download(o.fv_st[c], d_st, sizeof o.fv_st[c]);
        tp_download(o.fv_fb[c], d_fb, sizeof o.fv_fb[c]);
    }
    {
        /* case FCAPTURED's sample captured in a graph on a stream of its
           own, then replayed */
        cudaStream_t st;
        CUDA_OK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
        FS_OK_(ctx, fs_context_set_stream(ctx, st));
        fs_sampling fp = p;
        fp.top_k = d_fk + FCAPTURED * ROWS;
        fp.top_p = d_fp + FCAPTURED * ROWS;
        fp.min_p = d_fmp + FCAPTURED * ROWS;
        fp.out_filter_fallback = d_fb;
        cudaGraph_t graph;
        cudaGraphExec_t exec;
        CUDA_OK(cudaMemset(d_tok, 0xff, sizeof o.fcapt_tok));
        CUDA_OK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
        FS_OK_(ctx, fs_sample(ctx, &xhead, xhidden, ROWS, &fp, ws, ws_bytes, d_tok, d_val, d_st));
        CUDA_OK(cudaStreamEndCapture(st, &graph));
        CUDA_OK(cudaGraphInstantiate(&exec, graph, 0));
        CUDA_OK(cudaGraphLaunch(exec, st));
        CUDA_OK(cudaStreamSynchronize(st));
        tp_download(o.fcapt_tok, d_tok, sizeof o.fcapt_tok);
        tp_download(o.fcapt_lp, d_val, sizeof o.fcapt_lp);
        tp_download(o.fcapt_st, d_st, sizeof o.fcapt_st);
        tp_download(o.fcapt_fb, d_fb, sizeof o.fcapt_fb);
        FS_OK_(ctx, fs_context_set_stream(ctx, NULL));
        cudaGraphExecDestroy(exec);
        cudaGraphDestroy(graph);
        cudaStreamDestroy(st);
    }
    CUDA_OK(cudaDeviceSynchronize());
    *job->out = o;
    cudaFree((void *)xhead.weight), cudaFree(xhidden), cudaFree(d_bias), cudaFree(d_mask);
    cudaFree(d_fk), cudaFree(d_fb), cudaFree(d_fp), cudaFree(d_fmp);
    cudaFree((void *)xdr.draft_tokens);

    tp_close_rank(ctx, comm);
    cudaFree(ws), cudaFree(d_tok), cudaFree(d_st), cudaFree(d_n), cudaFree(d_val);
    cudaFree((void *)head.weight), cudaFree(hidden);
    cudaFree((void *)p.temperature), cudaFree((void *)p.seed), cudaFree((void *)p.offset);
    cudaFree((void *)dr.draft_tokens), cudaFree((void *)dr.draft_offsets);
    return NULL;
}

/* Tokens and statuses must match exactly; logprobs up to the rounding of the
 * order in which shard partition functions are summed; second-pass counts
 * exactly, or (fb_more) at least the reference's. */
static int fb_bad(int32_t a, int32_t ref, int fb_more)
{
    return fb_more ? a < ref : a != ref;
}

static int compare(const outputs *a, const outputs *ref, const char *what, int fb_more)
{
    int bad = 0;
    for (int r = 0; r < ROWS; ++r) {
        bad += a->sample_tok[r] != ref->sample_tok[r] || a->sample_st[r] != ref->sample_st[r] ||
               !tp_near(a->sample_lp[r], ref->sample_lp[r]);
        bad += a->argmax_tok[r] != ref->argmax_tok[r] || a->argmax_val[r] != ref->argmax_val[r];
    }
    for (int r = 0; r < REQS; ++r) {
        bad += a->verify_n[r] != ref->verify_n[r] || a->verify_st[r] != ref->verify_st[r];
        for (int k = 0; k < MAXD + 1; ++k) {
            int i = r * (MAXD + 1) + k;
            bad += a->verify_tok[i] != ref->verify_tok[i];
            if (k < a->verify_n[r])
                bad += !tp_near(a->verify_lp[i], ref->verify_lp[i]);
        }
    }
    printf("%-28s %s (%d mismatching fields)\n", what, bad ? "DIFFERS" : "equal", bad);
    int fbad = 0;
    for (int c = 0; c < FCASES; ++c) {
        int cb = 0, fallbacks = 0, accepted = 0;
        for (int r = 0; r < ROWS; ++r) {
            cb += a->fs_tok[c][r] != ref->fs_tok[c][r] || a->fs_st[c][r] != ref->fs_st[c][r] ||
                  fb_bad(a->fs_fb[c][r], ref->fs_fb[c][r], fb_more);
            if (ref->fs_st[c][r] == FS_ROW_OK)
                cb += !tp_near(a->fs_lp[c][r], ref->fs_lp[c][r]);
            fallbacks += ref->fs_fb[c][r];
        }
        for (int r = 0; r < REQS; ++r) {
            cb += a->fv_n[c][r] != ref->fv_n[c][r] || a->fv_st[c][r] != ref->fv_st[c][r] ||
                  fb_bad(a->fv_fb[c][r], ref->fv_fb[c][r], fb_more);
            fallbacks += ref->fv_fb[c][r];
            accepted += ref->fv_n[c][r];
            for (int k = 0; k < MAXD + 1; ++k) {
                int i = r * (MAXD + 1) + k;
                cb += a->fv_tok[c][i] != ref->fv_tok[c][i];
                if (k < a->fv_n[c][r] && ref->fv_st[c][r] == FS_ROW_OK)
                    cb += !tp_near(a->fv_lp[c][i], ref->fv_lp[c][i]);
            }
        }
        printf("  filters %-24s %s (%d mismatching fields; reference: %d second-pass rows, "
               "%d verify tokens)\n",
               FNAME[c], cb ? "DIFFERS" : "equal", cb, fallbacks, accepted);
        fbad += cb;
    }
    int cb = 0;
    for (int r = 0; r < ROWS; ++r) {
        /* captured: the same as the reference's uncaptured call */
        const int c = FCAPTURED;
        cb += a->fcapt_tok[r] != ref->fs_tok[c][r] || a->fcapt_st[r] != ref->fs_st[c][r] ||
              fb_bad(a->fcapt_fb[r], ref->fs_fb[c][r], fb_more) ||
              !tp_near(a->fcapt_lp[r], ref->fs_lp[c][r]);
    }
    printf("  filters %-24s %s (%d mismatching fields)\n", "graph-captured sample",
           cb ? "DIFFERS" : "equal", cb);
    fbad += cb;
    int bads = 0;
    for (int r = 0; r < ROWS; ++r)
        bads += ref->fs_st[FCASES - 1][r] == FS_ROW_BAD_FILTER;
    for (int r = 0; r < REQS; ++r)
        bads += ref->fv_st[FCASES - 1][r] == FS_ROW_BAD_FILTER;
    if (bads != 7) { /* sample rows 3, 5, 7, 11; verify requests 3, 5, 7 */
        printf("  bad values: %d FS_ROW_BAD_FILTER statuses in the reference, expected 7\n", bads);
        ++fbad;
    }
    return bad + fbad;
}

/* The reference and TP = 2, 4, ... up to the GPUs; returns the failures. */
static int run_all(int ranks, const char *mode)
{
    static outputs ref_out, wide_out, outs[MAXRANKS];
    /* contexts read FLASHSPEC_FILTER_WIDE when they are created */
    rank_job ref = {.rank = 0, .ranks = 1, .vocab_offset = 0, .vocab_size = V, .out = &ref_out};
    setenv("FLASHSPEC_FILTER_WIDE", "0", 1);
    run_rank(&ref);
    unsetenv("FLASHSPEC_FILTER_WIDE");
    rank_job wide = ref;
    wide.out = &wide_out;
    run_rank(&wide);
    int accepted = 0;
    for (int r = 0; r < REQS; ++r)
        accepted += ref_out.verify_n[r];
    printf("[%s] reference on GPU 0: %d verify tokens emitted over %d requests\n", mode,
           accepted, REQS);

    int failures = 0;
    for (int n = 2; n <= ranks; n *= 2) {
        rank_job jobs[MAXRANKS];
        pthread_t th[MAXRANKS];
        ncclUniqueId id;
        CHECK(ncclGetUniqueId(&id) == ncclSuccess, "ncclGetUniqueId");
        int64_t offset[MAXRANKS], size[MAXRANKS];
        tp_ragged_shards(n, V, offset, size);
        for (int k = 0; k < n; ++k)
            jobs[k] = (rank_job){.rank = k, .ranks = n, .vocab_offset = offset[k],
                                 .vocab_size = size[k], .id = id, .out = &outs[k]};
        for (int k = 0; k < n; ++k)
            CHECK(pthread_create(&th[k], NULL, run_rank, &jobs[k]) == 0, "pthread_create");
        for (int k = 0; k < n; ++k)
            pthread_join(th[k], NULL);
        char what[64];
        for (int k = 0; k < n; ++k) {
            CHECK(memcmp(jobs[k].out, jobs[0].out, sizeof(outputs)) == 0,
                  "[%s] TP=%d: rank %d output is not bit-identical to rank 0", mode, n, k);
        }
        printf("[%s] TP=%d: all %d ranks bit-identical\n", mode, n, n);
        snprintf(what, sizeof what, "[%s] TP=%d vs single GPU:", mode, n);
        failures += compare(jobs[0].out, &ref_out, what, 0) != 0;
        snprintf(what, sizeof what, "[%s] TP=%d vs wide:", mode, n);
        failures += compare(jobs[0].out, &wide_out, what, 1) != 0;
    }
    return failures;
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
    /* contexts read FLASHSPEC_FILTER_SECOND_PASS when they are created: set
       here, before any rank's thread starts */
    unsetenv("FLASHSPEC_FILTER_SECOND_PASS");
    int failures = run_all(ranks, "one pass");
    setenv("FLASHSPEC_FILTER_SECOND_PASS", "1", 1);
    failures += run_all(ranks, "forced second pass");
    unsetenv("FLASHSPEC_FILTER_SECOND_PASS");
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
