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
 * run on the Hopper tile kernel (<= 160 rows), on the rows kernel's
 * list-keeping kernels (> 160 rows, and every row count with
 * FLASHSPEC_FILTER_ROWS_MIN=1), on the tile kernel in row chunks past 160
 * rows (FLASHSPEC_FILTER_ROWS_MIN=0), on the generic tensor-core scan
 * (FLASHSPEC_DISABLE_HOPPER), and with every filtered
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
 * and under k = 150 and under top-p 0.9 keeping ~240 tokens (past the best
 * 64 candidates) in the wide one pass and, without it, in the second pass,
 * against the analytic filtered law; power: the same draws against the law
 * that keeps one token fewer must be rejected.  The
 * number of draws that took the second pass is checked too.  Skipped
 * without a GPU. */
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
    int wide;    /* the wide resolve must decide some row the best 64 do not */
    int keep;    /* FS_GPU_TEST_SMALL keeps its requests: past 160 rows (the rows
                    kernel's candidate lists), or a row block of its own */
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
       which must change nothing but the time; FLASHSPEC_FILTER_WIDE=0:
       rows the best 64 candidates leave undecided go to the second pass at
       once -- the wide resolve may only take rows from it, never change a
       token */
    /* FLASHSPEC_FILTER_ROWS_MIN=1: every filtered fused call on the rows
       kernel's list-keeping kernels (one row block unclustered, two or more
       in clusters), =0: none, past 160 rows the tile kernel in row chunks */
    enum { NMODE = 7, WIDE_OFF = 4 };
    static const char *modes[NMODE] = {NULL,
                                       "FLASHSPEC_FILTER_SECOND_PASS",
                                       "FLASHSPEC_DISABLE_HOPPER",
                                       "FLASHSPEC_FILTER_WARM=0",
                                       "FLASHSPEC_FILTER_WIDE=0",
                                       "FLASHSPEC_FILTER_ROWS_MIN=1",
                                       "FLASHSPEC_FILTER_ROWS_MIN=0"};
    int32_t *fb_default = malloc(sizeof(int32_t) * (size_t)f.in.requests);
    int64_t fb_total[NMODE] = {0};
    for (int m = 0; m < NMODE; ++m) {
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
            if (m == 0)
                fb_default[r] = f.fallback[r];
            if (m == WIDE_OFF && f.fallback[r] < fb_default[r])
                fail_msg("%s: request %lld: %d second-pass rows, %d with the wide resolve",
                         label, (long long)r, f.fallback[r], fb_default[r]);
            fb += f.fallback[r];
            filt += n;
        }
        printf("  %-44s rows %5lld: identical; second pass %lld of %lld filtered rows\n", label,
               (long long)f.in.rows, (long long)fb, (long long)filt);
        fb_total[m] = fb;
        gt_out_free(&go);
        fs_context_destroy(g);
    }
    /* a case whose prefixes are long (a wide vocabulary on the tile kernel)
       and whose k = 200 rows the best 64 cannot decide */
    if (c->wide && !(fb_total[0] < fb_total[WIDE_OFF]))
        fail_msg("%s: the wide resolve decided no row (second pass %lld rows, %lld without it)",
                 c->name, (long long)fb_total[0], (long long)fb_total[WIDE_OFF]);
    free(fb_default);
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
        /* past 160 rows: the rows kernel's lists (two row blocks paired, an
           odd count with its last unpaired) */
        {"sample fused peaked (> 160 rows)", GT_SAMPLE, 1, 1, 2053, 64, 200, .keep = 1},
        /* more rows than the filtered merge's co-resident blocks (2 an SM
           on an H100): the rows merged by a launch of their own, then the
           second pass */
        {"sample fused flat (> 300 rows)", GT_SAMPLE, 1, 0, 2053, 64, 300},
        /* the rows kernel's lists with several jobs a CTA (6 row blocks) */
        {"sample fused peaked (> 640 rows)", GT_SAMPLE, 1, 1, 4099, 64, 700, .keep = 1},
        /* the rows kernel's lists over several tiles a CTA */
        {"sample fused peaked (> 160 rows, long rows)", GT_SAMPLE, 1, 1, 32771, 64, 170, .keep = 1},
        {"verify fused flat (> 160 rows, long rows)", GT_VERIFY, 1, 0, 32771, 64, 64, .keep = 1},
        {"verify logits peaked", GT_VERIFY, 0, 1, 5003, 0, 48},
        {"verify fused peaked (tile)", GT_VERIFY, 1, 1, 4099, 64, 48},
        {"verify fused flat (tile)", GT_VERIFY, 1, 0, 4099, 64, 24},
        /* the filtered tile kernel's 48- and 64-row blocks (four lists a
           row and CTA), peaked */
        {"sample fused peaked (tile, 64 rows)", GT_SAMPLE, 1, 1, 4099, 64, 64, .keep = 1},
        {"verify fused peaked (tile, 33-64 rows)", GT_VERIFY, 1, 1, 4099, 64, 17},
        {"verify fused peaked (> 160 rows)", GT_VERIFY, 1, 1, 2053, 64, 96, .keep = 1},
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
        /* long exact prefixes (~1000 lists a row): k = 200 and wide nuclei
           decided from up to 512 candidates (the wide resolve) */
        {"sample fused peaked (long prefix)", GT_SAMPLE, 1, 1, 32771, 64, 24, 0, 1},
        {"sample fused flat (long prefix)", GT_SAMPLE, 1, 0, 32771, 64, 24, 0, 1},
        {"verify fused peaked (long prefix)", GT_VERIFY, 1, 1, 32771, 64, 12, 0, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        fcase c = cases[i];
        if (small && c.requests > 24 && !c.keep)
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

/* A law: one row of V tokens drawn `rows` at a time (distinct seeds) in
 * `calls` calls of fs_sample_logits, under filters that keep `kept` tokens;
 * the power check's wrong law keeps the best kept - 1 (top-k binding: the
 * nucleus of the top k is all of them, min-p cuts none of them -- k off by
 * one; top-p binding: a nucleus without the token that crosses p). */
typedef struct law_cfg {
    const char *name;
    int64_t V, rows;
    int calls;
    int32_t k;
    float p, mp;
    int top;      /* tokens of the row above its tail */
    double decay; /* between consecutive top tokens */
    int spread; /* the top tokens one a `V / top` stretch of ids (long prefixes), or anywhere */
} law_cfg;

/* The logits scan keeps one candidate list per (row, chunk), and 8 rows of
 * 20011 tokens take chunks of 256 tokens (fs_logits_chunk): 79 lists a row,
 * each holding its two or three top tokens (one in every 100 ids) and tail
 * tokens after them, so the exact prefix holds all 200 top tokens and the
 * one pass can decide.  (Thousands of rows a call take 4096-token chunks:
 * a list or two a row, too short a prefix for any k = 50.)
 * k = 50: decided by the best 64 candidates; the 50th is drawn ~870 times
 * in 10^5. */
static const law_cfg LAW_NARROW = {"k 50", 20011, 8, 12500, 50, 0.999f, 0.05f, 200, 0.03, 1};
/* k = 150: past the best 64, so the one pass decides it only through the
 * wide resolve.  The decay is gentle enough that the 150th token is drawn
 * ~290 times in 10^5: a sampler that drops it fails the test. */
static const law_cfg LAW_WIDE = {"k 150", 20011, 8, 12500, 150, 0.99999f, 0.005f, 200, 0.01, 1};
/* top-p 0.9 alone keeping ~240 tokens: the wide resolve's walk.  4 rows of
 * 40009 tokens take 256-token chunks, 157 lists a row, each with at most
 * two of the 300 top tokens (one in every 133 ids); the token that crosses
 * p is drawn ~200 times in 10^5. */
static const law_cfg LAW_WIDE_P = {"p 0.9", 40009, 4, 25000, 0, 0.9f, 0.0f, 300, 0.005, 1};

/* A row whose top tokens decay gently (c->decay a rank), the rest 12+
 * units below. */
static void law_row(const law_cfg *c, uint64_t seed, float *l)
{
    fst_rng rng;
    fst_rng_seed(&rng, seed);
    int64_t *perm = malloc(sizeof(int64_t) * (size_t)c->V);
    for (int64_t v = 0; v < c->V; ++v)
        perm[v] = v;
    fst_shuffle(&rng, perm, c->V);
    for (int64_t q = 0; q < c->V; ++q)
        l[perm[q]] = (float)(-12.0 - fabs(fst_normal(&rng)));
    const int64_t stretch = c->V / c->top;
    for (int64_t q = 0; q < c->top; ++q) {
        const int64_t id = c->spread ? q * stretch + (int64_t)fst_randint(&rng, stretch) : perm[q];
        l[id] = (float)(-c->decay * (double)q + 0.01 * fst_unif(&rng));
    }
    free(perm);
}

/* GPU draws of one row under c's filters; *second gets the draws that took
 * the second pass. */
static void law_counts(fs_context *g, const law_cfg *c, const float *row, uint64_t *counts,
                       int64_t *second)
{
    const int64_t R = c->rows, V = c->V;
    float *l = malloc(sizeof(float) * (size_t)(R * V));
    for (int64_t i = 0; i < R; ++i)
        memcpy(l + i * V, row, sizeof(float) * (size_t)V);
    float *T = malloc(sizeof(float) * (size_t)R), *p = malloc(sizeof(float) * (size_t)R),
          *mp = malloc(sizeof(float) * (size_t)R);
    int32_t *k = malloc(sizeof(int32_t) * (size_t)R), *fb = malloc(sizeof(int32_t) * (size_t)R);
    uint64_t *sd = malloc(sizeof(uint64_t) * (size_t)R), *of = malloc(sizeof(uint64_t) * (size_t)R);
    for (int64_t i = 0; i < R; ++i) {
        T[i] = 1.0f;
        k[i] = c->k;
        p[i] = c->p;
        mp[i] = c->mp;
    }
    void *dl = gt_dup(l, sizeof(float) * (size_t)(R * V));
    fs_sampling q = {gt_dup(T, sizeof(float) * (size_t)R), NULL, NULL, NULL, NULL};
    q.top_k = gt_dup(k, sizeof(int32_t) * (size_t)R);
    q.top_p = gt_dup(p, sizeof(float) * (size_t)R);
    q.min_p = gt_dup(mp, sizeof(float) * (size_t)R);
    q.out_filter_fallback = gt_dmalloc(sizeof(int32_t) * (size_t)R);
    void *dseed = gt_dmalloc(sizeof(uint64_t) * (size_t)R);
    void *doff = gt_dmalloc(sizeof(uint64_t) * (size_t)R);
    q.seed = dseed;
    q.offset = doff;
    size_t wb = 0;
    GT_FS(g, fs_sample_workspace_size(g, R, V, &wb));
    void *ws = gt_dmalloc(wb);
    int32_t *dtok = gt_dmalloc(sizeof(int32_t) * (size_t)R);
    int32_t *dst = gt_dmalloc(sizeof(int32_t) * (size_t)R);
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)R);
    /* the sanitizer runs (small mode) check the calls, not the law */
    const int calls = gt_small_mode() ? 1 : c->calls;
    *second = 0;
    for (int call = 0; call < calls; ++call) {
        for (int64_t i = 0; i < R; ++i) {
            sd[i] = stat_seed(0xf11e, (int64_t)call * R + i);
            of[i] = stat_offset(0xf11e, (int64_t)call * R + i);
        }
        GT_CUDA(cudaMemcpy(dseed, sd, sizeof(uint64_t) * (size_t)R, cudaMemcpyHostToDevice));
        GT_CUDA(cudaMemcpy(doff, of, sizeof(uint64_t) * (size_t)R, cudaMemcpyHostToDevice));
        GT_FS(g, fs_sample_logits(g, dl, FS_DTYPE_F32, R, V, &q, ws, wb, dtok, NULL, dst));
        GT_CUDA(cudaDeviceSynchronize());
        gt_down(tok, dtok, sizeof(int32_t) * (size_t)R);
        gt_down(fb, q.out_filter_fallback, sizeof(int32_t) * (size_t)R);
        for (int64_t i = 0; i < R; ++i) {
            counts[tok[i]]++;
            *second += fb[i];
        }
    }
    gt_dfree(dl);
    gt_dfree(q.temperature);
    gt_dfree(q.top_k);
    gt_dfree(q.top_p);
    gt_dfree(q.min_p);
    gt_dfree(q.out_filter_fallback);
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
    free(fb);
    free(sd);
    free(of);
    free(tok);
}

/* c's law in each mode: the draws must pass the chi-squared test of the
 * filtered law and fail that of the k - 1 law; second[m]: whether mode m's
 * draws must all take the second pass (1) or none (0). */
static void law_check(const law_cfg *c, const char *const *modes, const int *second, int nmodes)
{
    const int64_t V = c->V;
    float *row = malloc(sizeof(float) * (size_t)V);
    double *prob = malloc(sizeof(double) * (size_t)V), *wrong = malloc(sizeof(double) * (size_t)V);
    /* a row whose filter decisions are not within rounding */
    uint64_t s = 11;
    stat_row sr = {V, row, NULL, NULL, 1.0f, FS_DTYPE_F32, c->k, c->p, c->mp};
    for (;; ++s) {
        law_row(c, s, row);
        if (stat_sample_expected(&sr, prob))
            break;
    }
    int kept = 0;
    for (int64_t v = 0; v < V; ++v)
        kept += prob[v] > 0.0;
    if (c->k > 0)
        assert_int_equal(kept, c->k);
    else
        assert_true(kept > 64); /* past the best 64 */
    stat_row sw = sr;
    sw.top_k = kept - 1;
    assert_true(stat_sample_expected(&sw, wrong));
    for (int m = 0; m < nmodes; ++m) {
        fs_context *g = ctx_with(modes[m]);
        uint64_t *counts = calloc((size_t)V, sizeof(uint64_t));
        int64_t sec = 0;
        law_counts(g, c, row, counts, &sec);
        const int64_t draws = (gt_small_mode() ? 1 : c->calls) * c->rows;
        if (sec != (second[m] ? draws : 0))
            fail_msg("law %s [%s]: %lld of %lld draws took the second pass", c->name,
                     modes[m] ? modes[m] : "one pass", (long long)sec, (long long)draws);
        fst_chi2 r, rw;
        const double pv = fst_chi2_test(counts, prob, V, &r);
        const double pw = fst_chi2_test(counts, wrong, V, &rw);
        if (gt_small_mode()) {
            free(counts);
            fs_context_destroy(g);
            continue;
        }
        printf("  law %s [%s]: chi2 %.1f df %d p %.4f (must accept); the best %d: p %.3g, %llu "
               "impossible draws (must reject); second pass %lld of %lld draws\n",
               c->name, modes[m] ? modes[m] : "one pass", r.stat, r.df, pv, kept - 1, pw,
               (unsigned long long)rw.impossible, (long long)sec, (long long)draws);
        if (r.impossible)
            fail_msg("%llu draws of cut tokens", (unsigned long long)r.impossible);
        if (!(pv > 1e-3))
            fail_msg("the filtered law was rejected (p = %.3g)", pv);
        if (!(pw < 1e-6) && !rw.impossible)
            fail_msg("the law of the best %d was not rejected (p = %.3g)", kept - 1, pw);
        free(counts);
        fs_context_destroy(g);
    }
    free(row);
    free(prob);
    free(wrong);
}

/* k = 50 in the one pass and in the second; k = 150 and a top-p nucleus of
 * ~240 tokens in the wide one pass, and in the second pass without it. */
static void test_law(void **state)
{
    (void)state;
    static const char *const narrow[2] = {NULL, "FLASHSPEC_FILTER_SECOND_PASS"};
    static const int narrow_second[2] = {0, 1};
    law_check(&LAW_NARROW, narrow, narrow_second, 2);
    static const char *const wide[2] = {NULL, "FLASHSPEC_FILTER_WIDE=0"};
    static const int wide_second[2] = {0, 1};
    law_check(&LAW_WIDE, wide, wide_second, 2);
    law_check(&LAW_WIDE_P, wide, wide_second, 2);
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
