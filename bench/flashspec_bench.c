/* flashspec benchmark: the fused ops against cuBLAS and unfused pipelines,
 * swept over shapes and row counts, in one process on one GPU.
 *
 * Timed per (shape, rows):
 *   sample  cublas_matmul, cublas+gumbel, cublas+softmax+multinomial,
 *           fs_sample (fused), cublas+fs_sample_logits
 *   argmax  cublas+argmax, fs_draft_argmax (fused), cublas+fs_draft_argmax_logits
 *   verify  (R requests x k drafts, R*(k+1) target rows) cublas_matmul,
 *           materialised_verify, fs_verify (fused), cublas+fs_verify_logits
 * A configuration's methods take turns in rounds (--rounds, --reps calls each
 * a round, warm-up first), the L2 flushed before every call outside the
 * timed region, CUDA events; reported: the median of all rounds' calls and
 * the range of the round medians.  The floor is V*D*2 bytes over the
 * measured device-to-device copy bandwidth (read + write bytes / time).
 * Fused ops must run within 1.05 x max(floor, cuBLAS matmul alone).
 * Run with --help for the flags. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "baselines.h"
#include "bench_util.h"
#include "flashspec.h"
#include "power.h"
#include "report.h"
#include "timing.h"

#define MAX_LIST 64
#define MAX_METHODS 10 /* timed in one configuration */
#define MAX_ROUNDS 64

typedef struct shape {
    int64_t vocab, dim;
} shape;

typedef struct options {
    shape shapes[MAX_LIST];
    int nshapes;
    int64_t rows[MAX_LIST];
    int nrows;
    int64_t requests[MAX_LIST];
    int nrequests;
    int drafts;
    float temperature; /* every request's (below 1e-5 the fused ops' rows are greedy) */
    int reps, warmup, rounds; /* reps: calls per method and round */
    int rotate;               /* rounds before the last start at other methods */
    int do_sample, do_argmax, do_verify;
    int tune_gemm;
    size_t copy_mib;
    int device;
    int clean_flush;
    int power; /* sample the SM clock and board power per method (power.h) */
    const char *alt; /* --alt VAR=VALUE: the fused ops again on a context made with it */
    const char *csv, *json;
} options;

typedef struct bench {
    options o;
    cudaStream_t stream;
    bench_timer timer;
    bench_power *power; /* --power; NULL: off or unavailable */
    fs_context *fs; /* NULL: the fused ops cannot run (reason in fs_unavailable) */
    fs_context *fs_alt; /* --alt's context, or NULL */
    char fs_unavailable[200];
    double copy_gbps;

    /* per shape */
    int64_t vocab, dim, max_rows, max_requests;
    double floor_ms;
    void *weight, *hidden, *logits;
    float *probs, *residual;
    float *temperature;
    uint64_t *seed;
    int32_t *drafts, *offsets, *h_drafts;
    int32_t *tokens, *status, *num_emitted;
    float *values;
    void *bl_ws;
    void *fs_ws;
    size_t fs_ws_bytes;
    int32_t *h_tokens, *h_status, *h_emitted, *ref_tokens, *ref_emitted;
    int ref_valid;

    /* per configuration */
    int64_t rows, requests;
    bl_gemm *gemm;
    fs_lm_head head;
    fs_sampling params;
    fs_drafts dr;
    char err[400];

    /* results */
    bench_row *res;
    int nres, cap;
    double *ms;
    bench_meta meta;
    int written;
} bench;

static bench *g_bench; /* for the exit handler */

/* ---- the timed calls --------------------------------------------------- */

static int run_gemm(bench *b)
{
    if (bl_gemm_run(b->gemm, b->weight, b->hidden, b->logits, b->stream) != 0) {
        snprintf(b->err, sizeof b->err, "%s", bl_gemm_last_error());
        return -1;
    }
    return 0;
}

static int cuda_ok(bench *b, cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return 0;
    snprintf(b->err, sizeof b->err, "%s: %s", what, cudaGetErrorString(e));
    return -1;
}

static int fs_ok(bench *b, fs_status st, const char *what)
{
    if (st == FS_OK)
        return 0;
    snprintf(b->err, sizeof b->err, "%s: %s: %s", what, fs_status_string(st),
             fs_context_last_error(b->fs));
    return -1;
}

static int op_matmul(void *p) { return run_gemm((bench *)p); }

static int op_gumbel(void *p)
{
    bench *b = p;
    if (run_gemm(b))
        return -1;
    return cuda_ok(b, bl_gumbel_sample(b->logits, b->rows, b->vocab, b->temperature, b->seed,
                                       b->bl_ws, b->tokens, b->stream),
                   "bl_gumbel_sample");
}

static int op_softmax_multinomial(void *p)
{
    bench *b = p;
    if (run_gemm(b))
        return -1;
    if (cuda_ok(b, bl_softmax(b->logits, b->rows, b->vocab, b->temperature, 1, b->bl_ws, b->probs,
                              b->stream),
                "bl_softmax"))
        return -1;
    return cuda_ok(b, bl_multinomial(b->probs, b->rows, b->vocab, b->seed, b->bl_ws, b->tokens,
                                     b->stream),
                   "bl_multinomial");
}

static int op_argmax(void *p)
{
    bench *b = p;
    if (run_gemm(b))
        return -1;
    return cuda_ok(b, bl_argmax(b->logits, b->rows, b->vocab, b->bl_ws, b->tokens, b->values,
                                b->stream),
                   "bl_argmax");
}

static int op_fs_sample(void *p)
{
    bench *b = p;
    return fs_ok(b, fs_sample(b->fs, &b->head, b->hidden, b->rows, &b->params, b->fs_ws,
                              b->fs_ws_bytes, b->tokens, NULL, b->status),
                 "fs_sample");
}

static int op_fs_sample_logits(void *p)
{
    bench *b = p;
    if (run_gemm(b))
        return -1;
    return fs_ok(b, fs_sample_logits(b->fs, b->logits, FS_DTYPE_BF16, b->rows, b->vocab,
                                     &b->params, b->fs_ws, b->fs_ws_bytes, b->tokens, NULL,
                                     b->status),
                 "fs_sample_logits");
}

static int op_fs_argmax(void *p)
{
    bench *b = p;
    return fs_ok(b, fs_draft_argmax(b->fs, &b->head, b->hidden, b->rows, b->fs_ws,
                                    b->fs_ws_bytes, b->tokens, b->values, b->status),
                 "fs_draft_argmax");
}

static int op_fs_argmax_logits(void *p)
{
    bench *b = p;
    if (run_gemm(b))
        return -1;
    return fs_ok(b, fs_draft_argmax_logits(b->fs, b->logits, FS_DTYPE_BF16, b->rows, b->vocab,
                                           b->fs_ws, b->fs_ws_bytes, b->tokens, b->values,
                                           b->status),
                 "fs_draft_argmax_logits");
}

static int op_verify_materialised(void *p)
{
    bench *b = p;
    if (run_gemm(b))
        return -1;
    return cuda_ok(b, bl_verify_materialised(b->logits, b->requests, b->o.drafts, b->vocab,
                                             b->drafts, b->temperature, b->seed, b->probs,
                                             b->residual, b->bl_ws, b->tokens, b->num_emitted,
                                             b->stream),
                   "bl_verify_materialised");
}

static int op_fs_verify(void *p)
{
    bench *b = p;
    return fs_ok(b, fs_verify(b->fs, &b->head, b->hidden, &b->dr, &b->params, b->fs_ws,
                              b->fs_ws_bytes, b->tokens, b->num_emitted, NULL, b->status),
                 "fs_verify");
}

/* The fused op of `fn` on --alt's context (b->fs swapped for the call). */
static int with_alt(bench *b, bench_op_fn fn)
{
    fs_context *own = b->fs;
    b->fs = b->fs_alt;
    const int rc = fn(b);
    b->fs = own;
    return rc;
}
static int op_fs_sample_alt(void *p) { return with_alt((bench *)p, op_fs_sample); }
static int op_fs_argmax_alt(void *p) { return with_alt((bench *)p, op_fs_argmax); }
static int op_fs_verify_alt(void *p) { return with_alt((bench *)p, op_fs_verify); }

static int op_fs_verify_logits(void *p)
{
    bench *b = p;
    if (run_gemm(b))
        return -1;
    return fs_ok(b, fs_verify_logits(b->fs, b->logits, FS_DTYPE_BF16, b->vocab, &b->dr,
                                     &b->params, b->fs_ws, b->fs_ws_bytes, b->tokens,
                                     b->num_emitted, NULL, b->status),
                 "fs_verify_logits");
}

/* ---- methods ----------------------------------------------------------- */

typedef enum check_kind {
    CHK_NONE,
    CHK_TOKENS,     /* tokens in range */
    CHK_REF,        /* tokens in range; kept as the reference of the family */
    CHK_AGREE,      /* tokens in range, status OK, compared with the reference */
    CHK_VERIFY_REF, /* verify outputs well formed; kept as the reference */
    CHK_VERIFY      /* well formed, status OK, emitted counts compared */
} check_kind;

typedef enum ws_kind { WS_NONE, WS_SAMPLE, WS_ARGMAX, WS_VERIFY } ws_kind;

typedef struct method {
    const char *family, *name;
    bench_op_fn fn;
    int fused;
    ws_kind ws; /* != WS_NONE: a flashspec op, needs the context and a workspace */
    check_kind check;
} method;

static const method k_matmul_sample = {"sample", "cublas_matmul", op_matmul, 0, WS_NONE, CHK_NONE};
static const method k_matmul_argmax = {"argmax", "cublas_matmul", op_matmul, 0, WS_NONE, CHK_NONE};
static const method k_sample_methods[] = {
    {"sample", "cublas+gumbel", op_gumbel, 0, WS_NONE, CHK_REF},
    {"sample", "cublas+softmax+multinomial", op_softmax_multinomial, 0, WS_NONE, CHK_TOKENS},
    {"sample", "fs_sample", op_fs_sample, 1, WS_SAMPLE, CHK_AGREE},
    {"sample", "cublas+fs_sample_logits", op_fs_sample_logits, 0, WS_SAMPLE, CHK_AGREE},
};
static const method k_argmax_methods[] = {
    {"argmax", "cublas+argmax", op_argmax, 0, WS_NONE, CHK_REF},
    {"argmax", "fs_draft_argmax", op_fs_argmax, 1, WS_ARGMAX, CHK_AGREE},
    {"argmax", "cublas+fs_draft_argmax_logits", op_fs_argmax_logits, 0, WS_ARGMAX, CHK_AGREE},
};
static const method k_verify_methods[] = {
    {"verify", "cublas_matmul", op_matmul, 0, WS_NONE, CHK_NONE},
    {"verify", "materialised_verify", op_verify_materialised, 0, WS_NONE, CHK_VERIFY_REF},
    {"verify", "fs_verify", op_fs_verify, 1, WS_VERIFY, CHK_VERIFY},
    {"verify", "cublas+fs_verify_logits", op_fs_verify_logits, 0, WS_VERIFY, CHK_VERIFY},
};
/* --alt: each family's fused op on the second context, timed beside the
 * rest in the same rounds -- an A/B of a knob (docs/TUNING.md) inside one
 * process, where separate processes ran 5-12% apart on an H200 at 400-1600
 * rows (bench/results/2026-11-30-h200-tree-tile-bits/). */
static const method k_sample_alt = {"sample", "fs_sample@alt", op_fs_sample_alt, 1, WS_SAMPLE,
                                    CHK_AGREE};
static const method k_argmax_alt = {"argmax", "fs_draft_argmax@alt", op_fs_argmax_alt, 1,
                                    WS_ARGMAX, CHK_AGREE};
static const method k_verify_alt = {"verify", "fs_verify@alt", op_fs_verify_alt, 1, WS_VERIFY,
                                    CHK_VERIFY};
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* ---- helpers ----------------------------------------------------------- */

static void *xmalloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);
    if (!p) {
        fprintf(stderr, "out of host memory\n");
        exit(1);
    }
    return p;
}

static void *dmalloc(size_t n)
{
    void *p = NULL;
    CUDA_CHECK(cudaMalloc(&p, n ? n : 1));
    return p;
}

static void dfree(void *p)
{
    if (p)
        CUDA_CHECK(cudaFree(p));
}

static int64_t max_of(const int64_t *v, int n)
{
    int64_t m = 0;
    for (int i = 0; i < n; ++i)
        if (v[i] > m)
            m = v[i];
    return m;
}

static void add_row(bench *b, const bench_row *r)
{
    if (b->nres == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 256;
        b->res = realloc(b->res, (size_t)b->cap * sizeof *b->res);
        if (!b->res) {
            fprintf(stderr, "out of host memory\n");
            exit(1);
        }
    }
    b->res[b->nres++] = *r;
    report_table_row(stdout, r);
}

/* The workspace this configuration's op of `kind` needs on context ctx. */
static fs_status fs_ws_need(const bench *b, fs_context *ctx, ws_kind kind, size_t *need)
{
    *need = 0;
    if (kind == WS_SAMPLE)
        return fs_sample_workspace_size(ctx, b->rows, b->vocab, need);
    if (kind == WS_ARGMAX)
        return fs_draft_argmax_workspace_size(ctx, b->rows, b->vocab, need);
    if (kind == WS_VERIFY)
        return fs_verify_workspace_size(ctx, b->requests, b->requests * b->o.drafts, b->vocab,
                                        need);
    return FS_OK;
}

/* Grow the flashspec workspace to what this configuration needs (on --alt's
 * context too: one workspace serves both). */
static int prepare_fs_workspace(bench *b, ws_kind kind)
{
    size_t need = 0, alt = 0;
    fs_status st = fs_ws_need(b, b->fs, kind, &need);
    if (st != FS_OK)
        return fs_ok(b, st, "workspace size");
    if (b->fs_alt && (st = fs_ws_need(b, b->fs_alt, kind, &alt)) != FS_OK)
        return fs_ok(b, st, "workspace size (--alt)");
    if (alt > need)
        need = alt;
    if (need > b->fs_ws_bytes) {
        dfree(b->fs_ws);
        b->fs_ws = dmalloc(need);
        b->fs_ws_bytes = need;
    }
    return 0;
}

/* ---- output checks ----------------------------------------------------- */

static void check_tokens(bench *b, const method *m, bench_row *r)
{
    int64_t n = b->rows;
    int bad = 0, bad_status = 0, agree = 0;
    CUDA_CHECK(cudaMemcpy(b->h_tokens, b->tokens, n * sizeof(int32_t), cudaMemcpyDeviceToHost));
    if (m->ws != WS_NONE)
        CUDA_CHECK(
            cudaMemcpy(b->h_status, b->status, n * sizeof(int32_t), cudaMemcpyDeviceToHost));
    for (int64_t i = 0; i < n; ++i) {
        if (b->h_tokens[i] < 0 || b->h_tokens[i] >= b->vocab)
            ++bad;
        if (m->ws != WS_NONE && b->h_status[i] != FS_ROW_OK)
            ++bad_status;
        if (b->ref_valid && b->h_tokens[i] == b->ref_tokens[i])
            ++agree;
    }
    char *c = r->check;
    size_t cs = sizeof r->check;
    int len = 0;
    if (bad || bad_status)
        len = snprintf(c, cs, "INVALID: %d bad tokens, %d bad row status; ", bad, bad_status);
    if (m->check == CHK_REF) {
        memcpy(b->ref_tokens, b->h_tokens, n * sizeof(int32_t));
        b->ref_valid = bad == 0;
        snprintf(c + len, cs - len, "reference tokens");
    } else if (m->check == CHK_AGREE && b->ref_valid) {
        snprintf(c + len, cs - len, "same token as %s: %d/%lld",
                 strcmp(m->family, "sample") == 0 ? "cublas+gumbel" : "cublas+argmax", agree,
                 (long long)n);
    } else if (!bad && !bad_status) {
        snprintf(c + len, cs - len, "tokens valid");
    }
}

static void check_verify(bench *b, const method *m, bench_row *r)
{
    const int k = b->o.drafts;
    const int64_t R = b->requests, stride = k + 1;
    int bad = 0, bad_status = 0, agree = 0;
    long emitted = 0;
    CUDA_CHECK(cudaMemcpy(b->h_tokens, b->tokens, R * stride * sizeof(int32_t),
                          cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(b->h_emitted, b->num_emitted, R * sizeof(int32_t),
                          cudaMemcpyDeviceToHost));
    if (m->ws != WS_NONE)
        CUDA_CHECK(
            cudaMemcpy(b->h_status, b->status, R * sizeof(int32_t), cudaMemcpyDeviceToHost));
    for (int64_t q = 0; q < R; ++q) {
        int32_t ne = b->h_emitted[q];
        const int32_t *t = b->h_tokens + q * stride;
        int ok = ne >= 1 && ne <= k + 1;
        for (int i = 0; ok && i < ne - 1; ++i)
            ok = t[i] == b->h_drafts[q * k + i];
        ok = ok && t[ne - 1] >= 0 && t[ne - 1] < b->vocab;
        for (int i = ne; ok && i <= k; ++i)
            ok = t[i] == -1;
        bad += !ok;
        if (m->ws != WS_NONE && b->h_status[q] != FS_ROW_OK)
            ++bad_status;
        if (b->ref_valid && ne == b->ref_emitted[q])
            ++agree;
        emitted += ne;
    }
    char *c = r->check;
    size_t cs = sizeof r->check;
    int len = 0;
    if (bad || bad_status)
        len = snprintf(c, cs, "INVALID: %d bad requests, %d bad status; ", bad, bad_status);
    len += snprintf(c + len, cs - len, "mean emitted %.3f", (double)emitted / (double)R);
    if (m->check == CHK_VERIFY_REF) {
        memcpy(b->ref_emitted, b->h_emitted, R * sizeof(int32_t));
        b->ref_valid = bad == 0;
    } else if (b->ref_valid) {
        snprintf(c + len, cs - len, "; emitted count = materialised: %d/%lld", agree,
                 (long long)R);
    }
}

/* ---- one configuration ------------------------------------------------ */

/* Times every method of one configuration (shape and rows) alternated in
 * rounds: round r runs each method in turn for `reps` calls (warm-up calls
 * first: --warmup in round 0, one in the later rounds), so that a clock the
 * power cap lowers during the configuration lowers every method alike.  The
 * outputs are checked after each method's calls in the last round, in the
 * methods' order (a family's reference before the methods compared with it).
 * With --order rotate (the default) the earlier rounds start at other
 * methods -- round r < rounds - 1 at method (r + 1) * n / rounds, going
 * round the list -- so that a method does not always follow the same one:
 * at 512-1024 rows the same cuBLAS kernel ran 818-984 / 1607-1900 us
 * depending on which method's round it headed (H100, kernel_trace.c).
 * A row per method is added at the end: the median and quantiles of all its
 * calls, and the lowest and highest of its round medians.  list[0] is the
 * matmul alone, whose median is the others' matmul_ms. */
static void run_config(bench *b, const method *const *list, int n)
{
    const options *o = &b->o;
    const int per = o->rounds * o->reps;
    bench_row rows[MAX_METHODS];
    int live[MAX_METHODS];
    double rmed[MAX_METHODS][MAX_ROUNDS];
    /* --power: per method, the readings of all its rounds */
    bench_power_stats pw[MAX_METHODS];
    for (int i = 0; i < MAX_METHODS; ++i)
        pw[i] = bench_power_end(NULL);
    if (n > MAX_METHODS) {
        fprintf(stderr, "run_config: %d methods > %d\n", n, MAX_METHODS);
        exit(1);
    }
    for (int i = 0; i < n; ++i) {
        const method *m = list[i];
        bench_row *r = &rows[i];
        memset(r, 0, sizeof *r);
        snprintf(r->family, sizeof r->family, "%s", m->family);
        snprintf(r->method, sizeof r->method, "%s", m->name);
        r->fused = m->fused;
        r->vocab = b->vocab;
        r->dim = b->dim;
        r->rows = b->rows;
        r->requests = strcmp(m->family, "verify") == 0 ? b->requests : 0;
        r->floor_ms = b->floor_ms;
        r->rounds = o->rounds;
        live[i] = 1;
        if (m->ws != WS_NONE && !b->fs) {
            snprintf(r->note, sizeof r->note, "not run: %s", b->fs_unavailable);
            live[i] = 0;
        }
    }
    for (int round = 0; round < o->rounds; ++round) {
        const char *family = NULL;
        const int shift = o->rotate && round < o->rounds - 1 ? (round + 1) * n / o->rounds % n : 0;
        for (int j = 0; j < n; ++j) {
            const int i = (j + shift) % n;
            const method *m = list[i];
            bench_row *r = &rows[i];
            if (!family || strcmp(family, m->family) != 0) {
                family = m->family;
                b->ref_valid = 0;
            }
            if (!live[i])
                continue;
            b->err[0] = '\0';
            snprintf(bench_activity, sizeof bench_activity, "%s V=%lld D=%lld rows=%lld",
                     m->name, (long long)b->vocab, (long long)b->dim, (long long)b->rows);
            if (m->ws != WS_NONE && prepare_fs_workspace(b, m->ws) != 0) {
                snprintf(r->note, sizeof r->note, "not run: %s", b->err);
                live[i] = 0;
                continue;
            }
            /* outputs start as -1, so an op that writes nothing is caught */
            CUDA_CHECK(
                cudaMemsetAsync(b->tokens, 0xff, b->max_rows * sizeof(int32_t), b->stream));
            CUDA_CHECK(
                cudaMemsetAsync(b->status, 0xff, b->max_rows * sizeof(int32_t), b->stream));
            CUDA_CHECK(cudaMemsetAsync(b->num_emitted, 0xff,
                                       b->max_requests * sizeof(int32_t), b->stream));
            double *s = b->ms + (size_t)i * per + (size_t)round * o->reps;
            bench_power_begin(b->power);
            const int failed =
                bench_time(&b->timer, m->fn, b, round == 0 ? o->warmup : 1, o->reps, s) != 0;
            const bench_power_stats ps = bench_power_end(b->power);
            bench_power_add(&pw[i], &ps);
            if (failed) {
                /* a failed call must not have broken the context */
                CUDA_CHECK(cudaGetLastError());
                CUDA_CHECK(cudaDeviceSynchronize());
                snprintf(r->note, sizeof r->note, "failed: %s", b->err);
                live[i] = 0;
                continue;
            }
            rmed[i][round] = bench_quantile(s, o->reps, 0.5);
            if (round < o->rounds - 1)
                continue;
            if (m->check == CHK_TOKENS || m->check == CHK_REF || m->check == CHK_AGREE)
                check_tokens(b, m, r);
            else if (m->check == CHK_VERIFY_REF || m->check == CHK_VERIFY)
                check_verify(b, m, r);
            else
                snprintf(r->check, sizeof r->check, "-");
        }
    }
    double matmul_ms = 0.0;
    for (int i = 0; i < n; ++i) {
        bench_row *r = &rows[i];
        if (!live[i])
            continue;
        double *s = b->ms + (size_t)i * per;
        bench_sort_ms(s, per);
        r->valid = 1;
        r->median_ms = bench_quantile(s, per, 0.5);
        r->min_ms = s[0];
        r->p90_ms = bench_quantile(s, per, 0.9);
        r->round_lo_ms = r->round_hi_ms = rmed[i][0];
        for (int k = 1; k < o->rounds; ++k) {
            r->round_lo_ms = rmed[i][k] < r->round_lo_ms ? rmed[i][k] : r->round_lo_ms;
            r->round_hi_ms = rmed[i][k] > r->round_hi_ms ? rmed[i][k] : r->round_hi_ms;
        }
        if (i == 0)
            matmul_ms = r->median_ms;
        r->power_samples = pw[i].samples;
        r->sm_mhz = pw[i].sm_mhz;
        r->capped = pw[i].capped;
        r->watts = pw[i].watts;
    }
    for (int i = 0; i < n; ++i) {
        rows[i].matmul_ms = matmul_ms;
        add_row(b, &rows[i]);
    }
    for (int i = 0; i < n && b->power; ++i)
        report_power_row(stdout, &rows[i]);
}

static void make_gemm(bench *b, int64_t rows)
{
    bl_gemm_destroy(b->gemm);
    b->gemm = NULL;
    if (bl_gemm_create(&b->gemm, b->vocab, b->dim, rows, b->weight, b->hidden, b->logits,
                       b->o.tune_gemm, b->stream) != 0) {
        fprintf(stderr, "cuBLASLt plan for V=%lld D=%lld rows=%lld: %s\n", (long long)b->vocab,
                (long long)b->dim, (long long)rows, bl_gemm_last_error());
        exit(1);
    }
    CUDA_CHECK(cudaStreamSynchronize(b->stream));
}

/* ---- per shape --------------------------------------------------------- */

static void setup_shape(bench *b, shape s)
{
    const options *o = &b->o;
    const int k = o->drafts;
    snprintf(bench_activity, sizeof bench_activity, "setup of V=%lld D=%lld",
             (long long)s.vocab, (long long)s.dim);
    b->vocab = s.vocab;
    b->dim = s.dim;
    b->max_requests = o->do_verify ? max_of(o->requests, o->nrequests) : 1;
    b->max_rows = (o->do_sample || o->do_argmax) ? max_of(o->rows, o->nrows) : 1;
    if (o->do_verify && b->max_requests * (k + 1) > b->max_rows)
        b->max_rows = b->max_requests * (k + 1);
    const int64_t V = b->vocab, D = b->dim, N = b->max_rows, R = b->max_requests;

    b->weight = dmalloc((size_t)V * D * 2);
    b->hidden = dmalloc((size_t)N * D * 2);
    b->logits = dmalloc((size_t)N * V * 2);
    b->probs = dmalloc((size_t)N * V * sizeof(float));
    b->residual = o->do_verify ? dmalloc((size_t)R * k * V * sizeof(float)) : NULL;
    /* hidden ~ N(0, 1); W ~ 3 * N(0, 1/D): logits ~ N(0, 9), a realistic spread */
    CUDA_CHECK(bl_fill_normal_bf16(b->weight, (size_t)V * D, 3.0f / sqrtf((float)D),
                                   0x5eed0001u + (uint64_t)V, b->stream));
    CUDA_CHECK(bl_fill_normal_bf16(b->hidden, (size_t)N * D, 1.0f, 0x5eed0002u, b->stream));

    b->temperature = dmalloc(N * sizeof(float));
    b->seed = dmalloc(N * sizeof(uint64_t));
    float *ht = xmalloc(N * sizeof(float));
    uint64_t *hs = xmalloc(N * sizeof(uint64_t));
    for (int64_t i = 0; i < N; ++i) {
        ht[i] = o->temperature;
        hs[i] = 0x243f6a8885a308d3ull + 0x9e3779b97f4a7c15ull * (uint64_t)i;
    }
    CUDA_CHECK(cudaMemcpy(b->temperature, ht, N * sizeof(float), cudaMemcpyHostToDevice));
    CUDA_CHECK(cudaMemcpy(b->seed, hs, N * sizeof(uint64_t), cudaMemcpyHostToDevice));
    free(ht);
    free(hs);

    b->tokens = dmalloc(N * sizeof(int32_t));
    b->status = dmalloc(N * sizeof(int32_t));
    b->values = dmalloc(N * sizeof(float));
    b->num_emitted = dmalloc(R * sizeof(int32_t));
    b->drafts = dmalloc(R * k * sizeof(int32_t));
    b->offsets = dmalloc((R + 1) * sizeof(int32_t));
    b->h_drafts = xmalloc(R * k * sizeof(int32_t));
    b->h_tokens = xmalloc(N * sizeof(int32_t));
    b->h_status = xmalloc(N * sizeof(int32_t));
    b->h_emitted = xmalloc(R * sizeof(int32_t));
    b->ref_tokens = xmalloc(N * sizeof(int32_t));
    b->ref_emitted = xmalloc(R * sizeof(int32_t));
    size_t blb = bl_workspace_bytes(N, V);
    b->bl_ws = dmalloc(blb);
    CUDA_CHECK(cudaMemsetAsync(b->bl_ws, 0, blb, b->stream)); /* the stream is non-blocking */
    b->fs_ws = NULL;
    b->fs_ws_bytes = 0;

    /* Greedy drafts: the target argmax at each draft position (what a
     * perfect greedy drafter would propose). */
    if (o->do_verify) {
        make_gemm(b, R * (k + 1));
        if (run_gemm(b) != 0) {
            fprintf(stderr, "%s\n", b->err);
            exit(1);
        }
        CUDA_CHECK(bl_argmax(b->logits, R * (k + 1), V, b->bl_ws, b->tokens, b->values,
                             b->stream));
        CUDA_CHECK(cudaStreamSynchronize(b->stream));
        CUDA_CHECK(cudaMemcpy(b->h_tokens, b->tokens, R * (k + 1) * sizeof(int32_t),
                              cudaMemcpyDeviceToHost));
        int32_t *off = xmalloc((R + 1) * sizeof(int32_t));
        for (int64_t q = 0; q < R; ++q)
            for (int j = 0; j < k; ++j)
                b->h_drafts[q * k + j] = b->h_tokens[q * (k + 1) + j];
        for (int64_t q = 0; q <= R; ++q)
            off[q] = (int32_t)(q * k);
        CUDA_CHECK(
            cudaMemcpy(b->drafts, b->h_drafts, R * k * sizeof(int32_t), cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaMemcpy(b->offsets, off, (R + 1) * sizeof(int32_t), cudaMemcpyHostToDevice));
        free(off);
    }
    CUDA_CHECK(cudaDeviceSynchronize());

    b->head.weight = b->weight;
    b->head.vocab_size = V;
    b->head.hidden_dim = D;
    b->head.dtype = FS_DTYPE_BF16;
    memset(&b->params, 0, sizeof b->params);
    b->params.temperature = b->temperature;
    b->params.seed = b->seed;
    b->floor_ms = (double)V * (double)D * 2.0 / (b->copy_gbps * 1e9) * 1e3;
}

static void teardown_shape(bench *b)
{
    bl_gemm_destroy(b->gemm);
    b->gemm = NULL;
    void *d[] = {b->weight, b->hidden, b->logits, b->probs, b->residual, b->temperature,
                 b->seed, b->tokens, b->status, b->values, b->num_emitted, b->drafts,
                 b->offsets, b->bl_ws, b->fs_ws};
    for (size_t i = 0; i < sizeof d / sizeof d[0]; ++i)
        dfree(d[i]);
    free(b->h_drafts);
    free(b->h_tokens);
    free(b->h_status);
    free(b->h_emitted);
    free(b->ref_tokens);
    free(b->ref_emitted);
    b->fs_ws = NULL;
    b->fs_ws_bytes = 0;
}

static void run_shape(bench *b, shape s)
{
    const options *o = &b->o;
    const int k = o->drafts;
    setup_shape(b, s);
    printf("\n# V=%lld D=%lld: floor %.4f ms (%.1f MB at %.0f GB/s)\n", (long long)s.vocab,
           (long long)s.dim, b->floor_ms, (double)s.vocab * s.dim * 2 / 1e6, b->copy_gbps);
    report_table_header(stdout);

    if (o->do_sample || o->do_argmax) {
        for (int i = 0; i < o->nrows; ++i) {
            b->rows = o->rows[i];
            b->requests = 0;
            make_gemm(b, b->rows);
            const method *list[MAX_METHODS];
            int n = 0;
            list[n++] = o->do_sample ? &k_matmul_sample : &k_matmul_argmax;
            for (int j = 0; o->do_sample && j < COUNT(k_sample_methods); ++j)
                list[n++] = &k_sample_methods[j];
            if (o->do_sample && b->fs_alt)
                list[n++] = &k_sample_alt;
            for (int j = 0; o->do_argmax && j < COUNT(k_argmax_methods); ++j)
                list[n++] = &k_argmax_methods[j];
            if (o->do_argmax && b->fs_alt)
                list[n++] = &k_argmax_alt;
            run_config(b, list, n);
        }
    }
    if (o->do_verify) {
        for (int i = 0; i < o->nrequests; ++i) {
            b->requests = o->requests[i];
            b->rows = b->requests * (k + 1);
            b->dr.num_requests = b->requests;
            b->dr.num_draft_tokens = b->requests * k;
            b->dr.max_drafts = k;
            b->dr.draft_tokens = b->drafts;
            b->dr.draft_offsets = b->offsets;
            make_gemm(b, b->rows);
            const method *list[MAX_METHODS];
            int n = 0;
            for (int j = 0; j < COUNT(k_verify_methods); ++j)
                list[n++] = &k_verify_methods[j];
            if (b->fs_alt)
                list[n++] = &k_verify_alt;
            run_config(b, list, n);
        }
    }
    teardown_shape(b);
}

/* ---- options ----------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: flashspec_bench [flags]\n"
            "  --shapes VxD[,VxD...]  LM-head shapes, bf16 (default\n"
            "                         151936x4096,128256x8192,262144x3072)\n"
            "  --rows LIST            rows for sample/argmax (default "
            "1,2,4,8,16,32,64,128,192,256,320,512,768,1024)\n"
            "  --requests LIST        verify requests (default 1,2,4,8,16,32,64,128,200)\n"
            "  --drafts K             greedy drafts per request (default 4: K+1 target rows)\n"
            "  --ops LIST             any of sample,argmax,verify (default all)\n"
            "  --temperature T        every request's, 0 < T <= 100 (default 1; below 1e-5\n"
            "                         the fused ops take their greedy rows' path)\n"
            "  --rounds N             rounds per configuration: its methods take turns,\n"
            "                         --reps calls each a round (default 3)\n"
            "  --reps N               timed calls per method and round; the median of all\n"
            "                         rounds' calls is reported (default 20)\n"
            "  --warmup N             untimed calls before a method's first round (default 5;\n"
            "                         one before each later round)\n"
            "  --order rotate|fixed   methods' order in the rounds before the last: each\n"
            "                         starting at another method (default), or the list's\n"
            "                         order in every round\n"
            "  --gemm tuned|heuristic cuBLASLt: fastest of 16 candidates (default) or first\n"
            "  --copy-mib N           size of the bandwidth-probe copy (default 1024)\n"
            "  --flush dirty|clean    L2 before each call: full of a memset's dirty lines\n"
            "                         (default: as after a model's previous layers) or\n"
            "                         read back clean (the call writes nothing back)\n"
            "  --quick                smoke run: 1st shape, rows 1,16,256, requests 1,16,64,\n"
            "                         2 rounds of 5 reps, 2 warm-up (explicit flags still win)\n"
            "  --alt VAR=VALUE        time each fused op again (fs_sample@alt, ...) on a\n"
            "                         second context created with VAR=VALUE in the\n"
            "                         environment (a knob of docs/TUNING.md): its A/B in\n"
            "                         one process, in the same rounds; run it again with\n"
            "                         the knob set and the default as --alt, and read\n"
            "                         both with bench/tools/alt_table.py\n"
            "  --power                the SM clock and board power while each method runs\n"
            "                         (NVML, sampled every 0.5 ms): a line per method with\n"
            "                         its clock, power, cycles and energy a call\n"
            "  --csv PATH, --json PATH  write the results\n"
            "  --device N             CUDA device (default 0)\n");
}

static int parse_list(const char *s, int64_t *out, int max)
{
    int n = 0;
    while (*s) {
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s || v <= 0 || n == max)
            return -1;
        out[n++] = v;
        s = end;
        if (*s == ',')
            ++s;
        else if (*s)
            return -1;
    }
    return n;
}

static int parse_shapes(const char *s, shape *out, int max)
{
    int n = 0;
    while (*s) {
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s || (*end != 'x' && *end != 'X') || v <= 0 || n == max)
            return -1;
        s = end + 1;
        long long d = strtoll(s, &end, 10);
        if (end == s || d <= 0)
            return -1;
        out[n].vocab = v;
        out[n].dim = d;
        ++n;
        s = end;
        if (*s == ',')
            ++s;
        else if (*s)
            return -1;
    }
    return n;
}

static void parse_options(int argc, char **argv, options *o)
{
    /* serving batches: 64 requests x 5 verify rows = 320, and up to 1024 rows */
    static const int64_t rows[] = {1, 2, 4, 8, 16, 32, 64, 128, 192, 256, 320, 512, 768, 1024};
    static const int64_t reqs[] = {1, 2, 4, 8, 16, 32, 64, 128, 200};
    static const int64_t qrows[] = {1, 16, 256};
    static const int64_t qreqs[] = {1, 16, 64};
    int quick = 0;
    for (int i = 1; i < argc; ++i)
        if (strcmp(argv[i], "--quick") == 0)
            quick = 1;
    memset(o, 0, sizeof *o);
    o->shapes[0] = (shape){151936, 4096};
    o->shapes[1] = (shape){128256, 8192};
    o->shapes[2] = (shape){262144, 3072}; /* a Gemma-class vocabulary */
    o->nshapes = quick ? 1 : 3;
    o->nrows = quick ? COUNT(qrows) : COUNT(rows);
    memcpy(o->rows, quick ? qrows : rows, o->nrows * sizeof(int64_t));
    o->nrequests = quick ? COUNT(qreqs) : COUNT(reqs);
    memcpy(o->requests, quick ? qreqs : reqs, o->nrequests * sizeof(int64_t));
    o->drafts = 4;
    o->temperature = 1.0f;
    o->reps = quick ? 5 : 20;
    o->rounds = quick ? 2 : 3;
    o->warmup = quick ? 2 : 5;
    o->rotate = 1;
    o->do_sample = o->do_argmax = o->do_verify = 1;
    o->tune_gemm = 1;
    o->copy_mib = 1024;

    for (int i = 1; i < argc; ++i) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int bad = 0;
        if (strcmp(a, "--quick") == 0) {
            continue;
        } else if (strcmp(a, "--power") == 0) {
            o->power = 1;
            continue;
        } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            exit(0);
        } else if (!v) {
            bad = 1;
        } else if (strcmp(a, "--shapes") == 0) {
            bad = (o->nshapes = parse_shapes(v, o->shapes, MAX_LIST)) <= 0;
        } else if (strcmp(a, "--rows") == 0) {
            bad = (o->nrows = parse_list(v, o->rows, MAX_LIST)) <= 0;
        } else if (strcmp(a, "--requests") == 0) {
            bad = (o->nrequests = parse_list(v, o->requests, MAX_LIST)) <= 0;
        } else if (strcmp(a, "--drafts") == 0) {
            o->drafts = atoi(v);
            bad = o->drafts < 1 || o->drafts > 64;
        } else if (strcmp(a, "--temperature") == 0) {
            o->temperature = strtof(v, NULL);
            /* > 0: the unfused baselines divide by it */
            bad = !(o->temperature > 0.0f && o->temperature <= 100.0f);
        } else if (strcmp(a, "--reps") == 0) {
            o->reps = atoi(v);
            bad = o->reps < 1 || o->reps > 100000;
        } else if (strcmp(a, "--rounds") == 0) {
            o->rounds = atoi(v);
            bad = o->rounds < 1 || o->rounds > MAX_ROUNDS;
        } else if (strcmp(a, "--order") == 0) {
            o->rotate = strcmp(v, "rotate") == 0;
            bad = !o->rotate && strcmp(v, "fixed") != 0;
        } else if (strcmp(a, "--warmup") == 0) {
            o->warmup = atoi(v);
            bad = o->warmup < 0;
        } else if (strcmp(a, "--ops") == 0) {
            o->do_sample = strstr(v, "sample") != NULL;
            o->do_argmax = strstr(v, "argmax") != NULL;
            o->do_verify = strstr(v, "verify") != NULL;
            bad = !(o->do_sample || o->do_argmax || o->do_verify);
        } else if (strcmp(a, "--gemm") == 0) {
            bad = strcmp(v, "tuned") != 0 && strcmp(v, "heuristic") != 0;
            o->tune_gemm = strcmp(v, "tuned") == 0;
        } else if (strcmp(a, "--flush") == 0) {
            bad = strcmp(v, "dirty") != 0 && strcmp(v, "clean") != 0;
            o->clean_flush = strcmp(v, "clean") == 0;
        } else if (strcmp(a, "--copy-mib") == 0) {
            o->copy_mib = (size_t)atol(v);
            bad = o->copy_mib < 16;
        } else if (strcmp(a, "--alt") == 0) {
            const char *eq = strchr(v, '=');
            bad = !eq || eq == v || eq - v >= 128;
            o->alt = v;
        } else if (strcmp(a, "--csv") == 0) {
            o->csv = v;
        } else if (strcmp(a, "--json") == 0) {
            o->json = v;
        } else if (strcmp(a, "--device") == 0) {
            o->device = atoi(v);
        } else {
            bad = 1;
        }
        if (bad) {
            fprintf(stderr, "bad or incomplete argument: %s%s%s\n", a, v ? " " : "", v ? v : "");
            usage(stderr);
            exit(2);
        }
        ++i;
    }
    for (int i = 0; i < o->nrows; ++i)
        if (o->rows[i] > 65535) {
            fprintf(stderr, "--rows: at most 65535\n");
            exit(2);
        }
    for (int i = 0; i < o->nrequests; ++i)
        if (o->requests[i] * (o->drafts + 1) > 65535) {
            fprintf(stderr, "--requests: at most 65535 target rows\n");
            exit(2);
        }
}

/* ---- main -------------------------------------------------------------- */

/* Writes the CSV and JSON once: at the end, or from exit() after a fatal CUDA
 * error, so the measurements made so far are kept. */
static int write_results(bench *b)
{
    int rc = 0;
    if (b->written)
        return 0;
    b->written = 1;
    if (b->o.csv && report_write_csv(b->o.csv, b->res, b->nres) != 0)
        rc = 1;
    if (b->o.json && report_write_json(b->o.json, &b->meta, b->res, b->nres) != 0)
        rc = 1;
    return rc;
}

static void write_results_at_exit(void)
{
    if (g_bench && !g_bench->written && g_bench->nres > 0) {
        fprintf(stderr, "writing the %d results measured so far\n", g_bench->nres);
        write_results(g_bench);
    }
}

int main(int argc, char **argv)
{
    bench b;
    memset(&b, 0, sizeof b);
    parse_options(argc, argv, &b.o);
    const options *o = &b.o;

    int ndev = 0;
    CUDA_CHECK(cudaGetDeviceCount(&ndev));
    if (o->device < 0 || o->device >= ndev) {
        fprintf(stderr, "no CUDA device %d (%d visible)\n", o->device, ndev);
        return 1;
    }
    CUDA_CHECK(cudaSetDevice(o->device));
    struct cudaDeviceProp prop;
    CUDA_CHECK(cudaGetDeviceProperties(&prop, o->device));
    CUDA_CHECK(bl_init(o->device));
    CUDA_CHECK(cudaStreamCreateWithFlags(&b.stream, cudaStreamNonBlocking));
    bench_timer_init(&b.timer, b.stream, (size_t)prop.l2CacheSize, o->reps);
    b.timer.clean = o->clean_flush;
    b.ms = xmalloc((size_t)MAX_METHODS * o->rounds * o->reps * sizeof(double));

    bench_meta meta;
    memset(&meta, 0, sizeof meta);
    g_bench = &b;
    atexit(write_results_at_exit);
    snprintf(meta.gpu, sizeof meta.gpu, "%s", prop.name);
    meta.sm_count = prop.multiProcessorCount;
    meta.cc_major = prop.major;
    meta.cc_minor = prop.minor;
    meta.l2_bytes = (size_t)prop.l2CacheSize;
    meta.mem_bytes = prop.totalGlobalMem;
    meta.reps = o->reps;
    meta.rounds = o->rounds;
    meta.rotated = o->rotate;
    meta.warmup = o->warmup;
    meta.drafts_per_request = o->drafts;
    meta.temperature = o->temperature;
    meta.gemm_mode = o->tune_gemm ? "cuBLASLt bf16 x bf16 -> bf16, fp32 accumulation, fastest "
                                    "of up to 16 heuristic candidates"
                                  : "cuBLASLt bf16 x bf16 -> bf16, fp32 accumulation, first "
                                    "heuristic candidate";
    CUDA_CHECK(cudaRuntimeGetVersion(&meta.cuda_runtime));
    CUDA_CHECK(cudaDriverGetVersion(&meta.cuda_driver));
    meta.flashspec_version = fs_version();
    meta.cublaslt_version = bl_cublaslt_version();
    time_t now = time(NULL);
    strftime(meta.timestamp, sizeof meta.timestamp, "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));

    fs_status st = fs_context_create(&b.fs, FS_DEVICE_CUDA, o->device);
    if (st != FS_OK) {
        snprintf(b.fs_unavailable, sizeof b.fs_unavailable, "no flashspec CUDA context: %s",
                 fs_status_string(st));
        b.fs = NULL;
    } else if ((st = fs_context_set_stream(b.fs, b.stream)) != FS_OK) {
        snprintf(b.fs_unavailable, sizeof b.fs_unavailable, "fs_context_set_stream: %s: %s",
                 fs_status_string(st), fs_context_last_error(b.fs));
        fs_context_destroy(b.fs);
        b.fs = NULL;
    }
    if (b.fs && o->alt && !(b.fs_alt = bu_context_with_env(o->alt, o->device, b.stream)))
        return 1;

    if (o->power) {
        char why[200];
        b.power = bench_power_start(o->device, why, (int)sizeof why);
        if (!b.power)
            printf("--power: no readings: %s\n", why);
    }

    snprintf(bench_activity, sizeof bench_activity, "the copy bandwidth");
    b.copy_gbps = bench_copy_bandwidth(b.stream, o->copy_mib << 20, 20);
    meta.copy_gbps = b.copy_gbps;
    b.meta = meta;

    /* what the sweep costs, in timed calls */
    long calls = 0, configs = 0;
    const int alt = b.fs_alt ? 1 : 0;
    int per_rows = (o->do_sample || o->do_argmax ? 1 : 0) +
                   (o->do_sample ? COUNT(k_sample_methods) + alt : 0) +
                   (o->do_argmax ? COUNT(k_argmax_methods) + alt : 0);
    configs = (long)o->nshapes *
              ((long)o->nrows * per_rows +
               (o->do_verify ? (long)o->nrequests * (COUNT(k_verify_methods) + alt) : 0));
    calls = configs * ((long)o->rounds * o->reps + o->warmup + o->rounds - 1);
    printf("flashspec %d benchmark on %s (%d SMs, L2 %zu MiB, sm_%d%d)\n", fs_version(), prop.name,
           prop.multiProcessorCount, meta.l2_bytes >> 20, prop.major, prop.minor);
    printf("CUDA runtime %d, driver %d, cuBLASLt %zu; GEMM: %s\n", meta.cuda_runtime,
           meta.cuda_driver, meta.cublaslt_version, meta.gemm_mode);
    printf("copy bandwidth %.1f GB/s (D2D %zu MiB, read + write bytes); methods alternated in "
           "%d rounds of %d calls, %s order (median of all; rounds: lowest-highest round median), "
           "warm-up %d, L2 flushed (%zu MiB memset%s) before every call\n",
           b.copy_gbps, o->copy_mib, o->rounds, o->reps, o->rotate ? "rotated" : "fixed", o->warmup,
           b.timer.flush_bytes >> 20,
           o->clean_flush ? ", then read back: clean" : ", left dirty");
    printf("temperature %g%s; logits bf16; %d greedy drafts per request (the target argmax)\n",
           o->temperature,
           o->temperature < FS_MIN_TEMPERATURE ? " (the fused ops' rows greedy)" : "", o->drafts);
    printf("planned: %ld measurements, %ld timed calls\n", configs, calls);
    if (b.fs_alt)
        printf("@alt: the fused ops again on a context created with %s\n", o->alt);
    if (!b.fs)
        printf("flashspec ops not run: %s\n", b.fs_unavailable);
    printf("x_matmul = median / cuBLAS matmul alone; x_bound = median / max(floor, matmul); "
           "%%floor = floor / median; target: fused <= %.2f x bound\n",
           BENCH_TARGET_RATIO);

    for (int i = 0; i < o->nshapes; ++i)
        run_shape(&b, o->shapes[i]);

    int pass = 0, miss = 0;
    for (int i = 0; i < b.nres; ++i) {
        const char *t = row_target(&b.res[i]);
        pass += strcmp(t, "PASS") == 0;
        miss += strcmp(t, "MISS") == 0;
    }
    printf("\ntargets (fused <= %.2f x max(floor, matmul)): %d PASS, %d MISS\n",
           BENCH_TARGET_RATIO, pass, miss);
    for (int i = 0; i < b.nres; ++i)
        if (strcmp(row_target(&b.res[i]), "MISS") == 0)
            printf("  MISS %-16s V=%lld D=%lld rows=%lld: %.4f ms = %.3f x bound\n",
                   b.res[i].method, (long long)b.res[i].vocab, (long long)b.res[i].dim,
                   (long long)b.res[i].rows, b.res[i].median_ms,
                   b.res[i].median_ms / row_bound_ms(&b.res[i]));

    int rc = write_results(&b);

    bench_power_stop(b.power);
    if (b.fs)
        fs_context_destroy(b.fs);
    if (b.fs_alt)
        fs_context_destroy(b.fs_alt);
    bl_gemm_shutdown();
    bench_timer_destroy(&b.timer);
    CUDA_CHECK(cudaStreamDestroy(b.stream));
    free(b.res);
    free(b.ms);
    return rc;
}
