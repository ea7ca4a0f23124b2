/* flashspec_demo: every op on the CPU backend over a small LM head, for a
 * machine without a GPU (bench/run.sh runs it there instead of the GPU
 * benchmark).  Prints tokens, an exactness check of sampling, speculative
 * acceptance, and time per call.
 *
 * The LM head W [V, D] is random (rows ~ N(0, 1/D)); each row's hidden state
 * is h = c * W[t] + N(0, 1) for a "true" token t with c drawn in [9, 14], so
 * the target puts 30-95% of its mass on t, like a language model that is
 * fairly sure of its next token.  The drafter is the same LM head read at a
 * perturbed hidden state (h + N(0, 0.3^2)), so its greedy draft is usually
 * t and sometimes wrong, and verify's acceptance shows both outcomes. */
#define _POSIX_C_SOURCE 199309L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "flashspec.h"

enum { V = 32000, D = 256, ROWS = 16, REQUESTS = 8, DRAFTS = 4, FREQ_CALLS = 400 };

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static double uniform01(void)
{
    /* xorshift64*: the demo's data only, not the library's noise */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return ((rng_state * 0x2545F4914F6CDD1Dull) >> 11) * (1.0 / 9007199254740992.0) + 1e-17;
}

static float normal(void)
{
    return (float)(sqrt(-2.0 * log(uniform01())) * cos(6.283185307179586 * uniform01()));
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

static void check(fs_context *ctx, fs_status st, const char *what)
{
    /* FS_ERR_INVALID_ROWS would name a failed row: the demo's rows are valid */
    if (st != FS_OK) {
        fprintf(stderr, "%s: %s (%s)\n", what, fs_status_string(st), fs_context_last_error(ctx));
        exit(1);
    }
}

/* h = c * W[t] + noise, c in [9, 14]. */
static void make_hidden(const float *w, int32_t t, float noise, float *h)
{
    float c = 9.0f + 5.0f * (float)uniform01();
    for (int k = 0; k < D; ++k)
        h[k] = c * w[(size_t)t * D + k] + noise * normal();
}

/* The target's probabilities of one row at temperature T, materialised:
 * the oracle the frequency check compares with. */
static void softmax_row(const float *w, const float *h, float T, double *p)
{
    double m = -INFINITY, z = 0.0;
    for (int v = 0; v < V; ++v) {
        double l = 0.0;
        for (int k = 0; k < D; ++k)
            l += (double)h[k] * w[(size_t)v * D + k];
        p[v] = l / T;
        if (p[v] > m)
            m = p[v];
    }
    for (int v = 0; v < V; ++v)
        z += (p[v] = exp(p[v] - m));
    for (int v = 0; v < V; ++v)
        p[v] /= z;
}

int main(void)
{
    fs_context *ctx;
    if (fs_context_create(&ctx, FS_DEVICE_CPU, 0) != FS_OK) {
        fprintf(stderr, "cannot create a CPU context\n");
        return 1;
    }
    printf("flashspec %d.%d.%d CPU demo: LM head V=%d D=%d f32 (CUDA backend %s)\n\n",
           FS_VERSION_MAJOR, FS_VERSION_MINOR, FS_VERSION_PATCH, V, D,
           fs_cuda_available() ? "available" : "not available on this machine");

    float *w = malloc(sizeof(float) * (size_t)V * D);
    float *h = malloc(sizeof(float) * (size_t)(REQUESTS * (DRAFTS + 1) + ROWS) * D);
    float *hd = malloc(sizeof(float) * (size_t)REQUESTS * DRAFTS * D);
    double *p = malloc(sizeof(double) * V);
    if (!w || !h || !hd || !p)
        return 1;
    for (size_t i = 0; i < (size_t)V * D; ++i)
        w[i] = normal() / sqrtf((float)D);
    fs_lm_head head = {w, V, D, FS_DTYPE_F32};

    int32_t truth[ROWS], tok[ROWS], st[ROWS];
    float lp[ROWS], temp[ROWS];
    uint64_t seed[ROWS];
    for (int r = 0; r < ROWS; ++r) {
        truth[r] = (int32_t)(uniform01() * V);
        make_hidden(w, truth[r], 1.0f, h + (size_t)r * D);
        temp[r] = 0.8f;
        seed[r] = 1000 + (uint64_t)r;
    }
    fs_sampling sp = {.temperature = temp, .seed = seed};
    size_t ws_bytes = 0, need;
    check(ctx, fs_sample_workspace_size(ctx, ROWS, V, &need), "workspace");
    ws_bytes = need;
    check(ctx, fs_verify_workspace_size(ctx, REQUESTS, REQUESTS * DRAFTS, V, &need), "workspace");
    ws_bytes = need > ws_bytes ? need : ws_bytes;
    void *ws = malloc(ws_bytes);

    /* sample */
    double t0 = now_ms();
    check(ctx, fs_sample(ctx, &head, h, ROWS, &sp, ws, ws_bytes, tok, lp, st), "fs_sample");
    double t_sample = now_ms() - t0;
    int hits = 0;
    printf("fs_sample, %d rows at T = 0.8 (%.1f ms):\n  row  token  logprob  (true token)\n",
           ROWS, t_sample);
    for (int r = 0; r < ROWS; ++r) {
        hits += tok[r] == truth[r];
        if (r < 6)
            printf("  %3d  %5d  %7.3f  (%d)\n", r, tok[r], lp[r], truth[r]);
    }
    printf("  ... %d of %d rows drew their true token\n\n", hits, ROWS);

    /* exactness in miniature: one row sampled under FREQ_CALLS seeds against
       the materialised softmax */
    softmax_row(w, h, 0.8f, p);
    int top = 0;
    for (int v = 1; v < V; ++v)
        top = p[v] > p[top] ? v : top;
    int count = 0;
    t0 = now_ms();
    for (int c = 0; c < FREQ_CALLS; ++c) {
        uint64_t s = 77 + (uint64_t)c;
        fs_sampling one = {.temperature = temp, .seed = &s};
        check(ctx, fs_sample(ctx, &head, h, 1, &one, ws, ws_bytes, tok, NULL, st), "fs_sample");
        count += tok[0] == top;
    }
    double t_one = (now_ms() - t0) / FREQ_CALLS;
    double f = (double)count / FREQ_CALLS, se = sqrt(p[top] * (1 - p[top]) / FREQ_CALLS);
    printf("exactness check, row 0 sampled with %d seeds (%.2f ms a call):\n"
           "  token %d drawn %.3f of the time; softmax says %.3f (+- %.3f, 1 sigma): %s\n\n",
           FREQ_CALLS, t_one, top, f, p[top], se,
           fabs(f - p[top]) <= 4 * se ? "consistent" : "INCONSISTENT");

    /* draft argmax at the drafter's hidden states; verify with the target */
    int32_t offsets[REQUESTS + 1], drafts[REQUESTS * DRAFTS], dst[REQUESTS * DRAFTS];
    float *th = h + (size_t)ROWS * D;
    for (int r = 0; r < REQUESTS; ++r) {
        offsets[r] = r * DRAFTS;
        for (int j = 0; j <= DRAFTS; ++j) {
            int32_t t = (int32_t)(uniform01() * V);
            float *row = th + (size_t)(r * (DRAFTS + 1) + j) * D;
            make_hidden(w, t, 1.0f, row);
            if (j < DRAFTS)
                for (int k = 0; k < D; ++k)
                    hd[(size_t)(r * DRAFTS + j) * D + k] = row[k] + 0.3f * normal();
        }
    }
    offsets[REQUESTS] = REQUESTS * DRAFTS;
    t0 = now_ms();
    check(ctx, fs_draft_argmax(ctx, &head, hd, REQUESTS * DRAFTS, ws, ws_bytes, drafts, NULL, dst),
          "fs_draft_argmax");
    double t_argmax = now_ms() - t0;
    printf("fs_draft_argmax, %d rows (%.1f ms): drafts of request 0: %d %d %d %d\n\n",
           REQUESTS * DRAFTS, t_argmax, drafts[0], drafts[1], drafts[2], drafts[3]);

    float vt[REQUESTS];
    uint64_t vs[REQUESTS];
    for (int r = 0; r < REQUESTS; ++r) {
        vt[r] = 1.0f;
        vs[r] = 5000 + (uint64_t)r;
    }
    fs_sampling vp = {.temperature = vt, .seed = vs};
    fs_drafts dr = {REQUESTS, REQUESTS * DRAFTS, DRAFTS, drafts, offsets};
    int32_t out[REQUESTS * (DRAFTS + 1)], emitted[REQUESTS], rst[REQUESTS];
    float olp[REQUESTS * (DRAFTS + 1)];
    t0 = now_ms();
    check(ctx, fs_verify(ctx, &head, th, &dr, &vp, ws, ws_bytes, out, emitted, olp, rst),
          "fs_verify");
    double t_verify = now_ms() - t0;
    int accepted = 0, total = 0, tried = 0;
    printf("fs_verify, %d requests x %d greedy drafts at T = 1 (%d target rows, %.1f ms):\n",
           REQUESTS, DRAFTS, REQUESTS * (DRAFTS + 1), t_verify);
    for (int r = 0; r < REQUESTS; ++r) {
        accepted += emitted[r] - 1;
        total += emitted[r];
        tried += emitted[r] - 1 < DRAFTS ? emitted[r] : DRAFTS; /* the walk stops at a rejection */
        printf("  request %d: %d of %d drafts accepted, emitted", r, emitted[r] - 1, DRAFTS);
        for (int k = 0; k < emitted[r]; ++k)
            printf(" %d", out[r * (DRAFTS + 1) + k]);
        printf("\n");
    }
    printf("  %d of %d drafts tried were accepted (%.2f); %.2f tokens per verify step\n"
           "  (1.00 without drafts)\n\n",
           accepted, tried, (double)accepted / tried, (double)total / REQUESTS);

    /* the logits variants on the same rows give the same tokens */
    float *logits = malloc(sizeof(float) * (size_t)ROWS * V);
    for (int r = 0; r < ROWS; ++r)
        for (int v = 0; v < V; ++v) {
            float acc = 0.0f;
            for (int k = 0; k < D; ++k)
                acc += h[(size_t)r * D + k] * w[(size_t)v * D + k];
            logits[(size_t)r * V + v] = acc;
        }
    int32_t tok2[ROWS];
    check(ctx, fs_sample(ctx, &head, h, ROWS, &sp, ws, ws_bytes, tok, NULL, st), "fs_sample");
    check(ctx, fs_sample_logits(ctx, logits, FS_DTYPE_F32, ROWS, V, &sp, ws, ws_bytes, tok2, NULL, st),
          "fs_sample_logits");
    int same = 0;
    for (int r = 0; r < ROWS; ++r)
        same += tok[r] == tok2[r];
    printf("fs_sample_logits over the materialised logits: %d of %d rows pick the same token as\n"
           "fs_sample (differences only at float near-ties)\n\n", same, ROWS);

    printf("summary (CPU backend, this machine): sample %.2f ms/row, draft argmax %.2f ms/row,\n"
           "verify %.2f ms/target row.  The GPU benchmark (bench/run.sh on a GPU machine)\n"
           "compares the CUDA ops with cuBLAS and unfused pipelines.\n",
           t_sample / ROWS, t_argmax / (REQUESTS * DRAFTS), t_verify / (REQUESTS * (DRAFTS + 1)));
    const int ok = fabs(f - p[top]) <= 4 * se;
    free(logits);
    free(ws);
    free(p);
    free(hd);
    free(h);
    free(w);
    fs_context_destroy(ctx);
    return ok ? 0 : 1;
}
