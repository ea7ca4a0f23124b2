/* Chi-squared goodness of fit of the GPU sample and verify paths (GSL).
 *
 * Many rows share the same logits and differ only in their seed, so one call
 * draws thousands of independent samples; 50 calls with fresh seeds give
 * 204,800 per test.  Expected probabilities are computed on the host in
 * double from the same inputs (naive oracle).  Small vocabularies: V = 37
 * (one tile), and 37 allowed tokens spread over V = 592 (five fused tiles,
 * so the cross-tile merge is exercised; with thousands of rows the logits
 * path takes the row in one chunk).
 *
 * Verify with greedy drafts: the first emitted token follows p0 whatever the
 * draft; given that draft 0 was accepted (first token == x0), the next
 * emitted token follows p1 (the draft-1 row, or the bonus row); given two
 * acceptances, the third follows p2.  Every test uses a Bonferroni-corrected
 * threshold; seeds are fixed, so the outcome is deterministic. */
#include "gpu_util.h"
#include "stat_harness.h"

#ifdef FS_HAVE_CUDA

#define N_TESTS 18
#define ALPHA (1e-3 / N_TESTS)
#define REJECT 1e-6 /* a power check's wrong law must give p below this */

enum { BATCH = 4096, VMAX = 600, D = 16 };

/* 50 calls of 4096 rows; 4 under FS_GPU_TEST_SMALL=1 (sanitizer runs). */
static int calls(void)
{
    return gt_small_mode() ? 4 : 50;
}

typedef struct dist_case {
    const char *name;
    int fused;
    fs_dtype dt;
    int64_t V;
    int spread; /* 37 allowed tokens spread over V */
    float T;
    int with_bias;
} dist_case;

/* Per-row-kind inputs: hidden state (fused) or logits, bias, mask. */
typedef struct kind_in {
    float hidden[D];
    float logits[VMAX];
    float bias[VMAX];
    uint32_t allowed[(VMAX + 31) / 32];
} kind_in;

static void make_kind(const dist_case *c, uint64_t seed, kind_in *k)
{
    fst_rng rng;
    fst_rng_seed(&rng, seed);
    for (int i = 0; i < D; ++i)
        k->hidden[i] = (float)fst_normal(&rng);
    for (int v = 0; v < VMAX; ++v) {
        k->logits[v] = (float)(1.5 * fst_normal(&rng));
        k->bias[v] = c->with_bias && v % 5 == 0 ? (float)(fst_randint(&rng, 129) - 64) / 64.0f : 0.0f;
    }
    memset(k->allowed, 0, sizeof k->allowed);
    for (int v = 0; v < c->V; ++v)
        if (!c->spread || v % 16 == 5)
            fst_set_allowed(k->allowed, v, 1);
}

/* Shared LM head W [V, D] in the case's dtype, so that logits have a spread
 * of ~1.5. */
static void make_head(const dist_case *c, uint64_t seed, void **as_dt)
{
    fst_rng rng;
    fst_rng_seed(&rng, seed);
    float *w = malloc(sizeof(float) * (size_t)(c->V * D));
    for (int64_t i = 0; i < c->V * D; ++i)
        w[i] = (float)(1.5 * fst_normal(&rng) / sqrt((double)D));
    *as_dt = fst_pack(w, (size_t)(c->V * D), c->dt);
    free(w);
}

/* Expected distribution of a row of kind k (double, from the stored inputs). */
static void expected(const dist_case *c, const kind_in *k, const void *w_dt, double *p)
{
    double *l;
    if (c->fused) {
        void *h = fst_pack(k->hidden, D, c->dt);
        l = ref_logits_fused(w_dt, h, c->dt, 1, c->V, D);
        free(h);
    } else {
        void *ls = fst_pack(k->logits, (size_t)c->V, c->dt);
        l = ref_logits_stored(ls, c->dt, 1, c->V);
        free(ls);
    }
    /* the stored bias and mask rows are laid out for V = c->V */
    float *b = malloc(sizeof(float) * (size_t)c->V);
    memcpy(b, k->bias, sizeof(float) * (size_t)c->V);
    int32_t st = ref_row_logp(l, c->V, b, k->allowed, c->T, p);
    assert_int_equal(st, FS_ROW_OK);
    for (int64_t v = 0; v < c->V; ++v)
        p[v] = exp(p[v]);
    free(b);
    free(l);
}

static void report(const char *what, const fst_chi2 *r)
{
    printf("  %-52s n=%8llu chi2=%9.2f df=%3d p=%.4f worst |z|=%.2f (token %lld)\n", what,
           (unsigned long long)r->n, r->stat, r->df, r->p, r->worst_z, (long long)r->worst_cell);
    fflush(stdout);
}

static void check(const char *what, const uint64_t *obs, const double *p, int64_t V)
{
    fst_chi2 r;
    double pv = fst_chi2_test(obs, p, V, &r);
    report(what, &r);
    assert_int_equal(r.impossible, 0);
    if (!(pv >= ALPHA))
        fail_msg("%s: chi-squared p = %.3g < %.3g", what, pv, ALPHA);
}

/* Device copies of `rows` rows, row i of kind kinds[i % nk]. */
typedef struct dev_rows {
    void *w, *h, *l;
    float *bias;
    uint32_t *allowed;
} dev_rows;

static void upload_rows(const dist_case *c, const void *w_dt, const kind_in *kinds, int nk,
                        int64_t rows, dev_rows *d)
{
    memset(d, 0, sizeof *d);
    int64_t V = c->V, words = fst_mask_words(V);
    size_t es = fst_dtype_size(c->dt);
    if (c->fused) {
        d->w = gt_dup(w_dt, es * (size_t)(V * D));
        float *h = malloc(sizeof(float) * (size_t)(rows * D));
        for (int64_t i = 0; i < rows; ++i)
            memcpy(h + i * D, kinds[i % nk].hidden, sizeof(float) * D);
        void *hd = fst_pack(h, (size_t)(rows * D), c->dt);
        d->h = gt_dup(hd, es * (size_t)(rows * D));
        free(hd);
        free(h);
    } else {
        float *l = malloc(sizeof(float) * (size_t)(rows * V));
        for (int64_t i = 0; i < rows; ++i)
            memcpy(l + i * V, kinds[i % nk].logits, sizeof(float) * (size_t)V);
        void *ld = fst_pack(l, (size_t)(rows * V), c->dt);
        d->l = gt_dup(ld, es * (size_t)(rows * V));
        free(ld);
        free(l);
    }
    float *b = malloc(sizeof(float) * (size_t)(rows * V));
    uint32_t *a = malloc(sizeof(uint32_t) * (size_t)(rows * words));
    for (int64_t i = 0; i < rows; ++i) {
        memcpy(b + i * V, kinds[i % nk].bias, sizeof(float) * (size_t)V);
        memcpy(a + i * words, kinds[i % nk].allowed, sizeof(uint32_t) * (size_t)words);
    }
    d->bias = gt_dup(b, sizeof(float) * (size_t)(rows * V));
    d->allowed = gt_dup(a, sizeof(uint32_t) * (size_t)(rows * words));
    free(b);
    free(a);
}

static void free_rows(dev_rows *d)
{
    gt_dfree(d->w);
    gt_dfree(d->h);
    gt_dfree(d->l);
    gt_dfree(d->bias);
    gt_dfree(d->allowed);
}

/* ---- sample ------------------------------------------------------------- */

static void sample_case(const dist_case *c, uint64_t seed)
{
    printf("%s\n", c->name);
    kind_in k;
    make_kind(c, seed, &k);
    void *w_dt = NULL;
    if (c->fused)
        make_head(c, seed + 1, &w_dt);
    double p[VMAX];
    expected(c, &k, w_dt, p);

    fs_context *ctx = gt_gpu_ctx();
    dev_rows d;
    upload_rows(c, w_dt, &k, 1, BATCH, &d);
    float temp[BATCH];
    uint64_t seeds[BATCH];
    for (int i = 0; i < BATCH; ++i)
        temp[i] = c->T;
    float *d_temp = gt_dup(temp, sizeof temp);
    uint64_t *d_seed = gt_dmalloc(sizeof seeds);
    fs_sampling prm = {d_temp, d_seed, NULL, d.bias, d.allowed};
    size_t wsb = 0;
    GT_FS(ctx, fs_sample_workspace_size(ctx, BATCH, c->V, &wsb));
    void *ws = gt_dmalloc(wsb);
    int32_t *tok = gt_dmalloc(sizeof(int32_t) * BATCH), *st = gt_dmalloc(sizeof(int32_t) * BATCH);
    fs_lm_head head = {d.w, c->V, D, c->dt};
    uint64_t obs[VMAX] = {0};
    int32_t htok[BATCH], hst[BATCH];
    for (int call = 0; call < calls(); ++call) {
        for (int i = 0; i < BATCH; ++i)
            seeds[i] = seed * 0x100000001b3ull + (uint64_t)call * BATCH + (uint64_t)i;
        GT_CUDA(cudaMemcpy(d_seed, seeds, sizeof seeds, cudaMemcpyHostToDevice));
        if (c->fused)
            GT_FS(ctx, fs_sample(ctx, &head, d.h, BATCH, &prm, ws, wsb, tok, NULL, st));
        else
            GT_FS(ctx, fs_sample_logits(ctx, d.l, c->dt, BATCH, c->V, &prm, ws, wsb, tok, NULL, st));
        gt_down(htok, tok, sizeof htok);
        gt_down(hst, st, sizeof hst);
        for (int i = 0; i < BATCH; ++i) {
            assert_int_equal(hst[i], FS_ROW_OK);
            assert_true(htok[i] >= 0 && htok[i] < c->V);
            obs[htok[i]]++;
        }
    }
    check("sampled token ~ softmax((l + b) / T) over the allowed set", obs, p, c->V);

    gt_dfree(d_temp);
    gt_dfree(d_seed);
    gt_dfree(ws);
    gt_dfree(tok);
    gt_dfree(st);
    free_rows(&d);
    free(w_dt);
    fs_context_destroy(ctx);
}

static void test_sample_v37_fused_bf16(void **state)
{
    (void)state;
    dist_case c = {"sample, fused bf16, V = 37, T = 0.9, bias", 1, FS_DTYPE_BF16, 37, 0, 0.9f, 1};
    sample_case(&c, 11);
}

static void test_sample_spread_fused_f16(void **state)
{
    (void)state;
    dist_case c = {"sample, fused fp16, 37 allowed of V = 592 (5 tiles), T = 1.3", 1, FS_DTYPE_F16,
                   592, 1, 1.3f, 0};
    sample_case(&c, 12);
}

static void test_sample_spread_logits_f32(void **state)
{
    (void)state;
    dist_case c = {"sample, logits f32, 37 allowed of V = 592, T = 0.8, bias", 0,
                   FS_DTYPE_F32, 592, 1, 0.8f, 1};
    sample_case(&c, 13);
}

/* ---- verify ------------------------------------------------------------- */

/* Requests with n drafts each (x_j = drafts[j]); rows of kind j at position j. */
static void verify_case(const dist_case *c, int n, uint64_t seed, int tests_here)
{
    printf("%s\n", c->name);
    kind_in kinds[3];
    double p[3][VMAX];
    void *w_dt = NULL;
    if (c->fused)
        make_head(c, seed + 1, &w_dt);
    for (int j = 0; j <= n; ++j) {
        make_kind(c, seed + 100 * (uint64_t)j, &kinds[j]);
        expected(c, &kinds[j], w_dt, p[j]);
    }
    /* drafts: the most likely token at position 0 (accepted often), a middling
       one at position 1 */
    int32_t x[2];
    for (int j = 0; j < n; ++j) {
        int64_t best = -1, mid = -1;
        for (int64_t v = 0; v < c->V; ++v)
            if (p[j][v] > 0 && (best < 0 || p[j][v] > p[j][best]))
                best = v;
        for (int64_t v = 0; v < c->V; ++v)
            if (p[j][v] > 0 && v != best && (mid < 0 || fabs(p[j][v] - 0.15) < fabs(p[j][mid] - 0.15)))
                mid = v;
        x[j] = (int32_t)(j == 0 ? best : mid);
        printf("  draft %d: token %d with p = %.4f\n", j, x[j], p[j][x[j]]);
    }

    const int64_t R = BATCH, rows = R * (n + 1), ndt = R * n;
    fs_context *ctx = gt_gpu_ctx();
    dev_rows d;
    upload_rows(c, w_dt, kinds, n + 1, rows, &d);
    float *temp = malloc(sizeof(float) * R);
    uint64_t *seeds = malloc(sizeof(uint64_t) * R), *offs = malloc(sizeof(uint64_t) * R);
    int32_t *drafts = malloc(sizeof(int32_t) * (size_t)(ndt + 1));
    int32_t *offsets = malloc(sizeof(int32_t) * (R + 1));
    for (int64_t r = 0; r < R; ++r) {
        temp[r] = c->T;
        offs[r] = (uint64_t)r * 977u;
        offsets[r] = (int32_t)(r * n);
        for (int j = 0; j < n; ++j)
            drafts[r * n + j] = x[j];
    }
    offsets[R] = (int32_t)ndt;
    float *d_temp = gt_dup(temp, sizeof(float) * R);
    uint64_t *d_seed = gt_dmalloc(sizeof(uint64_t) * R), *d_off = gt_dup(offs, sizeof(uint64_t) * R);
    fs_drafts dr = {R, ndt, n, ndt ? gt_dup(drafts, sizeof(int32_t) * (size_t)ndt) : NULL,
                    gt_dup(offsets, sizeof(int32_t) * (R + 1))};
    fs_sampling prm = {d_temp, d_seed, d_off, d.bias, d.allowed};
    size_t wsb = 0;
    GT_FS(ctx, fs_verify_workspace_size(ctx, R, ndt, c->V, &wsb));
    void *ws = gt_dmalloc(wsb);
    const int64_t stride = n + 1;
    int32_t *tok = gt_dmalloc(sizeof(int32_t) * (size_t)(R * stride));
    int32_t *nem = gt_dmalloc(sizeof(int32_t) * R), *st = gt_dmalloc(sizeof(int32_t) * R);
    int32_t *htok = malloc(sizeof(int32_t) * (size_t)(R * stride));
    int32_t *hnem = malloc(sizeof(int32_t) * R), *hst = malloc(sizeof(int32_t) * R);
    fs_lm_head head = {d.w, c->V, D, c->dt};
    uint64_t obs[3][VMAX];
    memset(obs, 0, sizeof obs);
    uint64_t emitted_hist[4] = {0};
    for (int call = 0; call < calls(); ++call) {
        for (int64_t r = 0; r < R; ++r)
            seeds[r] = seed * 0x9E3779B1ull + (uint64_t)call * R + (uint64_t)r;
        GT_CUDA(cudaMemcpy(d_seed, seeds, sizeof(uint64_t) * R, cudaMemcpyHostToDevice));
        if (c->fused)
            GT_FS(ctx, fs_verify(ctx, &head, d.h, &dr, &prm, ws, wsb, tok, nem, NULL, st));
        else
            GT_FS(ctx, fs_verify_logits(ctx, d.l, c->dt, c->V, &dr, &prm, ws, wsb, tok, nem,
                                        NULL, st));
        gt_down(htok, tok, sizeof(int32_t) * (size_t)(R * stride));
        gt_down(hnem, nem, sizeof(int32_t) * R);
        gt_down(hst, st, sizeof(int32_t) * R);
        for (int64_t r = 0; r < R; ++r) {
            assert_int_equal(hst[r], FS_ROW_OK);
            const int32_t *t = htok + r * stride;
            int k = hnem[r];
            assert_true(k >= 1 && k <= n + 1);
            emitted_hist[k]++;
            /* position j is reached iff drafts 0..j-1 were all accepted */
            for (int j = 0; j < k; ++j) {
                assert_true(t[j] >= 0 && t[j] < c->V);
                if (j < k - 1)
                    assert_int_equal(t[j], x[j]); /* accepted drafts */
                else if (j < n)
                    assert_true(t[j] != x[j]);    /* a recovered token is never the draft */
                obs[j][t[j]]++;
            }
            for (int j = k; j < stride; ++j)
                assert_int_equal(t[j], -1);
        }
    }
    printf("  emitted counts:");
    for (int k = 1; k <= n + 1; ++k)
        printf(" %d: %llu", k, (unsigned long long)emitted_hist[k]);
    printf("\n");
    const char *names[3] = {"first token ~ p0 (accepted draft or residual)",
                            "token at position 1 | draft 0 accepted ~ p1",
                            "token at position 2 | drafts 0, 1 accepted ~ p2"};
    int done = 0;
    for (int j = 0; j <= n && done < tests_here; ++j, ++done)
        check(names[j], obs[j], p[j], c->V);
    assert_int_equal(done, tests_here);

    gt_dfree(d_temp);
    gt_dfree(d_seed);
    gt_dfree(d_off);
    gt_dfree(dr.draft_tokens);
    gt_dfree(dr.draft_offsets);
    gt_dfree(ws);
    gt_dfree(tok);
    gt_dfree(nem);
    gt_dfree(st);
    free(htok);
    free(hnem);
    free(hst);
    free(temp);
    free(seeds);
    free(offs);
    free(drafts);
    free(offsets);
    free_rows(&d);
    free(w_dt);
    fs_context_destroy(ctx);
}

static void test_verify_v37_fused_bf16(void **state)
{
    (void)state;
    dist_case c = {"verify, fused bf16, V = 37, 1 draft, T = 1.0, bias", 1, FS_DTYPE_BF16, 37, 0,
                   1.0f, 1};
    verify_case(&c, 1, 21, 2);
}

static void test_verify_spread_logits_f32(void **state)
{
    (void)state;
    dist_case c = {"verify, logits f32, 37 allowed of V = 592, 2 drafts, T = 0.7", 0,
                   FS_DTYPE_F32, 592, 1, 0.7f, 0};
    verify_case(&c, 2, 22, 3);
}

/* ---- the temperatures requests use: T = 0.05 .. 0.2, LM-scale logits --------
 * The CPU cases of test_stat_sample.c and test_stat_verify.c on the GPU
 * paths: LM-scale logits (stat_lm_logits: max 20-40, a head of 48 tokens
 * within 8 T of it, the tail several units lower) at T = 0.05, 0.1, 0.2, and
 * logits ~1e-5 apart near 0 at T = 1.2e-5, just above FS_MIN_TEMPERATURE.
 * The fused cases take, on an H100, the Hopper tile kernel (calls of at most
 * 96 rows) or the rows kernel (more rows), and the generic tensor-core scan
 * under FLASHSPEC_DISABLE_HOPPER=1 (ctest's test_gpu_stat_generic); the
 * others the logits scan.  A fused row of kind k selects columns 3k .. 3k+2
 * of the LM head, which hold its target logits split into three values of
 * the dtype, so hidden . W gives LM-scale logits to fp32 accuracy; expected
 * laws are computed in double from the stored values.  Sample: the token's
 * law; verify: the joint law of (drafts accepted, token emitted) as on the
 * CPU (stat_verify_expected).  60,000 draws per case, and each case is also
 * a power check: the same harness must reject (p < 1e-6) the law sampled at
 * 1.03 T and at T = 0 (every draw greedy, as a "T < 0.3 is greedy" bug
 * would give).  Small mode (sanitizers): two calls of at most 64 rows or
 * requests per case, no power checks. */

enum { LOWT_DRAWS = 60000 };

typedef struct lowt_gpu_case {
    const char *name;
    int verify; /* 0: sample; else verify with n drafts of probabilities q */
    int n;
    double q[2];
    int fused;
    fs_dtype dt;
    int64_t V;
    float T;
    double top;
    int64_t batch; /* rows (sample) or requests (verify) per call */
} lowt_gpu_case;

/* Split the logits L_k [kinds, V] into an LM head [V, D] of dt (columns
 * 3k .. 3k+2 of row v hold L_k[v] as hi + mid + lo) and hidden states
 * [kinds, D] selecting them; exact[k * V + v] = the fused logit in double. */
static void lowt_head(const lowt_gpu_case *c, int kinds, const float *L, void **w_dt, void **h_dt,
                      double *exact)
{
    const int64_t V = c->V;
    assert_true(kinds >= 1 && 3 * kinds <= D);
    float *w = calloc((size_t)(V * D), sizeof(float));
    float *h = calloc((size_t)D * (size_t)kinds, sizeof(float));
    for (int k = 0; k < kinds; ++k)
        for (int i = 0; i < 3; ++i)
            h[k * D + 3 * k + i] = 1.0f;
    for (int k = 0; k < kinds; ++k)
        for (int64_t v = 0; v < V; ++v) {
            double rest = L[k * V + v];
            for (int i = 0; i < 3; ++i) {
                float part = (float)rest;
                void *b = fst_pack(&part, 1, c->dt);
                double stored = fst_get(b, 0, c->dt);
                free(b);
                w[v * D + 3 * k + i] = (float)stored;
                rest -= stored;
            }
        }
    *w_dt = fst_pack(w, (size_t)(V * D), c->dt);
    *h_dt = fst_pack(h, (size_t)D * (size_t)kinds, c->dt);
    double *l = ref_logits_fused(*w_dt, *h_dt, c->dt, kinds, V, D);
    memcpy(exact, l, sizeof(double) * (size_t)(kinds * V));
    free(l);
    free(w);
    free(h);
}

typedef struct lowt_dev {
    fs_context *ctx;
    void *w, *x; /* LM head (fused) and hidden states or logits, `rows` rows */
    int64_t reqs, rows;
    float *temp;
    uint64_t *seed;
    int32_t *drafts, *offsets;
    void *ws;
    size_t wsb;
    int32_t *tok, *nem, *st;
} lowt_dev;

/* counts of `draws` draws at temperature T_run: sample counts[V] of the
   token; verify counts[(n + 1) V] of (accepted k, emitted t) at k V + t */
static void lowt_counts(const lowt_gpu_case *c, const lowt_dev *d, const int32_t *x, float T_run,
                        uint64_t seed, int64_t draws, uint64_t *counts)
{
    const int64_t V = c->V, R = d->reqs, stride = c->verify ? c->n + 1 : 1;
    float *temp = malloc(sizeof(float) * (size_t)R);
    uint64_t *seeds = malloc(sizeof(uint64_t) * (size_t)R);
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)(R * stride));
    int32_t *nem = malloc(sizeof(int32_t) * (size_t)R), *st = malloc(sizeof(int32_t) * (size_t)R);
    for (int64_t r = 0; r < R; ++r)
        temp[r] = T_run;
    GT_CUDA(cudaMemcpy(d->temp, temp, sizeof(float) * (size_t)R, cudaMemcpyHostToDevice));
    fs_sampling prm = {d->temp, d->seed, NULL, NULL, NULL};
    fs_lm_head head = {d->w, V, D, c->dt};
    for (int64_t done = 0; done < draws; done += R) {
        for (int64_t r = 0; r < R; ++r)
            seeds[r] = seed * 0x100000001b3ull + (uint64_t)(done + r);
        GT_CUDA(cudaMemcpy(d->seed, seeds, sizeof(uint64_t) * (size_t)R, cudaMemcpyHostToDevice));
        if (!c->verify) {
            if (c->fused)
                GT_FS(d->ctx, fs_sample(d->ctx, &head, d->x, R, &prm, d->ws, d->wsb, d->tok, NULL,
                                        d->st));
            else
                GT_FS(d->ctx, fs_sample_logits(d->ctx, d->x, c->dt, R, V, &prm, d->ws, d->wsb,
                                               d->tok, NULL, d->st));
        } else {
            fs_drafts dr = {R, R * c->n, c->n, d->drafts, d->offsets};
            if (c->fused)
                GT_FS(d->ctx, fs_verify(d->ctx, &head, d->x, &dr, &prm, d->ws, d->wsb, d->tok,
                                        d->nem, NULL, d->st));
            else
                GT_FS(d->ctx, fs_verify_logits(d->ctx, d->x, c->dt, V, &dr, &prm, d->ws, d->wsb,
                                               d->tok, d->nem, NULL, d->st));
            gt_down(nem, d->nem, sizeof(int32_t) * (size_t)R);
        }
        gt_down(tok, d->tok, sizeof(int32_t) * (size_t)(R * stride));
        gt_down(st, d->st, sizeof(int32_t) * (size_t)R);
        const int64_t m = draws - done < R ? draws - done : R;
        for (int64_t r = 0; r < m; ++r) {
            assert_int_equal(st[r], FS_ROW_OK);
            const int32_t *t = tok + r * stride;
            if (!c->verify) {
                assert_true(t[0] >= 0 && t[0] < V);
                counts[t[0]]++;
                continue;
            }
            const int e = nem[r];
            assert_true(e >= 1 && e <= c->n + 1);
            for (int k = 0; k < e - 1; ++k)
                assert_int_equal(t[k], x[k]); /* accepted drafts */
            if (e - 1 < c->n)
                assert_true(t[e - 1] != x[e - 1]); /* a recovered token is never the draft */
            for (int64_t k = e; k < stride; ++k)
                assert_int_equal(t[k], -1);
            assert_true(t[e - 1] >= 0 && t[e - 1] < V);
            counts[(e - 1) * V + t[e - 1]]++;
        }
    }
    free(temp);
    free(seeds);
    free(tok);
    free(nem);
    free(st);
}

static void lowt_case(const lowt_gpu_case *c, uint64_t seed)
{
    printf("%s\n", c->name);
    const int64_t V = c->V, kinds = c->verify ? c->n + 1 : 1;
    const int64_t R = gt_small_mode() && c->batch > 64 ? 64 : c->batch;
    const int64_t per = c->verify ? c->n + 1 : 1, rows = R * per;
    /* target logits of each kind (row position), drafts set to probability q */
    float *L = malloc(sizeof(float) * (size_t)(kinds * V));
    int32_t x[2] = {-1, -1};
    fst_rng rng;
    fst_rng_seed(&rng, seed);
    for (int64_t k = 0; k < kinds; ++k) {
        stat_lm_logits(seed * 31 + (uint64_t)k, V, c->top, c->T, L + k * V);
        if (c->verify && k < c->n) {
            x[k] = (int32_t)fst_randint(&rng, V);
            stat_set_prob(L + k * V, NULL, V, x[k], c->q[k], c->T);
        }
    }
    /* the stored inputs and the logits they give, in double */
    double *exact = malloc(sizeof(double) * (size_t)(kinds * V));
    void *w_dt = NULL, *in_dt = NULL;
    if (c->fused) {
        lowt_head(c, (int)kinds, L, &w_dt, &in_dt, exact);
    } else {
        in_dt = fst_pack(L, (size_t)(kinds * V), c->dt);
        for (int64_t i = 0; i < kinds * V; ++i)
            exact[i] = fst_get(in_dt, (size_t)i, c->dt);
    }
    /* expected law (float rows of the exact logits for the verify harness) */
    int64_t cells = c->verify ? kinds * V : V;
    double *prob = malloc(sizeof(double) * (size_t)cells);
    float *rowsf = malloc(sizeof(float) * (size_t)(kinds * V));
    for (int64_t i = 0; i < kinds * V; ++i)
        rowsf[i] = (float)exact[i];
    if (c->verify) {
        stat_verify vp = {V, c->n, rowsf, NULL, x, c->T};
        stat_verify_expected(&vp, prob);
        for (int j = 0; j < c->n; ++j) {
            double *pj = malloc(sizeof(double) * (size_t)V);
            stat_softmax(rowsf + j * V, NULL, NULL, V, c->T, pj);
            printf("  draft %d: token %d with p = %.4f\n", j, x[j], pj[x[j]]);
            free(pj);
        }
    } else {
        stat_softmax(rowsf, NULL, NULL, V, c->T, prob);
    }
    /* device inputs: row i of kind i % kinds (verify: request-major) */
    lowt_dev d;
    memset(&d, 0, sizeof d);
    d.ctx = gt_gpu_ctx();
    d.reqs = R;
    d.rows = rows;
    size_t es = fst_dtype_size(c->dt);
    const int64_t width = c->fused ? D : V;
    char *xs = malloc(es * (size_t)(rows * width));
    for (int64_t i = 0; i < rows; ++i)
        memcpy(xs + es * (size_t)(i * width), (char *)in_dt + es * (size_t)((i % per) * width),
               es * (size_t)width);
    d.x = gt_dup(xs, es * (size_t)(rows * width));
    free(xs);
    if (c->fused)
        d.w = gt_dup(w_dt, es * (size_t)(V * D));
    d.temp = gt_dmalloc(sizeof(float) * (size_t)R);
    d.seed = gt_dmalloc(sizeof(uint64_t) * (size_t)R);
    if (c->verify) {
        int32_t *dr = malloc(sizeof(int32_t) * (size_t)(R * c->n));
        int32_t *of = malloc(sizeof(int32_t) * (size_t)(R + 1));
        for (int64_t r = 0; r <= R; ++r)
            of[r] = (int32_t)(r * c->n);
        for (int64_t r = 0; r < R; ++r)
            for (int j = 0; j < c->n; ++j)
                dr[r * c->n + j] = x[j];
        d.drafts = gt_dup(dr, sizeof(int32_t) * (size_t)(R * c->n));
        d.offsets = gt_dup(of, sizeof(int32_t) * (size_t)(R + 1));
        free(dr);
        free(of);
        GT_FS(d.ctx, fs_verify_workspace_size(d.ctx, R, R * c->n, V, &d.wsb));
        d.nem = gt_dmalloc(sizeof(int32_t) * (size_t)R);
    } else {
        GT_FS(d.ctx, fs_sample_workspace_size(d.ctx, R, V, &d.wsb));
    }
    d.ws = gt_dmalloc(d.wsb);
    d.tok = gt_dmalloc(sizeof(int32_t) * (size_t)(R * per));
    d.st = gt_dmalloc(sizeof(int32_t) * (size_t)R);

    const int64_t draws = gt_small_mode() ? 2 * R : LOWT_DRAWS;
    uint64_t *counts = calloc((size_t)cells, sizeof(uint64_t));
    lowt_counts(c, &d, x, c->T, seed, draws, counts);
    fst_chi2 r;
    double pv = fst_chi2_test(counts, prob, cells, &r);
    report(c->verify ? "(accepted, emitted) ~ the joint law at T"
                     : "sampled token ~ softmax(l / T)", &r);
    assert_int_equal(r.impossible, 0);
    if (!(pv >= ALPHA))
        fail_msg("%s: chi-squared p = %.3g < %.3g", c->name, pv, ALPHA);
    if (!gt_small_mode()) {
        const float wrong_T[2] = {c->T * 1.03f, 0.0f};
        const char *what[2] = {"power: sampled at 1.03 T, must reject",
                               "power: sampled greedily (T = 0), must reject"};
        for (int i = 0; i < 2; ++i) {
            memset(counts, 0, sizeof(uint64_t) * (size_t)cells);
            lowt_counts(c, &d, x, wrong_T[i], seed + 1 + (uint64_t)i, draws, counts);
            double pw = fst_chi2_test(counts, prob, cells, &r);
            report(what[i], &r);
            if (!(pw < REJECT))
                fail_msg("%s: %s (p = %.3g)", c->name, what[i], pw);
        }
    }
    free(counts);
    gt_dfree(d.x);
    gt_dfree(d.w);
    gt_dfree(d.temp);
    gt_dfree(d.seed);
    gt_dfree(d.drafts);
    gt_dfree(d.offsets);
    gt_dfree(d.ws);
    gt_dfree(d.tok);
    gt_dfree(d.nem);
    gt_dfree(d.st);
    fs_context_destroy(d.ctx);
    free(L);
    free(exact);
    free(w_dt);
    free(in_dt);
    free(prob);
    free(rowsf);
}

static const lowt_gpu_case LOWT[] = {
    {"sample, LM-scale, fused bf16, V = 600, T = 0.05, 4096 rows/call (Hopper rows kernel)", 0, 0,
     {0, 0}, 1, FS_DTYPE_BF16, 600, 0.05f, 30.0, 4096},
    {"sample, LM-scale, fused bf16, V = 600, T = 0.1, 64 rows/call (Hopper tile kernel)", 0, 0,
     {0, 0}, 1, FS_DTYPE_BF16, 600, 0.1f, 24.0, 64},
    {"sample, LM-scale, fused fp16, V = 600, T = 0.2, 96 rows/call (Hopper tile kernel)", 0, 0,
     {0, 0}, 1, FS_DTYPE_F16, 600, 0.2f, 38.0, 96},
    {"sample, LM-scale, logits f32, V = 600, T = 0.2, 4096 rows/call", 0, 0, {0, 0}, 0,
     FS_DTYPE_F32, 600, 0.2f, 30.0, 4096},
    {"sample, LM-scale, logits bf16, V = 600, T = 0.05, 256 rows/call", 0, 0, {0, 0}, 0,
     FS_DTYPE_BF16, 600, 0.05f, 30.0, 256},
    {"sample, fused bf16, V = 600, T = 1.2e-5 (just above FS_MIN_TEMPERATURE), 64 rows/call", 0,
     0, {0, 0}, 1, FS_DTYPE_BF16, 600, 1.2e-5f, 0.0, 64},
    {"verify, LM-scale, fused bf16, V = 300, T = 0.05, 2 drafts, 2048 requests/call (rows kernel)",
     1, 2, {0.6, 0.3}, 1, FS_DTYPE_BF16, 300, 0.05f, 30.0, 2048},
    {"verify, LM-scale, fused bf16, V = 300, T = 0.1, 2 drafts, 32 requests/call (tile kernel)", 1,
     2, {0.6, 0.05}, 1, FS_DTYPE_BF16, 300, 0.1f, 24.0, 32},
    {"verify, LM-scale, logits f32, V = 300, T = 0.2, 1 draft, 4096 requests/call", 1, 1,
     {0.3, 0}, 0, FS_DTYPE_F32, 300, 0.2f, 38.0, 4096},
    {"verify, fused bf16, V = 300, T = 1.2e-5 (just above FS_MIN_TEMPERATURE), 2 drafts, "
     "32 requests/call", 1, 2, {0.6, 0.3}, 1, FS_DTYPE_BF16, 300, 1.2e-5f, 0.0, 32},
};

static void test_low_temperature(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof LOWT / sizeof LOWT[0]; ++i)
        lowt_case(&LOWT[i], 5000 + i);
}

int main(void)
{
    GT_SKIP_WITHOUT_GPU("test_gpu_stat");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sample_v37_fused_bf16),
        cmocka_unit_test(test_sample_spread_fused_f16),
        cmocka_unit_test(test_sample_spread_logits_f32),
        cmocka_unit_test(test_verify_v37_fused_bf16),
        cmocka_unit_test(test_verify_spread_logits_f32),
        cmocka_unit_test(test_low_temperature),
    };
    printf("chi-squared tests: %d, each at alpha = 1e-3 / %d (Bonferroni)\n", N_TESTS, N_TESTS);
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else
GT_MAIN_WITHOUT_CUDA("test_gpu_stat")
#endif
