/* top-k / top-p / min-p on the GPU.
 *
 * Agreement: sample and verify with every filter and their combination, k =
 * 1, k >= V, p tiny, p = 1, min_p near 1, a wide k and a wide nucleus (which
 * take the second pass), greedy rows, temperatures 0.05 to 2, masks and
 * Zipf-like biases (peaked rows) or none (flat rows), run on a CUDA context
 * and on the CPU backend, must give the same statuses and tokens exactly,
 * and logprobs within float rounding.  Exact agreement is possible because
 * the inputs make every logit exact in fp32 whatever the summation order:
 * logits that are multiples of 1/16 (the *_logits ops), or an LM head whose
 * entries are multiples of 1/8 and hidden states multiples of 1/2 (the fused
 * ops: products and partial sums are then exact in the tensor cores, in the
 * CPU's loop and in the second pass's dot product alike).  The same calls
 * run on the Hopper tile kernel (<= 160 rows), on the generic tensor-core
 * scan (FLASHSPEC_DISABLE_HOPPER, and > 160 rows), and with every filtered
 * row forced through the second pass (FLASHSPEC_FILTER_SECOND_PASS), whose
 * scores come from tensor cores (bf16 and fp16 heads, D a multiple of 8 or
 * not of its 32-wide k steps) or from its fp32 loop (D % 8 != 0), over
 * vocabularies small and wide enough that each of its blocks scores
 * several tiles in turn -- and without the merge kernel's warm-up block
 * (FLASHSPEC_FILTER_WARM=0), whose made-up row must leave no trace (a build
 * that hands it over fails here).
 *
 * Bad filter values fail their request with FS_ROW_BAD_FILTER and leave the
 * others alone, exactly as on the CPU (which also returns
 * FS_ERR_INVALID_ROWS; a CUDA context returns FS_OK, the rows carry it).
 *
 * Law: chi-squared of 10^5 GPU draws from one row under k = 50, p = 0.999,
 * min_p = 0.05 (top-k binding), in the one pass and in the second pass,
 * against the analytic filtered law; power: the same draws against the law
 * with k = 49 must be rejected.  Skipped without a GPU. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "gpu_util.h"

#ifdef FS_HAVE_CUDA

#include "exact_inputs.h"
#include "stat_harness.h"

enum { NCFG = 12, NTEMP = 5 };
static const float TEMPS[NTEMP] = {0.0f, 0.05f, 0.7f, 1.0f, 2.0f};

/* Filter configuration c of a request (k = -2 stands for V + 5). */
static void config(int c, int64_t V, int32_t *k, float *p, float *mp)
{
    static const int32_t K[NCFG] = {50, 0, 0, 50, 1, -2, 0, 0, 0, 200, 0, 0};
    static const float P[NCFG] = {1.0f, 0.9f, 1.0f, 0.9f, 1.0f, 1.0f, 1e-6f, 1.0f, 1.0f,
                                  1.0f, 0.995f, 1.0f};
    static const float MP[NCFG] = {0.0f, 0.0f, 0.05f, 0.05f, 0.0f, 0.0f, 0.0f, 0.0f, 0.999f,
                                   0.0f, 0.0f, 0.0f};
    *k = K[c] == -2 ? (int32_t)(V + 5) : K[c];
    *p = P[c];
    *mp = MP[c];
}

typedef struct fcase {
    const char *name;
    int op;      /* GT_SAMPLE / GT_VERIFY */
    int fused;
    int peaked;  /* Zipf-like bias */
    int64_t V, D;
    int64_t requests;
    int f16;     /* fused: an fp16 LM head instead of bf16 */
} fcase;

typedef struct fin {
    gt_in in;
    int32_t *k;
    float *p, *mp, *T;
    uint64_t *seed, *off;
    int32_t *fallback;
    float *bias;
    uint32_t *allowed;
    int32_t *drafts, *offs;
    void *w, *h;
    float *logits;
} fin;

static void build(const fcase *c, uint64_t seed, fin *f)
{
    memset(f, 0, sizeof *f);
    gt_in *in = &f->in;
    const int64_t R = c->requests, V = c->V;
    in->op = c->op;
    in->fused = c->fused;
    in->dt = c->fused ? (c->f16 ? FS_DTYPE_F16 : FS_DTYPE_BF16) : FS_DTYPE_F32;
    in->V = V;
    in->D = c->D;
    in->requests = R;
    f->k = malloc(sizeof(int32_t) * (size_t)R);
    f->p = malloc(sizeof(float) * (size_t)R);
    f->mp = malloc(sizeof(float) * (size_t)R);
    f->T = malloc(sizeof(float) * (size_t)R);
    f->seed = malloc(sizeof(uint64_t) * (size_t)R);
    f->off = malloc(sizeof(uint64_t) * (size_t)R);
    f->fallback = malloc(sizeof(int32_t) * (size_t)R);
    for (int64_t r = 0; r < R; ++r) {
        config((int)(r % NCFG), V, &f->k[r], &f->p[r], &f->mp[r]);
        f->T[r] = TEMPS[(r / NCFG + r) % NTEMP];
        f->seed[r] = seed * 1000003u + (uint64_t)r * 7u + 1u;
        f->off[r] = (uint64_t)r;
    }
    int64_t rows = R;
    fst_rng rng;
    fst_rng_seed(&rng, seed ^ 0x5eedu);
    if (c->op == GT_VERIFY) {
        f->offs = malloc(sizeof(int32_t) * (size_t)(R + 1));
        f->offs[0] = 0;
        for (int64_t r = 0; r < R; ++r)
            f->offs[r + 1] = f->offs[r] + (int32_t)fst_randint(&rng, 5);
        const int64_t nd = f->offs[R];
        rows = nd + R;
        f->drafts = malloc(sizeof(int32_t) * (size_t)(nd > 0 ? nd : 1));
        in->d.num_requests = R;
        in->d.num_draft_tokens = nd;
        in->d.max_drafts = 4;
        in->d.draft_tokens = f->drafts;
        in->d.draft_offsets = f->offs;
    }
    in->rows = rows;
    f->bias = c->peaked ? fst_zipf_bias(seed + 1, rows, V) : NULL;
    f->allowed = fst_gen_allowed(seed + 2, rows, V, 0.9);
    /* every third row unmasked */
    for (int64_t i = 0; i < rows; i += 3)
        for (int64_t wd = 0; wd < fst_mask_words(V); ++wd)
            f->allowed[i * fst_mask_words(V) + wd] = 0xffffffffu;
    if (c->op == GT_VERIFY) {
        /* drafts: a likely token (the row's largest bias: often kept), a
           random one (often cut), now and then a masked one */
        for (int64_t r = 0; r < R; ++r)
            for (int32_t j = f->offs[r]; j < f->offs[r + 1]; ++j) {
                const int64_t row = j + r;
                int32_t x = (int32_t)fst_randint(&rng, V);
                if (f->bias && fst_randint(&rng, 2) == 0) {
                    int32_t best = 0;
                    for (int64_t v = 1; v < V; ++v)
                        if (f->bias[row * V + v] > f->bias[row * V + best])
                            best = (int32_t)v;
                    x = best;
                }
                f->drafts[j] = x;
            }
    }
    if (c->fused) {
        fst_rng rng;
        fst_rng_seed(&rng, seed + 3);
        float *wf, *hf;
        fst_exact_head(&rng, V, c->D, rows, &wf, &hf);
        f->w = fst_pack(wf, (size_t)(V * c->D), in->dt);
        f->h = fst_pack(hf, (size_t)(rows * c->D), in->dt);
        free(wf);
        free(hf);
        in->weight = f->w;
        in->hidden = f->h;
    } else {
        fst_rng rng;
        fst_rng_seed(&rng, seed + 3);
        f->logits = fst_exact_logits(&rng, rows, V);
        in->logits = f->logits;
    }
    in->p.temperature = f->T;
    in->p.seed = f->seed;
    in->p.offset = f->off;
    in->p.logit_bias = f->bias;
    in->p.allowed = f->allowed;
    in->p.top_k = f->k;
    in->p.top_p = f->p;
    in->p.min_p = f->mp;
    in->p.out_filter_fallback = f->fallback;
}

static void release(fin *f)
{
    free(f->k);
    free(f->p);
    free(f->mp);
    free(f->T);
    free(f->seed);
    free(f->off);
    free(f->fallback);
    free(f->bias);
    free(f->allowed);
    free(f->drafts);
    free(f->offs);
    free(f->w);
    free(f->h);
    free(f->logits);
}

/* GPU and CPU outputs must be identical in statuses and tokens. */
static void expect_same(const fin *f, const gt_out *c, const gt_out *g, const char *label)
{
    const gt_in *in = &f->in;
    /* returns differ by design: a CUDA context returns FS_OK without reading
       the statuses back (the rows carry them) */
    for (int64_t r = 0; r < in->requests; ++r)
        if (c->st[r] != g->st[r])
            fail_msg("%s: request %lld: status CPU %d GPU %d", label, (long long)r, c->st[r],
                     g->st[r]);
    for (int64_t i = 0; i < c->ntok; ++i) {
        if (c->tok[i] != g->tok[i]) {
            const int64_t r = in->op == GT_VERIFY ? i / (in->d.max_drafts + 1) : i;
            fail_msg("%s: request %lld (k %d p %g min_p %g T %g): token %lld CPU %d GPU %d",
                     label, (long long)r, f->k[r], f->p[r], f->mp[r], f->T[r], (long long)i,
                     c->tok[i], g->tok[i]);
        }
        if (!gt_close(c->val[i], g->val[i], 2e-3))
            fail_msg("%s: logprob %lld CPU %.7g GPU %.7g", label, (long long)i, c->val[i],
                     g->val[i]);
    }
    if (in->op == GT_VERIFY)
        for (int64_t r = 0; r < in->requests; ++r)
            if (c->nem[r] != g->nem[r])
                fail_msg("%s: request %lld: emitted CPU %d GPU %d", label, (long long)r,
                         c->nem[r], g->nem[r]);
}

/* Rows of request r that filter (valid, not greedy, some filter on). */
static int64_t filtered_rows(const fin *f, int64_t r, int status)
{
    if (status != FS_ROW_OK || f->T[r] < FS_MIN_TEMPERATURE)
        return 0;
    const int on = (f->k[r] > 0 && f->k[r] < f->in.V) || f->p[r] < 1.0f || f->mp[r] > 0.0f;
    if (!on)
        return 0;
    return f->in.op == GT_VERIFY ? f->offs[r + 1] - f->offs[r] + 1 : 1;
}

/* A GPU context made with env set to "1", or to the value after '=' */
static fs_context *ctx_with(const char *env)
{
    char name[64];
    const char *value = "1";
    if (env) {
        const char *eq = strchr(env, '=');
        const size_t n = eq ? (size_t)(eq - env) : strlen(env);
        snprintf(name, sizeof name, "%.*s", (int)n, env);
        if (eq)
            value = eq + 1;
        setenv(name, value, 1);
    }
    fs_context *ctx = gt_gpu_ctx();
    if (env)
        unsetenv(name);
    return ctx;
}

static void run_case(const fcase *c, uint64_t seed)
{
    fin f;
    build(c, seed, &f);
    fs_context *cpu = fst_cpu_ctx();
    gt_out co, go;
    gt_out_alloc(&f.in, &co);
    gt_run(cpu, &f.in, &co);
    /* FLASHSPEC_FILTER_WARM=0: without the merge kernel's warm-up block,
       which must change nothing but the time */
    static const char *modes[4] = {NULL, "FLASHSPEC_FILTER_SECOND_PASS",
                                   "FLASHSPEC_DISABLE_HOPPER", "FLASHSPEC_FILTER_WARM=0"};
    for (int m = 0; m < 4; ++m) {
        fs_context *g = ctx_with(modes[m]);
        gt_out_alloc(&f.in, &go);
        memset(f.fallback, 0x5a, sizeof(int32_t) * (size_t)f.in.requests);
        gt_run(g, &f.in, &go);
        char label[160];
        snprintf(label, sizeof label, "%s [%s]", c->name, modes[m] ? modes[m] : "default");
        expect_same(&f, &co, &go, label);
        int64_t fb = 0, filt = 0;
        for (int64_t r = 0; r < f.in.requests; ++r) {
            const int64_t n = filtered_rows(&f, r, co.st[r]);
            if (f.fallback[r] < 0 || f.fallback[r] > n)
                fail_msg("%s: request %lld: %d second-pass rows of %lld filtered", label,
                         (long long)r, f.fallback[r], (long long)n);
            if (m == 1 && f.fallback[r] != n)
                fail_msg("%s: request %lld: forced second pass counted %d of %lld rows", label,
                         (long long)r, f.fallback[r], (long long)n);
            fb += f.fallback[r];
            filt += n;
        }
        printf("  %-44s rows %5lld: identical; second pass %lld of %lld filtered rows\n", label,
               (long long)f.in.rows, (long long)fb, (long long)filt);
        gt_out_free(&go);
        fs_context_destroy(g);
    }
    gt_out_free(&co);
    fs_context_destroy(cpu);
    release(&f);
}

static void test_agree(void **state)
{
    (void)state;
    const int small = gt_small_mode();
    const fcase cases[] = {
        {"sample logits peaked", GT_SAMPLE, 0, 1, 5003, 0, 96},
        {"sample logits flat", GT_SAMPLE, 0, 0, 5003, 0, 60},
        {"sample fused peaked (tile)", GT_SAMPLE, 1, 1, 4099, 64, 120},
        {"sample fused flat (tile)", GT_SAMPLE, 1, 0, 4099, 64, 48},
        {"sample fused peaked (> 160 rows)", GT_SAMPLE, 1, 1, 2053, 64, 200},
        {"verify logits peaked", GT_VERIFY, 0, 1, 5003, 0, 48},
        {"verify fused peaked (tile)", GT_VERIFY, 1, 1, 4099, 64, 48},
        {"verify fused flat (tile)", GT_VERIFY, 1, 0, 4099, 64, 24},
        {"verify fused peaked (> 160 rows)", GT_VERIFY, 1, 1, 2053, 64, 96},
        /* the second pass's tensor-core scores: fp16, D not a multiple
           of its 32-wide k steps, and its fp32 loop (D % 8 != 0) */
        {"sample fused flat fp16 (tile)", GT_SAMPLE, 1, 0, 4099, 64, 40, 1},
        {"sample fused flat D 72", GT_SAMPLE, 1, 0, 4099, 72, 40},
        {"sample fused flat D 60", GT_SAMPLE, 1, 0, 4099, 60, 20},
        /* wide enough that the second pass's blocks take several tiles
           each (its shared scores are reused tile after tile) */
        {"sample logits flat (wide vocabulary)", GT_SAMPLE, 0, 0, 140009, 0, 12},
        {"sample fused flat (wide vocabulary)", GT_SAMPLE, 1, 0, 140009, 64, 12},
        {"verify fused flat (wide vocabulary)", GT_VERIFY, 1, 0, 140009, 64, 4},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        fcase c = cases[i];
        if (small && c.requests > 24)
            c.requests = 24;
        if (small && c.V > 100000 && c.requests > 4)
            c.requests = 4; /* the sanitizers: wide, not many */
        run_case(&c, 100 + i);
    }
}

/* Bad filter values: per-request statuses as on the CPU, the other
 * requests sampled as usual. */
static void test_bad_values(void **state)
{
    (void)state;
    const fcase cs[2] = {{"bad sample", GT_SAMPLE, 0, 1, 997, 0, 12},
                         {"bad verify", GT_VERIFY, 1, 1, 997, 64, 12}};
    for (int i = 0; i < 2; ++i) {
        fin f;
        build(&cs[i], 7 + i, &f);
        f.k[1] = -1;
        f.p[2] = 0.0f;
        f.p[3] = 1.5f;
        f.mp[4] = 1.0f;
        f.p[5] = NAN;
        f.mp[6] = -0.1f;
        f.mp[7] = NAN;
        for (int r = 0; r < 12; ++r)
            f.T[r] = 0.8f;
        fs_context *cpu = fst_cpu_ctx(), *g = gt_gpu_ctx();
        gt_out co, go;
        gt_out_alloc(&f.in, &co);
        gt_out_alloc(&f.in, &go);
        gt_run(cpu, &f.in, &co);
        gt_run(g, &f.in, &go);
        assert_int_equal(co.ret, FS_ERR_INVALID_ROWS);
        assert_int_equal(go.ret, FS_OK);
        for (int r = 1; r <= 7; ++r)
            assert_int_equal(go.st[r], FS_ROW_BAD_FILTER);
        assert_int_equal(go.st[0], FS_ROW_OK);
        expect_same(&f, &co, &go, cs[i].name);
        gt_out_free(&co);
        gt_out_free(&go);
        fs_context_destroy(cpu);
        fs_context_destroy(g);
        release(&f);
    }
}

/* ---- the last select level beside the draw ------------------------------ */

/* The second pass runs a row's last select level beside the draw when the
 * level's band (the tokens sharing the key prefix fixed so far) holds at
 * most FS_FB_DEFER_CAP tokens, and takes that level's histogram from the
 * draw's deferred blocks; before that, rows whose first pass over score
 * buckets locates every threshold in buckets holding at most that many
 * tokens find them among those tokens after the draw (FS_FB_LIN); when
 * no row selects (min-p alone) the draw runs first and finds the max.
 * test_agree's exact inputs put every band on one score (ties), where a
 * wrong histogram cannot move the threshold; here the logits are
 * continuous, so bands hold several distinct scores.  The CPU
 * sums masses in another order, so near-ties in top-p could differ from
 * it; the comparison is with the same GPU pass run level by level
 * (FLASHSPEC_FILTER_DEFER=0), whose thresholds must be the same bits:
 * identical tokens and counts, logprobs within the merge order's rounding. */
static void test_defer(void **state)
{
    (void)state;
    const fcase cs[3] = {{"sample logits continuous", GT_SAMPLE, 0, 0, 140009, 0, 36},
                         {"verify logits continuous", GT_VERIFY, 0, 0, 60013, 0, 12},
                         {"sample logits min-p alone", GT_SAMPLE, 0, 0, 140009, 0, 24}};
    for (int i = 0; i < 3; ++i) {
        fcase c = cs[i];
        if (gt_small_mode())
            c.requests = 8; /* the sanitizers: every kind of row, not many */
        fin f;
        build(&c, 31 + i, &f);
        fst_rng rng;
        fst_rng_seed(&rng, 977 + i);
        /* spreads: most rows put the thresholds in the first pass's score
           buckets; narrow ones overflow them (every token in a few
           buckets), wide ones can put them below (the radix selects run) */
        static const double SPREAD[3] = {2.0, 0.01, 8.0};
        for (int64_t j = 0; j < f.in.rows * f.in.V; ++j)
            f.logits[j] = (float)(SPREAD[(j / f.in.V) % 3] * fst_normal(&rng));
        for (int64_t r = 0; r < f.in.requests; ++r) {
            /* wide kept sets: top-p 0.5 / 0.9 / 0.99, top-k 300 / 3000 alone
               and under top-p, min-p with top-p */
            static const int32_t K[6] = {0, 0, 0, 300, 3000, 3000};
            static const float P[6] = {0.5f, 0.9f, 0.99f, 1.0f, 1.0f, 0.9f};
            static const float MP[6] = {0.0f, 0.0f, 1e-4f, 0.0f, 0.0f, 0.0f};
            f.k[r] = K[r % 6];
            f.p[r] = P[r % 6];
            f.mp[r] = MP[r % 6];
            f.T[r] = r % 5 == 4 ? 2.0f : 1.0f;
            if (i == 2) {
                /* no row selects: the draw runs at once, finding the max;
                   every fourth row has its tokens within 1e-3 of the
                   min-p threshold, more than the draw can set aside, and
                   is drawn again */
                static const float MPA[4] = {0.05f, 0.2f, 1e-3f, 0.5f};
                f.k[r] = 0;
                f.p[r] = 1.0f;
                f.mp[r] = MPA[r % 4];
                if (r % 4 == 3) {
                    float *l = f.logits + r * f.in.V;
                    for (int64_t v = 0; v < f.in.V; ++v)
                        l[v] = logf(MPA[3]) + (float)(1e-3 * fst_normal(&rng));
                    l[r] = 0.0f;
                    f.T[r] = 1.0f;
                }
            }
        }
        gt_out a, b;
        fs_context *on = ctx_with("FLASHSPEC_FILTER_SECOND_PASS");
        gt_out_alloc(&f.in, &a);
        gt_run(on, &f.in, &a);
        int32_t *fb_on = malloc(sizeof(int32_t) * (size_t)f.in.requests);
        memcpy(fb_on, f.fallback, sizeof(int32_t) * (size_t)f.in.requests);
        setenv("FLASHSPEC_FILTER_DEFER", "0", 1);
        fs_context *off = ctx_with("FLASHSPEC_FILTER_SECOND_PASS");
        unsetenv("FLASHSPEC_FILTER_DEFER");
        gt_out_alloc(&f.in, &b);
        gt_run(off, &f.in, &b);
        for (int64_t r = 0; r < f.in.requests; ++r) {
            if (a.st[r] != FS_ROW_OK || b.st[r] != FS_ROW_OK)
                fail_msg("%s: request %lld: statuses %d / %d", c.name, (long long)r,
                         a.st[r], b.st[r]);
            if (fb_on[r] != f.fallback[r] || fb_on[r] != filtered_rows(&f, r, FS_ROW_OK))
                fail_msg("%s: request %lld: second-pass rows %d / %d", c.name,
                         (long long)r, fb_on[r], f.fallback[r]);
        }
        for (int64_t j = 0; j < a.ntok; ++j) {
            if (a.tok[j] != b.tok[j])
                fail_msg("%s: token %lld: beside the draw %d, level by level %d", c.name,
                         (long long)j, a.tok[j], b.tok[j]);
            if (!gt_close(a.val[j], b.val[j], 1e-5))
                fail_msg("%s: logprob %lld: %.9g / %.9g", c.name, (long long)j, a.val[j],
                         b.val[j]);
        }
        if (c.op == GT_VERIFY)
            for (int64_t r = 0; r < f.in.requests; ++r)
                if (a.nem[r] != b.nem[r])
                    fail_msg("%s: request %lld: emitted %d / %d", c.name, (long long)r,
                             a.nem[r], b.nem[r]);
        printf("  %-28s rows %5lld: beside the draw = level by level\n", c.name,
               (long long)f.in.rows);
        free(fb_on);
        gt_out_free(&a);
        gt_out_free(&b);
        fs_context_destroy(on);
        fs_context_destroy(off);
        release(&f);
    }
}

/* ---- the law ------------------------------------------------------------ */

enum { LAW_V = 3001, LAW_ROWS = 4000, LAW_CALLS = 25 };

/* The law's filters: top-k binds (the nucleus of the top 50 is all of
 * them, min-p cuts none of them), so k off by one moves a token's
 * probability from ~1/50 to 0. */
#define LAW_K 50
#define LAW_P 0.999f
#define LAW_MP 0.05f

/* A row whose top 400 tokens decay gently (0.03 a rank) at random ids, the
 * rest 12+ units below. */
static void law_row(uint64_t seed, float *l)
{
    fst_rng rng;
    fst_rng_seed(&rng, seed);
    int64_t perm[LAW_V];
    for (int64_t v = 0; v < LAW_V; ++v)
        perm[v] = v;
    fst_shuffle(&rng, perm, LAW_V);
    for (int64_t q = 0; q < LAW_V; ++q)
        l[perm[q]] = q < 400 ? (float)(-0.03 * (double)q + 0.01 * fst_unif(&rng))
                             : (float)(-12.0 - fabs(fst_normal(&rng)));
}

/* GPU draws of one row under the law's filters, replicated over LAW_ROWS
 * rows with distinct seeds, LAW_CALLS calls. */
static void law_counts(fs_context *g, const float *row, uint64_t *counts)
{
    float *l = malloc(sizeof(float) * (size_t)LAW_ROWS * LAW_V);
    for (int64_t i = 0; i < LAW_ROWS; ++i)
        memcpy(l + i * LAW_V, row, sizeof(float) * LAW_V);
    float *T = malloc(sizeof(float) * LAW_ROWS), *p = malloc(sizeof(float) * LAW_ROWS),
          *mp = malloc(sizeof(float) * LAW_ROWS);
    int32_t *k = malloc(sizeof(int32_t) * LAW_ROWS);
    uint64_t *sd = malloc(sizeof(uint64_t) * LAW_ROWS), *of = malloc(sizeof(uint64_t) * LAW_ROWS);
    for (int i = 0; i < LAW_ROWS; ++i) {
        T[i] = 1.0f;
        k[i] = LAW_K;
        p[i] = LAW_P;
        mp[i] = LAW_MP;
    }
    void *dl = gt_dup(l, sizeof(float) * (size_t)LAW_ROWS * LAW_V);
    fs_sampling q = {gt_dup(T, sizeof(float) * LAW_ROWS), NULL, NULL, NULL, NULL};
    q.top_k = gt_dup(k, sizeof(int32_t) * LAW_ROWS);
    q.top_p = gt_dup(p, sizeof(float) * LAW_ROWS);
    q.min_p = gt_dup(mp, sizeof(float) * LAW_ROWS);
    void *dseed = gt_dmalloc(sizeof(uint64_t) * LAW_ROWS), *doff = gt_dmalloc(sizeof(uint64_t) * LAW_ROWS);
    q.seed = dseed;
    q.offset = doff;
    size_t wb = 0;
    GT_FS(g, fs_sample_workspace_size(g, LAW_ROWS, LAW_V, &wb));
    void *ws = gt_dmalloc(wb);
    int32_t *dtok = gt_dmalloc(sizeof(int32_t) * LAW_ROWS), *dst = gt_dmalloc(sizeof(int32_t) * LAW_ROWS);
    int32_t *tok = malloc(sizeof(int32_t) * LAW_ROWS);
    /* the sanitizer runs (small mode) check the calls, not the law */
    const int calls = gt_small_mode() ? 1 : LAW_CALLS;
    for (int call = 0; call < calls; ++call) {
        for (int i = 0; i < LAW_ROWS; ++i) {
            sd[i] = stat_seed(0xf11e, (int64_t)call * LAW_ROWS + i);
            of[i] = stat_offset(0xf11e, (int64_t)call * LAW_ROWS + i);
        }
        GT_CUDA(cudaMemcpy(dseed, sd, sizeof(uint64_t) * LAW_ROWS, cudaMemcpyHostToDevice));
        GT_CUDA(cudaMemcpy(doff, of, sizeof(uint64_t) * LAW_ROWS, cudaMemcpyHostToDevice));
        GT_FS(g, fs_sample_logits(g, dl, FS_DTYPE_F32, LAW_ROWS, LAW_V, &q, ws, wb, dtok, NULL,
                                  dst));
        GT_CUDA(cudaDeviceSynchronize());
        gt_down(tok, dtok, sizeof(int32_t) * LAW_ROWS);
        for (int i = 0; i < LAW_ROWS; ++i)
            counts[tok[i]]++;
    }
    gt_dfree(dl);
    gt_dfree(q.temperature);
    gt_dfree(q.top_k);
    gt_dfree(q.top_p);
    gt_dfree(q.min_p);
    gt_dfree(dseed);
    gt_dfree(doff);
    gt_dfree(ws);
    gt_dfree(dtok);
    gt_dfree(dst);
    free(l);
    free(T);
    free(p);
    free(mp);
    free(k);
    free(sd);
    free(of);
    free(tok);
}

static void test_law(void **state)
{
    (void)state;
    float *row = malloc(sizeof(float) * LAW_V);
    double *prob = malloc(sizeof(double) * LAW_V), *wrong = malloc(sizeof(double) * LAW_V);
    /* a row whose filter decisions are not within rounding */
    uint64_t s = 11;
    stat_row sr = {LAW_V, row, NULL, NULL, 1.0f, FS_DTYPE_F32, LAW_K, LAW_P, LAW_MP};
    for (;; ++s) {
        law_row(s, row);
        if (stat_sample_expected(&sr, prob))
            break;
    }
    int kept = 0;
    for (int64_t v = 0; v < LAW_V; ++v)
        kept += prob[v] > 0.0;
    assert_int_equal(kept, LAW_K);
    stat_row sw = sr;
    sw.top_k = LAW_K - 1;
    assert_true(stat_sample_expected(&sw, wrong));
    static const char *modes[2] = {NULL, "FLASHSPEC_FILTER_SECOND_PASS"};
    for (int m = 0; m < 2; ++m) {
        fs_context *g = ctx_with(modes[m]);
        uint64_t *counts = calloc(LAW_V, sizeof(uint64_t));
        law_counts(g, row, counts);
        fst_chi2 r, rw;
        const double pv = fst_chi2_test(counts, prob, LAW_V, &r);
        const double pw = fst_chi2_test(counts, wrong, LAW_V, &rw);
        if (gt_small_mode()) {
            free(counts);
            fs_context_destroy(g);
            continue;
        }
        printf("  law [%s]: chi2 %.1f df %d p %.4f (must accept); k - 1: p %.3g, %llu "
               "impossible draws (must reject)\n",
               modes[m] ? modes[m] : "one pass", r.stat, r.df, pv, pw,
               (unsigned long long)rw.impossible);
        if (r.impossible)
            fail_msg("%llu draws of cut tokens", (unsigned long long)r.impossible);
        if (!(pv > 1e-3))
            fail_msg("the filtered law was rejected (p = %.3g)", pv);
        if (!(pw < 1e-6) && !rw.impossible)
            fail_msg("the k - 1 law was not rejected (p = %.3g)", pw);
        free(counts);
        fs_context_destroy(g);
    }
    free(row);
    free(prob);
    free(wrong);
}

int main(void)
{
    GT_SKIP_WITHOUT_GPU("test_gpu_filter");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_agree),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_defer),
        cmocka_unit_test(test_law),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else
GT_MAIN_WITHOUT_CUDA("test_gpu_filter")
#endif
