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

#ifdef FS_HAVE_CUDA

#define N_TESTS 8
#define ALPHA (1e-3 / N_TESTS)

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

int main(void)
{
    GT_SKIP_WITHOUT_GPU("test_gpu_stat");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sample_v37_fused_bf16),
        cmocka_unit_test(test_sample_spread_fused_f16),
        cmocka_unit_test(test_sample_spread_logits_f32),
        cmocka_unit_test(test_verify_v37_fused_bf16),
        cmocka_unit_test(test_verify_spread_logits_f32),
    };
    printf("chi-squared tests: %d, each at alpha = 1e-3 / %d (Bonferroni)\n", N_TESTS, N_TESTS);
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else
GT_MAIN_WITHOUT_CUDA("test_gpu_stat")
#endif
