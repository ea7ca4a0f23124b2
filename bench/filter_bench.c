/* The cost of top-k / top-p / min-p in the fused ops, on an H100-class GPU.
 *
 * For each LM-head shape, logit shape (peaked and moderate: Zipf-like with
 * exponents 2 and 1.4; flat: N(0, 1); filter_inputs.cu) and row count, in
 * one process with the methods alternated in rounds (L2 flushed before every
 * call, CUDA events):
 *   cublas              the LM-head matmul alone (cuBLASLt, bf16 logits)
 *   sample              fs_sample without filters
 *   sample k50 / p0.9 / minp0.05 / all   fs_sample with each filter, and all three
 *   sample k200         top-k 200 alone: past the 64 candidates that decide
 *                       most rows (the wide resolve, filter_resolve.cuh)
 *   cublas+gumbel       matmul, then the one-pass Gumbel sampler over the logits
 *                       (the leanest unfused sampler; no filters)
 *   cublas+logits all   matmul, then fs_sample_logits with all three filters
 *                       (the leanest unfused pipeline doing the filtered job:
 *                       sort-free, one pass over the logits)
 *   cublas+sort all     matmul, then the sort-based pipeline of an engine
 *                       without a fused kernel, all three filters: every row
 *                       sorted, cut, and sampled over the kept prefix
 *                       (bl_sort_filter_sample; checked after the timing:
 *                       its tokens lie in the kept set of the host's sort)
 *   verify / verify all fs_verify (4 drafts a request) without and with all three
 * Each line: median ms, the 10-90% spread, the ratio to the unfiltered fused
 * op and to cuBLAS, and for filtered methods the share of rows that took
 * the exact second pass (out_filter_fallback).  The HBM floor (W's bytes
 * over the measured copy bandwidth) is printed per shape.
 *
 * Usage: filter_bench [--rows 1,4,16,64] [--rounds 5] [--reps 10]
 *                     [--shapes 151936x4096,128256x8192] [--logits 1,2,0]
 *                     [--methods p0.9,all]
 * (--logits: the logit shapes, FB_PEAKED 1, FB_MODERATE 2, FB_FLAT 0;
 * --methods: only these, by TAGS below, with cublas and sample -- and
 * verify when a verify method is named -- always timed for the ratios: fewer
 * launches for a profiler to sort through, shorter runs) */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "baselines.h"
#include "filter_inputs.h"
#include "filter_ref.h"
#include "flashspec.h"
#include "bench_util.h"
#include "timing.h"

enum { M_CUBLAS, M_SAMPLE, M_K, M_P, M_MINP, M_ALL, M_K200, M_GUMBEL, M_LOGITS_ALL, M_SORT_ALL,
       M_VERIFY, M_VERIFY_ALL, M_COUNT };
static const char *const NAMES[M_COUNT] = {
    "cublas", "sample", "sample k50", "sample p0.9", "sample minp0.05", "sample all",
    "sample k200", "cublas+gumbel", "cublas+logits all", "cublas+sort all", "verify",
    "verify all"};
/* --methods' names for them */
static const char *const TAGS[M_COUNT] = {
    "cublas", "sample", "k50", "p0.9", "minp0.05", "all", "k200", "cublas+gumbel",
    "cublas+logits", "cublas+sort", "verify", "verify-all"};
enum { DRAFTS = 4, MAX_SAMPLES = 512 };

typedef struct bench {
    fs_context *ctx;
    cudaStream_t stream;
    int64_t V, D, rows, requests, vrows;
    void *w, *h, *hv, *logits;
    bl_gemm *gemm;
    void *bl_ws;
    void *sort_ws; /* bl_sort_filter_sample's */
    size_t sort_ws_bytes;
    int32_t *kept;
    void *ws;
    size_t ws_bytes;
    float *temp;
    uint64_t *seed;
    int32_t *k_on, *k_off, *k_200;
    float *p_on, *p_off, *mp_on, *mp_off;
    int32_t *tok, *st, *nem, *fallback;
    float *val;
    int32_t *drafts, *offsets;
    int method;
    int pick;          /* the timed method's place in sel */
    const int *sel;    /* the methods timed (--methods) */
} bench;

static fs_sampling params(const bench *b, int method)
{
    fs_sampling p;
    memset(&p, 0, sizeof p);
    p.temperature = b->temp;
    p.seed = b->seed;
    const int k = method == M_K || method == M_ALL || method == M_LOGITS_ALL ||
                  method == M_VERIFY_ALL;
    const int pp = method == M_P || method == M_ALL || method == M_LOGITS_ALL ||
                   method == M_VERIFY_ALL;
    const int mp = method == M_MINP || method == M_ALL || method == M_LOGITS_ALL ||
                   method == M_VERIFY_ALL;
    if (method == M_K200) {
        p.top_k = b->k_200;
        p.out_filter_fallback = b->fallback;
    } else if (k || pp || mp) {
        p.top_k = k ? b->k_on : b->k_off;
        p.top_p = pp ? b->p_on : b->p_off;
        p.min_p = mp ? b->mp_on : b->mp_off;
        p.out_filter_fallback = b->fallback;
    }
    return p;
}

static int run(void *arg)
{
    bench *b = arg;
    fs_lm_head head = {b->w, b->V, b->D, FS_DTYPE_BF16};
    fs_sampling p = params(b, b->method);
    fs_status s = FS_OK;
    switch (b->method) {
    case M_CUBLAS:
        return bl_gemm_run(b->gemm, b->w, b->h, b->logits, b->stream);
    case M_GUMBEL:
        if (bl_gemm_run(b->gemm, b->w, b->h, b->logits, b->stream))
            return 1;
        return bl_gumbel_sample(b->logits, b->rows, b->V, b->temp, b->seed, b->bl_ws, b->tok,
                                b->stream) != cudaSuccess;
    case M_SORT_ALL:
        if (bl_gemm_run(b->gemm, b->w, b->h, b->logits, b->stream))
            return 1;
        return bl_sort_filter_sample(b->logits, b->rows, b->V, b->temp, b->k_on, b->p_on,
                                     b->mp_on, b->seed, b->sort_ws, b->sort_ws_bytes, b->tok,
                                     b->kept, b->stream) != cudaSuccess;
    case M_LOGITS_ALL:
        if (bl_gemm_run(b->gemm, b->w, b->h, b->logits, b->stream))
            return 1;
        s = fs_sample_logits(b->ctx, b->logits, FS_DTYPE_BF16, b->rows, b->V, &p, b->ws,
                             b->ws_bytes, b->tok, b->val, b->st);
        break;
    case M_VERIFY:
    case M_VERIFY_ALL: {
        fs_drafts d = {b->requests, b->requests * DRAFTS, DRAFTS, b->drafts, b->offsets};
        s = fs_verify(b->ctx, &head, b->hv, &d, &p, b->ws, b->ws_bytes, b->tok, b->nem, b->val,
                      b->st);
        break;
    }
    default:
        s = fs_sample(b->ctx, &head, b->h, b->rows, &p, b->ws, b->ws_bytes, b->tok, b->val,
                      b->st);
    }
    if (s != FS_OK)
        fprintf(stderr, "%s: %s\n", NAMES[b->method], fs_context_last_error(b->ctx));
    return s != FS_OK;
}

/* run() for the method in place b->pick of the selection. */
static int run_pick(void *arg)
{
    bench *b = arg;
    b->method = b->sel[b->pick];
    return run(b);
}

/* --methods TAGS (comma-separated) into sel[]: the named methods and the
 * bases their ratios need, in the methods' order; returns how many, or -1
 * (with a message) on an unknown name. */
static int parse_methods(const char *list, int *sel)
{
    int want[M_COUNT] = {0};
    const char *p = list;
    while (*p) {
        const size_t n = strcspn(p, ",");
        int m = 0;
        while (m < M_COUNT && !(strlen(TAGS[m]) == n && !strncmp(p, TAGS[m], n)))
            ++m;
        if (m == M_COUNT) {
            fprintf(stderr, "--methods: unknown method '%.*s' (one of:", (int)n, p);
            for (int k = 0; k < M_COUNT; ++k)
                fprintf(stderr, " %s", TAGS[k]);
            fprintf(stderr, ")\n");
            return -1;
        }
        want[m] = 1;
        if (m >= M_VERIFY)
            want[M_VERIFY] = 1;
        p += n + (p[n] == ',');
    }
    want[M_CUBLAS] = want[M_SAMPLE] = 1;
    int count = 0;
    for (int m = 0; m < M_COUNT; ++m)
        if (want[m])
            sel[count++] = m;
    return count;
}

/* Rows of the last call that took the second pass, over the filtered rows
 * the call had (-1 when the method has no filters). */
static double fallback_share(bench *b, int method)
{
    if (method == M_CUBLAS || method == M_SAMPLE || method == M_GUMBEL || method == M_SORT_ALL ||
        method == M_VERIFY)
        return -1.0;
    const int64_t n = method >= M_VERIFY ? b->requests : b->rows;
    int32_t *h = malloc(sizeof(int32_t) * (size_t)n);
    b->method = method;
    if (run(b))
        exit(1);
    CUDA_CHECK(cudaStreamSynchronize(b->stream));
    CUDA_CHECK(cudaMemcpy(h, b->fallback, sizeof(int32_t) * (size_t)n, cudaMemcpyDeviceToHost));
    int64_t sum = 0;
    for (int64_t i = 0; i < n; ++i)
        sum += h[i];
    free(h);
    return (double)sum / (double)(method >= M_VERIFY ? b->vrows : b->rows);
}

static int desc_float(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The sort-based pipeline's last call (all three filters, T = 1) against
 * the host: the token must lie in the kept set of docs/DESIGN.md's rule
 * (ties at a threshold kept; the tests' oracle, ref_filter_keep, exact), and
 * the kept prefix must be the one the pipeline's own rule gives on the
 * host's sort of the row (cuts by sort position, as vLLM's; the two differ
 * where a tie group straddles the top-k cut, whose whole group then also
 * enters top-p's mass).  Prints the rows that pass each. */
static void check_sort(bench *b)
{
    const int64_t R = b->rows, V = b->V;
    uint16_t *lg = malloc(sizeof(uint16_t) * (size_t)(R * V));
    float *s = malloc(sizeof(float) * (size_t)V);
    double *sd = malloc(sizeof(double) * (size_t)V);
    unsigned char *keep = malloc((size_t)V);
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)R), *kept = malloc(sizeof(int32_t) * (size_t)R);
    b->method = M_SORT_ALL;
    if (run(b))
        exit(1);
    CUDA_CHECK(cudaStreamSynchronize(b->stream));
    CUDA_CHECK(cudaMemcpy(lg, b->logits, sizeof(uint16_t) * (size_t)(R * V), cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(tok, b->tok, sizeof(int32_t) * (size_t)R, cudaMemcpyDeviceToHost));
    CUDA_CHECK(cudaMemcpy(kept, b->kept, sizeof(int32_t) * (size_t)R, cudaMemcpyDeviceToHost));
    const double P = 0.9, LOG_MINP = log(0.05);
    const int64_t K = 50 < V ? 50 : V;
    const ref_filter f = {50, P, 0.05};
    int64_t in_set = 0, same_prefix = 0;
    for (int64_t r = 0; r < R; ++r) {
        for (int64_t i = 0; i < V; ++i) {
            const uint32_t bits = (uint32_t)lg[r * V + i] << 16;
            memcpy(&s[i], &bits, sizeof bits);
            sd[i] = s[i];
        }
        ref_filter_keep(sd, V, &f, 0.0, keep);
        in_set += tok[r] >= 0 && tok[r] < V && keep[tok[r]];
        /* the position rule on the sorted row: the first K places, the first
           place whose mass before reaches P of theirs, the first below min-p */
        qsort(s, (size_t)V, sizeof(float), desc_float);
        double zp = 0.0;
        for (int64_t j = 0; j < K; ++j)
            zp += exp((double)s[j] - s[0]);
        int64_t pos = 0;
        double before = 0.0;
        while (pos < K && before < P * zp && (double)s[pos] - s[0] >= LOG_MINP)
            before += exp((double)s[pos++] - s[0]);
        same_prefix += kept[r] == pos;
    }
    printf("#   cublas+sort all: token in the kept set (ties kept) %lld/%lld rows; kept prefix as "
           "the host's position cuts %lld/%lld\n",
           (long long)in_set, (long long)R, (long long)same_prefix, (long long)R);
    free(lg);
    free(s);
    free(sd);
    free(keep);
    free(tok);
    free(kept);
}

int main(int argc, char **argv)
{
    int64_t rows_list[16] = {1, 4, 16, 64}, shapes[8] = {151936, 4096, 128256, 8192};
    int64_t logit_list[3] = {FB_PEAKED, FB_MODERATE, FB_FLAT};
    int nrows = 4, nshape = 4, nlogit = 3, rounds = 5, reps = 10;
    const bu_list_opt lists[] = {{"rows", rows_list, &nrows, 16},
                                 {"shapes", shapes, &nshape, 8},
                                 {"logits", logit_list, &nlogit, 3}};
    bu_parse_args(argc, argv, lists, 3, &rounds, &reps, MAX_SAMPLES);
    int sel[M_COUNT], nsel = M_COUNT;
    for (int m = 0; m < M_COUNT; ++m)
        sel[m] = m;
    for (int i = 1; i + 1 < argc; i += 2)
        if (!strcmp(argv[i], "--methods") && (nsel = parse_methods(argv[i + 1], sel)) < 0)
            return 1;
    const char *sel_names[M_COUNT];
    int has_sort = 0;
    for (int i = 0; i < nsel; ++i) {
        sel_names[i] = NAMES[sel[i]];
        has_sort |= sel[i] == M_SORT_ALL;
    }
    static const char *const LOGIT_NAMES[3] = {"flat", "peaked", "moderate"};
    int device = 0;
    CUDA_CHECK(cudaSetDevice(device));
    CUDA_CHECK(bl_init(device));
    int l2 = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
    bench b;
    memset(&b, 0, sizeof b);
    b.sel = sel;
    CUDA_CHECK(cudaStreamCreate(&b.stream));
    if (fs_context_create(&b.ctx, FS_DEVICE_CUDA, device) != FS_OK) {
        fprintf(stderr, "no CUDA context\n");
        return 1;
    }
    fs_context_set_stream(b.ctx, b.stream);
    bench_timer t;
    bench_timer_init(&t, b.stream, (size_t)l2, reps);
    const double bw = bench_copy_bandwidth(b.stream, (size_t)1 << 30, 20); /* GB/s, r + w */
    printf("# filter_bench: rounds %d x reps %d per method, L2 flushed, medians (ms)\n", rounds,
           reps);
    printf("# copy bandwidth %.0f GB/s (read + write bytes); HBM floor = W bytes / that rate\n", bw);
    int64_t max_rows = 0;
    for (int i = 0; i < nrows; ++i)
        if (rows_list[i] * (DRAFTS + 1) > max_rows)
            max_rows = rows_list[i] * (DRAFTS + 1);
    /* per-request arrays (the largest call) */
    float *temp = malloc(sizeof(float) * (size_t)max_rows), *pon = malloc(sizeof(float) * (size_t)max_rows);
    float *poff = malloc(sizeof(float) * (size_t)max_rows), *mpon = malloc(sizeof(float) * (size_t)max_rows);
    float *mpoff = malloc(sizeof(float) * (size_t)max_rows);
    int32_t *kon = malloc(sizeof(int32_t) * (size_t)max_rows), *koff = malloc(sizeof(int32_t) * (size_t)max_rows);
    int32_t *k200 = malloc(sizeof(int32_t) * (size_t)max_rows);
    uint64_t *seed = malloc(sizeof(uint64_t) * (size_t)max_rows);
    for (int64_t i = 0; i < max_rows; ++i) {
        temp[i] = 1.0f;
        pon[i] = 0.9f;
        poff[i] = 1.0f;
        mpon[i] = 0.05f;
        mpoff[i] = 0.0f;
        kon[i] = 50;
        k200[i] = 200;
        koff[i] = 0;
        seed[i] = 1234567u + (uint64_t)i * 7919u;
    }
    b.temp = bu_dup(temp, sizeof(float) * (size_t)max_rows);
    b.p_on = bu_dup(pon, sizeof(float) * (size_t)max_rows);
    b.p_off = bu_dup(poff, sizeof(float) * (size_t)max_rows);
    b.mp_on = bu_dup(mpon, sizeof(float) * (size_t)max_rows);
    b.mp_off = bu_dup(mpoff, sizeof(float) * (size_t)max_rows);
    b.k_on = bu_dup(kon, sizeof(int32_t) * (size_t)max_rows);
    b.k_off = bu_dup(koff, sizeof(int32_t) * (size_t)max_rows);
    b.k_200 = bu_dup(k200, sizeof(int32_t) * (size_t)max_rows);
    b.seed = bu_dup(seed, sizeof(uint64_t) * (size_t)max_rows);
    b.tok = bu_dmalloc(sizeof(int32_t) * (size_t)max_rows * (DRAFTS + 1));
    b.val = bu_dmalloc(sizeof(float) * (size_t)max_rows * (DRAFTS + 1));
    b.st = bu_dmalloc(sizeof(int32_t) * (size_t)max_rows);
    b.nem = bu_dmalloc(sizeof(int32_t) * (size_t)max_rows);
    b.fallback = bu_dmalloc(sizeof(int32_t) * (size_t)max_rows);
    b.kept = bu_dmalloc(sizeof(int32_t) * (size_t)max_rows);
    int64_t max_sample_rows = 0;
    for (int i = 0; i < nrows; ++i)
        if (rows_list[i] > max_sample_rows)
            max_sample_rows = rows_list[i];

    printf("%-16s %-8s %5s  %-18s %9s %17s %9s %9s %9s\n", "shape", "logits", "rows", "method",
           "median", "p10-p90", "/fused", "/cublas", "2nd pass");
    for (int si = 0; si + 1 < nshape; si += 2) {
        b.V = shapes[si];
        b.D = shapes[si + 1];
        const double floor_ms = (double)b.V * (double)b.D * 2.0 / (bw * 1e9) * 1e3;
        printf("# %lldx%lld: W %.2f GB, HBM floor %.3f ms\n", (long long)b.V, (long long)b.D,
               (double)b.V * (double)b.D * 2e-9, floor_ms);
        b.w = bu_dmalloc((size_t)(b.V * b.D) * 2);
        b.h = bu_dmalloc((size_t)(max_rows * b.D) * 2);
        b.hv = b.h;
        b.logits = bu_dmalloc((size_t)(max_rows * b.V) * 2);
        b.bl_ws = bu_dmalloc(bl_workspace_bytes(max_rows, b.V));
        b.sort_ws_bytes = bl_sort_filter_workspace_bytes(max_sample_rows, b.V);
        b.sort_ws = bu_dmalloc(b.sort_ws_bytes);
        CUDA_CHECK(cudaMemset(b.bl_ws, 0, bl_workspace_bytes(max_rows, b.V)));
        size_t wsb = 0, vwsb = 0;
        fs_sample_workspace_size(b.ctx, max_rows, b.V, &wsb);
        fs_verify_workspace_size(b.ctx, max_rows / (DRAFTS + 1), max_rows / (DRAFTS + 1) * DRAFTS,
                                 b.V, &vwsb);
        b.ws_bytes = wsb > vwsb ? wsb : vwsb;
        b.ws = bu_dmalloc(b.ws_bytes);
        for (int li = 0; li < nlogit; ++li) {
            const int shape = (int)logit_list[li];
            if (shape < FB_FLAT || shape > FB_MODERATE) {
                fprintf(stderr, "--logits: 0 (flat), 1 (peaked) or 2 (moderate)\n");
                return 1;
            }
            CUDA_CHECK(fb_fill_head(b.w, b.h, b.V, b.D, max_rows, shape, 42, b.stream));
            CUDA_CHECK(cudaStreamSynchronize(b.stream));
            for (int ri = 0; ri < nrows; ++ri) {
                b.rows = rows_list[ri];
                b.requests = rows_list[ri];
                b.vrows = b.requests * (DRAFTS + 1);
                /* drafts: each request's drafts are tokens of its rows' peaks
                   or random ones; what matters here is the op's cost */
                int32_t *dr = malloc(sizeof(int32_t) * (size_t)(b.requests * DRAFTS));
                int32_t *of = malloc(sizeof(int32_t) * (size_t)(b.requests + 1));
                for (int64_t i = 0; i < b.requests * DRAFTS; ++i)
                    dr[i] = (int32_t)((i * 2654435761u) % (uint64_t)b.V);
                for (int64_t r = 0; r <= b.requests; ++r)
                    of[r] = (int32_t)(r * DRAFTS);
                b.drafts = bu_dup(dr, sizeof(int32_t) * (size_t)(b.requests * DRAFTS));
                b.offsets = bu_dup(of, sizeof(int32_t) * (size_t)(b.requests + 1));
                free(dr);
                free(of);
                if (bl_gemm_create(&b.gemm, b.V, b.D, b.rows, b.w, b.h, b.logits, 0, b.stream)) {
                    fprintf(stderr, "gemm: %s\n", bl_gemm_last_error());
                    return 1;
                }
                static double samples[M_COUNT * MAX_SAMPLES];
                double med[M_COUNT], by_method[M_COUNT];
                const int ns = rounds * reps;
                if (bu_time_rounds(&t, nsel, sel_names, &b.pick, run_pick, &b, rounds, reps,
                                   samples, med))
                    return 1;
                for (int i = 0; i < nsel; ++i)
                    by_method[sel[i]] = med[i];
                for (int i = 0; i < nsel; ++i) {
                    const int m = sel[i];
                    const double base = m >= M_VERIFY ? by_method[M_VERIFY] : by_method[M_SAMPLE];
                    const double fb = fallback_share(&b, m);
                    char spread[32], fbs[16];
                    bu_spread(samples + (size_t)i * ns, ns, spread, sizeof spread);
                    if (fb >= 0)
                        snprintf(fbs, sizeof fbs, "%.1f%%", 100.0 * fb); /* one row in 320 shows */
                    else
                        snprintf(fbs, sizeof fbs, "-");
                    printf("%7lldx%-8lld %-8s %5lld  %-18s %9.4f %17s %9.3f %9.3f %9s\n",
                           (long long)b.V, (long long)b.D, LOGIT_NAMES[shape],
                           (long long)(m >= M_VERIFY ? b.vrows : b.rows), NAMES[m], med[i],
                           spread, med[i] / base, med[i] / by_method[M_CUBLAS], fbs);
                }
                if (has_sort)
                    check_sort(&b);
                fflush(stdout);
                bl_gemm_destroy(b.gemm);
                CUDA_CHECK(cudaFree(b.drafts));
                CUDA_CHECK(cudaFree(b.offsets));
            }
        }
        CUDA_CHECK(cudaFree(b.w));
        CUDA_CHECK(cudaFree(b.h));
        CUDA_CHECK(cudaFree(b.logits));
        CUDA_CHECK(cudaFree(b.bl_ws));
        CUDA_CHECK(cudaFree(b.sort_ws));
        CUDA_CHECK(cudaFree(b.ws));
    }
    bench_timer_destroy(&t);
    fs_context_destroy(b.ctx);
    return 0;
}
