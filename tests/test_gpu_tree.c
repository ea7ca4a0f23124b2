/* Tree verify on a CUDA context against the CPU backend (the oracle of the
 * port): the same trees, inputs and seeds on both contexts, fused (bf16 /
 * fp16 / fp32 heads) and over logits (fp32 / bf16), ragged trees of several
 * shapes (chains, stars of up to 16 children, random mixed trees, empty
 * requests), greedy and sampled requests, with and without bias and mask,
 * row counts that take the Hopper tile kernel (< 97 rows) and the rows-as-M
 * kernel (153 rows: one 192-row CTA; 240, 252 and 300 rows: 128-row
 * blocks, two of them in 2-CTA clusters -- on an H200 the tile kernel's
 * pairs take those three, in 120-, 128- and 160-row halves).  ctest runs it again with the
 * rows kernel at every count (test_gpu_tree_rowsm), the tile kernel up to
 * 160 rows (test_gpu_tree_tile) and the generic tensor-core scan at every
 * count (FLASHSPEC_DISABLE_HOPPER=1, test_gpu_tree_generic).
 *
 * Statuses must be equal.  Tokens, path nodes and counts must be equal
 * except where the double-precision oracle (tests/support/naive_tree.c)
 * finds a decision of that request's walk within rounding of its threshold:
 * 1e-3 of the score scale on the fused path (the GEMM rounds differently),
 * 1e-5 over logits (the scores are the same floats; only exp and the merge
 * order round differently).  Logprobs of agreeing requests within 1e-3 /
 * 1e-4 relative.  The first mismatch of a failing case is printed in full.
 *
 * Also: bad trees, tokens and temperatures in some requests (per-request
 * status, the others as on the CPU), a malformed layout, non-finite and
 * all-masked rows, trees of up to 100 nodes (good and bad past the GPU
 * prep's first 32-node chunk), and a chain given as a tree equal to
 * fs_verify on the GPU bit for bit.  Skipped without a GPU. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include "gpu_util.h"

#ifdef FS_HAVE_CUDA

#include "exact_inputs.h"
#include "naive_tree.h"
#include "tree_test.h"

enum shape { SH_MIXED, SH_STAR, SH_CHAIN, SH_FIXED5, SH_EMPTY, SH_BIG };

static const char *shape_name(int s)
{
    static const char *n[] = {"mixed", "star", "chain", "fixed5", "empty", "big"};
    return n[s];
}

typedef struct tcase {
    int fused;
    fs_dtype dt;
    int64_t V, D;
    int shape;
    int64_t R;
    int bias_mask;
} tcase;

/* One problem on the host: the tree, the target (head + hidden or logits,
 * and in double for the oracle), the per-request parameters. */
typedef struct tprob {
    tcase c;
    fstt_tree tr;
    int64_t rows;
    void *weight, *hidden, *logits;
    double *ref;
    float *temperature, *bias;
    uint64_t *seed, *offset;
    uint32_t *allowed;
    int32_t *top_k; /* filters: the filter tests only (NULL otherwise) */
    float *top_p, *min_p;
    fs_sampling p;
} tprob;

typedef struct tout {
    fs_status ret;
    int32_t *tok, *path, *nem, *st;
    float *lp;
    int32_t *fb; /* out_filter_fallback when the problem filters */
} tout;

static const float temps[4] = {0.0f, 0.7f, 1.0f, 1.5f};

/* ---- trees ------------------------------------------------------------- */

/* Nodes of request r for a shape. */
static int64_t shape_nodes(int shape, int64_t r)
{
    switch (shape) {
    case SH_STAR: return r % 17;             /* 0 .. 16 children of the root */
    case SH_CHAIN: return r % 7;             /* 0 .. 6 drafts */
    case SH_FIXED5: return 5;
    case SH_EMPTY: return 0;
    case SH_BIG: return 33 + (r * 29) % 68; /* 33 .. 100: past the prep's 32-node chunks */
    default: return r % 4 == 0 ? 0 : 3 + (r * 5) % 9; /* 0, or 3 .. 11 */
    }
}

/* Parents: star all -1, chain i - 1, the others uniform among the earlier
 * nodes (and the root) with room under max_depth and max_children. */
static void make_tree(fstt_tree *tr, int shape, int64_t R, uint64_t seed)
{
    const int64_t max_depth = shape == SH_STAR ? 1 : shape == SH_CHAIN ? 6 : shape == SH_BIG ? 7 : 4;
    const int64_t max_children = shape == SH_STAR    ? 16
                                 : shape == SH_CHAIN ? 1
                                 : shape == SH_BIG   ? 6
                                                     : 4;
    fst_rng g;
    fst_rng_seed(&g, seed ^ 0x7EE5ull);
    tr->offsets = malloc(sizeof(int32_t) * (size_t)(R + 1));
    tr->offsets[0] = 0;
    for (int64_t r = 0; r < R; ++r)
        tr->offsets[r + 1] = tr->offsets[r] + (int32_t)shape_nodes(shape, r);
    const int64_t total = tr->offsets[R];
    tr->tokens = calloc((size_t)total + 1, sizeof(int32_t));
    tr->parents = malloc(sizeof(int32_t) * (size_t)(total + 1));
    int64_t depth[128], kids[128], open[128];
    for (int64_t r = 0; r < R; ++r) {
        const int64_t b = tr->offsets[r], n = tr->offsets[r + 1] - b;
        depth[0] = 0; /* index 0 = the root, 1 + i = node i */
        kids[0] = 0;
        for (int64_t i = 0; i < n; ++i) {
            int64_t up;
            if (shape == SH_STAR) {
                up = 0;
            } else if (shape == SH_CHAIN) {
                up = i;
            } else {
                int64_t m = 0;
                for (int64_t j = 0; j <= i; ++j)
                    if (depth[j] < max_depth && kids[j] < max_children)
                        open[m++] = j;
                if (m == 0)
                    fail_msg("make_tree: no room for node %lld", (long long)i);
                up = open[fst_randint(&g, m)];
            }
            tr->parents[b + i] = (int32_t)(up - 1);
            kids[up]++;
            depth[i + 1] = depth[up] + 1;
            kids[i + 1] = 0;
        }
    }
    tr->t.num_requests = R;
    tr->t.num_nodes = total;
    tr->t.max_depth = max_depth;
    tr->t.max_children = max_children;
    tr->t.tokens = total > 0 ? tr->tokens : NULL;
    tr->t.parents = total > 0 ? tr->parents : NULL;
    tr->t.node_offsets = tr->offsets;
}

/* ---- problems ---------------------------------------------------------- */

static void make_problem(const tcase *c, uint64_t seed, tprob *pb)
{
    memset(pb, 0, sizeof *pb);
    pb->c = *c;
    make_tree(&pb->tr, c->shape, c->R, seed);
    const int64_t rows = pb->tr.t.num_nodes + c->R, V = c->V;
    pb->rows = rows;
    if (c->fused) {
        fst_gen_head(seed, V, c->D, rows, 3.0, c->dt, &pb->weight, &pb->hidden);
    } else {
        float *l = fst_gen_logits(seed, rows, V, 3.0);
        pb->logits = fst_pack(l, (size_t)(rows * V), c->dt);
        free(l);
    }
    pb->ref = malloc(sizeof(double) * (size_t)(rows * V));
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t v = 0; v < V; ++v) {
            double acc = 0.0;
            if (c->fused) {
                for (int64_t k = 0; k < c->D; ++k)
                    acc += fst_get(pb->hidden, (size_t)(r * c->D + k), c->dt) *
                           fst_get(pb->weight, (size_t)(v * c->D + k), c->dt);
            } else {
                acc = fst_get(pb->logits, (size_t)(r * V + v), c->dt);
            }
            pb->ref[r * V + v] = acc;
        }
    const int64_t R = c->R;
    pb->temperature = malloc(sizeof(float) * (size_t)R);
    pb->seed = malloc(sizeof(uint64_t) * (size_t)R);
    pb->offset = malloc(sizeof(uint64_t) * (size_t)R);
    for (int64_t r = 0; r < R; ++r) {
        pb->temperature[r] = temps[(uint64_t)r % 4];
        pb->seed[r] = seed * 1000003u + (uint64_t)r * 7919u;
        pb->offset[r] = (uint64_t)r * 3u + (seed & 0xff) + ((uint64_t)r << 33);
    }
    if (c->bias_mask) {
        pb->bias = fst_gen_bias(seed, rows, V);
        pb->allowed = fst_gen_allowed(seed, rows, V, 0.8);
    }
    pb->p.temperature = pb->temperature;
    pb->p.seed = pb->seed;
    pb->p.offset = pb->offset;
    pb->p.logit_bias = pb->bias;
    pb->p.allowed = pb->allowed;
    fstt_choose_tokens(&pb->tr, pb->ref, V, &pb->p, seed);
}

static void free_problem(tprob *pb)
{
    fstt_free(&pb->tr);
    free(pb->weight);
    free(pb->hidden);
    free(pb->logits);
    free(pb->ref);
    free(pb->temperature);
    free(pb->seed);
    free(pb->offset);
    free(pb->bias);
    free(pb->allowed);
    free(pb->top_k);
    free(pb->top_p);
    free(pb->min_p);
    memset(pb, 0, sizeof *pb);
}

static int64_t stride_of(const tprob *pb)
{
    return pb->tr.t.max_depth + 1;
}

static int filters_of(const tprob *pb)
{
    return pb->top_k || pb->top_p || pb->min_p;
}

static void out_alloc(const tprob *pb, tout *o)
{
    const int64_t R = pb->c.R, S = stride_of(pb);
    memset(o, 0, sizeof *o);
    o->tok = malloc(sizeof(int32_t) * (size_t)(R * S));
    o->path = malloc(sizeof(int32_t) * (size_t)(R * (S - 1) + 1));
    o->nem = malloc(sizeof(int32_t) * (size_t)R);
    o->st = malloc(sizeof(int32_t) * (size_t)R);
    o->lp = malloc(sizeof(float) * (size_t)(R * S));
    o->fb = malloc(sizeof(int32_t) * (size_t)R);
}

static void out_free(tout *o)
{
    free(o->tok);
    free(o->path);
    free(o->nem);
    free(o->st);
    free(o->lp);
    free(o->fb);
    memset(o, 0, sizeof *o);
}

/* The op on the CPU context, host pointers. */
static void run_cpu(const tprob *pb, tout *o)
{
    fs_context *ctx = fst_cpu_ctx();
    const tcase *c = &pb->c;
    fs_lm_head head = {pb->weight, c->V, c->D, c->dt};
    fs_sampling p = pb->p;
    p.out_filter_fallback = filters_of(pb) ? o->fb : NULL;
    o->ret = c->fused ? fstt_verify_tree(ctx, &head, pb->hidden, &pb->tr.t, &p, o->tok, o->path,
                                         o->nem, o->lp, o->st)
                      : fstt_verify_tree_logits(ctx, pb->logits, c->dt, c->V, &pb->tr.t, &p,
                                                o->tok, o->path, o->nem, o->lp, o->st);
    if (o->ret != FS_OK && o->ret != FS_ERR_INVALID_ROWS)
        fail_msg("CPU tree verify: %s (%s)", fs_status_string(o->ret),
                 fs_context_last_error(ctx));
    fs_context_destroy(ctx);
}

/* Device copies of a problem's inputs (tree and parameters as given, so a
 * test may corrupt them on the host first). */
typedef struct tdev {
    void *w, *h, *l;
    fs_draft_tree t;
    fs_sampling p;
} tdev;

static void upload(const tprob *pb, tdev *g)
{
    const tcase *c = &pb->c;
    const size_t es = fst_dtype_size(c->dt), R = (size_t)c->R, rows = (size_t)pb->rows;
    const size_t V = (size_t)c->V, nodes = (size_t)pb->tr.t.num_nodes;
    memset(g, 0, sizeof *g);
    if (c->fused) {
        g->w = gt_dup(pb->weight, es * V * (size_t)c->D);
        g->h = gt_dup(pb->hidden, es * rows * (size_t)c->D);
    } else {
        g->l = gt_dup(pb->logits, es * rows * V);
    }
    g->t = pb->tr.t;
    g->t.tokens = nodes ? gt_dup(pb->tr.t.tokens, sizeof(int32_t) * nodes) : NULL;
    g->t.parents = nodes ? gt_dup(pb->tr.t.parents, sizeof(int32_t) * nodes) : NULL;
    g->t.node_offsets = gt_dup(pb->tr.t.node_offsets, sizeof(int32_t) * (R + 1));
    g->p.temperature = gt_dup(pb->p.temperature, sizeof(float) * R);
    g->p.seed = gt_dup(pb->p.seed, sizeof(uint64_t) * R);
    g->p.offset = gt_dup(pb->p.offset, sizeof(uint64_t) * R);
    g->p.logit_bias = gt_dup(pb->p.logit_bias, sizeof(float) * rows * V);
    g->p.allowed = gt_dup(pb->p.allowed, sizeof(uint32_t) * rows * (size_t)fst_mask_words(c->V));
    g->p.top_k = gt_dup(pb->p.top_k, sizeof(int32_t) * R);
    g->p.top_p = gt_dup(pb->p.top_p, sizeof(float) * R);
    g->p.min_p = gt_dup(pb->p.min_p, sizeof(float) * R);
    g->p.out_filter_fallback = filters_of(pb) ? gt_dmalloc(sizeof(int32_t) * R) : NULL;
}

static void free_dev(tdev *g)
{
    gt_dfree(g->w);
    gt_dfree(g->h);
    gt_dfree(g->l);
    gt_dfree(g->t.tokens);
    gt_dfree(g->t.parents);
    gt_dfree(g->t.node_offsets);
    gt_dfree(g->p.temperature);
    gt_dfree(g->p.seed);
    gt_dfree(g->p.offset);
    gt_dfree(g->p.logit_bias);
    gt_dfree(g->p.allowed);
    gt_dfree((void *)g->p.top_k);
    gt_dfree((void *)g->p.top_p);
    gt_dfree((void *)g->p.min_p);
    gt_dfree(g->p.out_filter_fallback);
    memset(g, 0, sizeof *g);
}

/* The op on ctx (a CUDA context): poisoned device outputs, a workspace of
 * exactly the queried size, synchronised and downloaded. */
static void run_gpu(fs_context *ctx, const tprob *pb, tout *o)
{
    const tcase *c = &pb->c;
    const int64_t R = c->R, S = stride_of(pb);
    tdev g;
    upload(pb, &g);
    size_t bytes = 0;
    GT_FS(ctx, fs_verify_tree_workspace_size(ctx, R, pb->tr.t.num_nodes, c->V, &bytes));
    void *ws = gt_dmalloc(bytes);
    int32_t *tok = gt_dmalloc(sizeof(int32_t) * (size_t)(R * S));
    int32_t *path = gt_dmalloc(sizeof(int32_t) * (size_t)(R * (S - 1) + 1));
    int32_t *nem = gt_dmalloc(sizeof(int32_t) * (size_t)R);
    int32_t *st = gt_dmalloc(sizeof(int32_t) * (size_t)R);
    float *lp = gt_dmalloc(sizeof(float) * (size_t)(R * S));
    GT_CUDA(cudaMemset(tok, 0x5A, sizeof(int32_t) * (size_t)(R * S)));
    GT_CUDA(cudaMemset(path, 0x5A, sizeof(int32_t) * (size_t)(R * (S - 1) + 1)));
    GT_CUDA(cudaMemset(nem, 0x5A, sizeof(int32_t) * (size_t)R));
    GT_CUDA(cudaMemset(st, 0x5A, sizeof(int32_t) * (size_t)R));
    GT_CUDA(cudaMemset(lp, 0x5A, sizeof(float) * (size_t)(R * S)));
    if (g.p.out_filter_fallback)
        GT_CUDA(cudaMemset(g.p.out_filter_fallback, 0x5A, sizeof(int32_t) * (size_t)R));
    fs_lm_head head = {g.w, c->V, c->D, c->dt};
    o->ret = c->fused ? fs_verify_tree(ctx, &head, g.h, &g.t, &g.p, ws, bytes, tok, path, nem,
                                       lp, st)
                      : fs_verify_tree_logits(ctx, g.l, c->dt, c->V, &g.t, &g.p, ws, bytes, tok,
                                              path, nem, lp, st);
    if (o->ret != FS_OK)
        fail_msg("GPU tree verify: %s (%s)", fs_status_string(o->ret),
                 fs_context_last_error(ctx));
    GT_CUDA(cudaDeviceSynchronize());
    gt_down(o->tok, tok, sizeof(int32_t) * (size_t)(R * S));
    gt_down(o->path, path, sizeof(int32_t) * (size_t)(R * (S - 1) + 1));
    gt_down(o->nem, nem, sizeof(int32_t) * (size_t)R);
    gt_down(o->st, st, sizeof(int32_t) * (size_t)R);
    gt_down(o->lp, lp, sizeof(float) * (size_t)(R * S));
    gt_down(o->fb, g.p.out_filter_fallback, sizeof(int32_t) * (size_t)R);
    gt_dfree(ws);
    gt_dfree(tok);
    gt_dfree(path);
    gt_dfree(nem);
    gt_dfree(st);
    gt_dfree(lp);
    free_dev(&g);
}

/* ---- comparison -------------------------------------------------------- */

static void fmt_ints(char *buf, size_t cap, const int32_t *x, int64_t n)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int64_t i = 0; i < n && at + 16 < cap; ++i)
        at += (size_t)snprintf(buf + at, cap - at, "%s%d", i ? " " : "", x[i]);
}

/* max |score| over the allowed tokens of request r's rows (the scale of the
 * rounding a near-tie is measured against). */
static double request_scale(const tprob *pb, int64_t r)
{
    const int64_t V = pb->c.V, W = fst_mask_words(V);
    const int64_t row0 = pb->tr.t.node_offsets[r] + r;
    const int64_t n = pb->tr.t.node_offsets[r + 1] - pb->tr.t.node_offsets[r];
    const double T = pb->temperature[r], inv = T > 0.0 ? 1.0 / T : 1.0;
    double m = 0.0;
    for (int64_t j = row0; j <= row0 + n; ++j)
        for (int64_t v = 0; v < V; ++v) {
            if (pb->allowed && !fst_allowed(pb->allowed + j * W, v))
                continue;
            const double b = pb->bias ? pb->bias[j * V + v] : 0.0;
            const double s = fabs((pb->ref[j * V + v] + b) * inv);
            if (isfinite(s) && s > m)
                m = s;
        }
    return m;
}

typedef struct tagree {
    int64_t differ, value_bad;
} tagree;

/* Compare the CPU (c) and GPU (g) outputs of pb; near-ties are counted,
 * everything else fails with the first mismatch in full. */
static tagree compare(const tprob *pb, const tout *c, const tout *g, const char *label)
{
    const int64_t R = pb->c.R, S = stride_of(pb);
    const int fused = pb->c.fused;
    const double tie_rel = fused ? 1e-3 : 1e-5, lp_rel = fused ? 1e-3 : 1e-4;
    tagree a = {0, 0};
    double *margin = NULL;
    for (int64_t r = 0; r < R; ++r) {
        if (c->st[r] != g->st[r])
            fail_msg("%s: request %lld: status CPU %d (%s), GPU %d (%s)", label, (long long)r,
                     c->st[r], fs_row_status_string(c->st[r]), g->st[r],
                     fs_row_status_string(g->st[r]));
        const int32_t *ct = c->tok + r * S, *gk = g->tok + r * S;
        const int32_t *cp = c->path + r * (S - 1), *gp = g->path + r * (S - 1);
        const int same = c->nem[r] == g->nem[r] &&
                         memcmp(ct, gk, sizeof(int32_t) * (size_t)S) == 0 &&
                         memcmp(cp, gp, sizeof(int32_t) * (size_t)(S - 1)) == 0;
        if (same) {
            for (int64_t k = 0; k < S; ++k)
                if (!gt_close(c->lp[r * S + k], g->lp[r * S + k], lp_rel)) {
                    if (a.value_bad++ == 0)
                        fprintf(stderr, "%s: request %lld slot %lld: logprob CPU %.9g GPU %.9g\n",
                                label, (long long)r, (long long)k, c->lp[r * S + k],
                                g->lp[r * S + k]);
                }
            continue;
        }
        char bc[512], bg[512], pc[512], pg[512];
        fmt_ints(bc, sizeof bc, ct, S);
        fmt_ints(bg, sizeof bg, gk, S);
        fmt_ints(pc, sizeof pc, cp, S - 1);
        fmt_ints(pg, sizeof pg, gp, S - 1);
        if (c->st[r] != FS_ROW_OK)
            fail_msg("%s: request %lld (status %d): outputs differ: CPU emitted %d [%s], GPU "
                     "emitted %d [%s]",
                     label, (long long)r, c->st[r], c->nem[r], bc, g->nem[r], bg);
        if (!margin) {
            const int64_t N = R * S;
            int32_t *rt = malloc(sizeof(int32_t) * (size_t)N), *rp = malloc(sizeof(int32_t) * (size_t)N);
            int32_t *rn = malloc(sizeof(int32_t) * (size_t)R), *rs = malloc(sizeof(int32_t) * (size_t)R);
            double *rl = malloc(sizeof(double) * (size_t)N);
            margin = malloc(sizeof(double) * (size_t)R);
            ref_verify_tree(pb->ref, pb->c.V, &pb->tr.t, &pb->p, REF_TREE_EXACT, rt, rp, rn, rl,
                            rs, margin);
            free(rt);
            free(rp);
            free(rn);
            free(rs);
            free(rl);
        }
        const double tol = tie_rel * (1.0 + request_scale(pb, r));
        printf("  %s: request %lld (T=%g, %lld nodes): CPU emitted %d [%s] path [%s], GPU "
               "emitted %d [%s] path [%s]: oracle margin %.3g (tolerance %.3g)\n",
               label, (long long)r, (double)pb->temperature[r],
               (long long)(pb->tr.t.node_offsets[r + 1] - pb->tr.t.node_offsets[r]), c->nem[r],
               bc, pc, g->nem[r], bg, pg, margin[r], tol);
        if (!(margin[r] <= tol))
            fail_msg("%s: request %lld: outputs differ (CPU [%s], GPU [%s]) with oracle margin "
                     "%.3g > %.3g",
                     label, (long long)r, bc, bg, margin[r], tol);
        ++a.differ;
    }
    free(margin);
    return a;
}

static void run_case(const tcase *c, uint64_t seed)
{
    tprob pb;
    make_problem(c, seed, &pb);
    tout co, go;
    out_alloc(&pb, &co);
    out_alloc(&pb, &go);
    run_cpu(&pb, &co);
    fs_context *gpu = gt_gpu_ctx();
    run_gpu(gpu, &pb, &go);
    fs_context_destroy(gpu);
    char label[200];
    snprintf(label, sizeof label, "%s %s V=%lld D=%lld %s R=%lld rows=%lld%s",
             c->fused ? "fused" : "logits", fst_dtype_name(c->dt), (long long)c->V,
             (long long)c->D, shape_name(c->shape), (long long)c->R, (long long)pb.rows,
             c->bias_mask ? " bias+mask" : "");
    tagree a = compare(&pb, &co, &go, label);
    int64_t ok = 0;
    for (int64_t r = 0; r < c->R; ++r)
        ok += co.st[r] == FS_ROW_OK;
    printf("%-62s agree %lld/%lld (%lld ok)%s\n", label, (long long)(c->R - a.differ),
           (long long)c->R, (long long)ok, a.value_bad ? "  LOGPROB MISMATCH" : "");
    fflush(stdout);
    assert_int_equal(a.value_bad, 0);
    assert_true(a.differ <= 2 + c->R / 100);
    out_free(&co);
    out_free(&go);
    free_problem(&pb);
}

static void run_cases(const tcase *cs, size_t n, uint64_t seed0)
{
    for (size_t i = 0; i < n; ++i)
        run_case(&cs[i], seed0 + 31 * (uint64_t)i);
}

/* ---- tests ------------------------------------------------------------- */

static void test_logits(void **state)
{
    (void)state;
    static const tcase cs[] = {
        {0, FS_DTYPE_F32, 1001, 0, SH_MIXED, 14, 1},
        {0, FS_DTYPE_F32, 1001, 0, SH_STAR, 17, 1},
        {0, FS_DTYPE_F32, 1001, 0, SH_CHAIN, 14, 0},
        {0, FS_DTYPE_BF16, 5003, 0, SH_MIXED, 20, 0},
        {0, FS_DTYPE_BF16, 4096, 0, SH_STAR, 34, 1},
        {0, FS_DTYPE_F32, 3001, 0, SH_FIXED5, 40, 1},
    };
    run_cases(cs, sizeof cs / sizeof cs[0], 100);
}

static void test_fused(void **state)
{
    (void)state;
    static const tcase cs[] = {
        {1, FS_DTYPE_BF16, 5003, 136, SH_MIXED, 14, 1},
        {1, FS_DTYPE_BF16, 5003, 136, SH_STAR, 17, 1}, /* 153 rows */
        {1, FS_DTYPE_BF16, 5003, 136, SH_CHAIN, 14, 0},
        {1, FS_DTYPE_BF16, 4099, 264, SH_MIXED, 10, 0},
        {1, FS_DTYPE_BF16, 2000, 4096, SH_MIXED, 5, 1},
        {1, FS_DTYPE_BF16, 5003, 136, SH_FIXED5, 40, 1}, /* 240 rows */
        /* 252 rows: on an H200 the pairs' 128-row halves, elsewhere two
           128-row blocks */
        {1, FS_DTYPE_BF16, 4099, 136, SH_FIXED5, 42, 0},
        /* 120 rows with D > 5120: on an H200 the tile kernel's 128-row
           epilogue-warp block (chain ops take the rows kernel there) */
        {1, FS_DTYPE_BF16, 2003, 5128, SH_FIXED5, 20, 1},
        /* 90 and 180 rows: the epilogue warps' 96-row block (an H200, or
           test_gpu_tree_ew_small) and, under test_gpu_tree_pairs, a pair of
           half-empty 128-row blocks */
        {1, FS_DTYPE_BF16, 5003, 136, SH_FIXED5, 15, 1},
        {1, FS_DTYPE_BF16, 4099, 136, SH_FIXED5, 30, 0},
        {1, FS_DTYPE_BF16, 3001, 100, SH_MIXED, 50, 0},
        {1, FS_DTYPE_F16, 6007, 264, SH_FIXED5, 50, 1}, /* 300 rows: 3 row blocks */
        /* 408 rows: four 128-row blocks, under test_gpu_tree_groups two row
           groups of pairs in 104-row halves (the last one 96 rows) */
        {1, FS_DTYPE_BF16, 4099, 136, SH_FIXED5, 68, 0},
        /* fp16 head; fp32 head (SIMT scan) */
        {1, FS_DTYPE_F16, 3001, 136, SH_MIXED, 12, 1},
        {1, FS_DTYPE_F32, 1001, 33, SH_MIXED, 12, 1},
        /* 235 tiles of 128 tokens: the tile kernel's CTAs scan one or two,
           its pairs (240 rows) three or four, the row groups (408 rows)
           seven or eight, so children lie in a CTA's later tiles, which
           the tile kernels find by the row's word (tree_tile_bits) */
        {1, FS_DTYPE_BF16, 30011, 64, SH_MIXED, 12, 1},
        {1, FS_DTYPE_BF16, 30011, 64, SH_FIXED5, 40, 0},
        {1, FS_DTYPE_BF16, 30011, 64, SH_FIXED5, 68, 1},
    };
    run_cases(cs, sizeof cs / sizeof cs[0], 200);
}

/* Requests without nodes only: every request emits its root row's bonus
 * token, and the tree arrays are NULL. */
static void test_empty(void **state)
{
    (void)state;
    static const tcase cs[] = {
        {0, FS_DTYPE_F32, 2000, 0, SH_EMPTY, 7, 1},
        {1, FS_DTYPE_BF16, 1000, 136, SH_EMPTY, 9, 0},
    };
    run_cases(cs, sizeof cs / sizeof cs[0], 300);
}

/* A problem with bad requests run on both backends into co / go (allocated
 * here; the caller frees them): every status as `want` on the GPU (and on
 * the CPU when cpu_too), the other outputs as on the CPU, and nothing
 * emitted by a failed request. */
static void expect_statuses(const tprob *pb, const int32_t *want, int cpu_too, const char *label,
                            fs_context *gpu, tout *co, tout *go)
{
    out_alloc(pb, co);
    out_alloc(pb, go);
    run_cpu(pb, co);
    assert_int_equal(co->ret, FS_ERR_INVALID_ROWS);
    run_gpu(gpu, pb, go);
    for (int64_t r = 0; r < pb->c.R; ++r)
        if (go->st[r] != want[r] || (cpu_too && co->st[r] != want[r]))
            fail_msg("%s: request %lld: CPU status %d, GPU %d (%s), expected %d (%s)", label,
                     (long long)r, co->st[r], go->st[r], fs_row_status_string(go->st[r]),
                     want[r], fs_row_status_string(want[r]));
    tagree a = compare(pb, co, go, label);
    assert_int_equal(a.value_bad, 0);
    assert_true(a.differ <= 1);
    for (int64_t r = 0; r < pb->c.R; ++r)
        if (want[r] != FS_ROW_OK) {
            assert_int_equal(go->nem[r], 0);
            assert_int_equal(go->tok[r * stride_of(pb)], -1);
        }
}

/* Bad requests among good ones: a self-parent, a parent after its child, a
 * token outside [0, V), a NaN temperature, a non-finite row and an
 * all-masked row.  Statuses and every output as on the CPU; the good
 * requests succeed.  Then a malformed layout fails every request alike. */
static void test_bad_requests(void **state)
{
    (void)state;
    for (int fused = 0; fused < 2; ++fused) {
        const tcase c = {fused, FS_DTYPE_F32, 1001, 33, SH_MIXED, 12, 1};
        tprob pb;
        make_problem(&c, 400 + (uint64_t)fused, &pb);
        int32_t *tok = pb.tr.tokens, *par = pb.tr.parents;
        const int32_t *off = pb.tr.offsets;
        const int64_t V = c.V, W = fst_mask_words(V);
        /* requests 1, 2, 3, 5, 6, 7 have 3 or more nodes (shape_nodes) */
        par[off[1] + 1] = 1;                     /* self-parent */
        par[off[2] + 1] = 2;                     /* a parent after its child */
        tok[off[3] + 2] = (int32_t)V;            /* outside the vocabulary */
        pb.temperature[5] = NAN;
        for (int64_t v = 0; v < W; ++v)          /* request 6's last row: nothing allowed */
            pb.allowed[(off[7] + 6) * W + v] = 0;
        if (!fused) { /* request 7's root row: a NaN logit, allowed */
            ((float *)pb.logits)[(off[7] + 7) * V + 17] = NAN;
            fst_set_allowed(pb.allowed + (off[7] + 7) * W, 17, 1);
        }
        int32_t want[12] = {0};
        want[1] = FS_ROW_BAD_TREE;
        want[2] = FS_ROW_BAD_TREE;
        want[3] = FS_ROW_BAD_DRAFT;
        want[5] = FS_ROW_BAD_TEMPERATURE;
        want[6] = FS_ROW_ALL_MASKED;
        want[7] = fused ? FS_ROW_OK : FS_ROW_NONFINITE;
        tout co, go;
        fs_context *gpu = gt_gpu_ctx();
        expect_statuses(&pb, want, 0, fused ? "bad requests, fused" : "bad requests, logits", gpu,
                        &co, &go);

        /* a decreasing layout: every request FS_ROW_BAD_OFFSETS */
        pb.tr.offsets[4] = pb.tr.offsets[5] + 1;
        run_cpu(&pb, &co);
        run_gpu(gpu, &pb, &go);
        for (int64_t r = 0; r < c.R; ++r) {
            assert_int_equal(co.st[r], FS_ROW_BAD_OFFSETS);
            assert_int_equal(go.st[r], FS_ROW_BAD_OFFSETS);
            assert_int_equal(go.nem[r], 0);
        }
        assert_memory_equal(co.tok, go.tok, sizeof(int32_t) * (size_t)(c.R * stride_of(&pb)));
        fs_context_destroy(gpu);
        out_free(&co);
        out_free(&go);
        free_problem(&pb);
    }
}

/* Trees of 33 to 100 nodes: the GPU prep builds a request's rows 32 nodes at
 * a time, so here parents, sibling counts and depths cross its chunks.
 * Agreement with the CPU (tokens, path nodes, counts), then bad trees whose
 * only fault lies past node 31: a parent after its child; the root's
 * children past max_children, counted across chunks; a chain below node 31
 * past max_depth; a token outside the vocabulary. */
static void test_big_trees(void **state)
{
    (void)state;
    static const tcase cs[] = {
        {0, FS_DTYPE_F32, 1001, 0, SH_BIG, 6, 1},
        {1, FS_DTYPE_BF16, 3001, 136, SH_BIG, 5, 0},
    };
    run_cases(cs, sizeof cs / sizeof cs[0], 500);

    const tcase c = {0, FS_DTYPE_F32, 1001, 0, SH_BIG, 6, 0};
    tprob pb;
    make_problem(&c, 510, &pb);
    int32_t *tok = pb.tr.tokens, *par = pb.tr.parents;
    const int32_t *off = pb.tr.offsets;
    /* nodes: 33, 62, 91, 52, 81, 42 (shape_nodes) */
    par[off[1] + 40] = 41;
    for (int64_t i = 32; i < off[3] - off[2]; ++i)
        par[off[2] + i] = -1;
    for (int64_t i = 32; i < off[4] - off[3]; ++i)
        par[off[3] + i] = (int32_t)(i - 1);
    tok[off[4] + 60] = (int32_t)c.V;
    const int32_t want[6] = {FS_ROW_OK,       FS_ROW_BAD_TREE,  FS_ROW_BAD_TREE,
                             FS_ROW_BAD_TREE, FS_ROW_BAD_DRAFT, FS_ROW_OK};
    tout co, go;
    fs_context *gpu = gt_gpu_ctx();
    expect_statuses(&pb, want, 1, "big trees, bad requests", gpu, &co, &go);
    fs_context_destroy(gpu);
    out_free(&co);
    out_free(&go);
    free_problem(&pb);
}

/* ---- filters ----------------------------------------------------------- */

/* Per-request filter values, request r taking row r % NFILT: top-k 50,
 * top-p 0.9, min-p 0.05, all three, k = 1, none, a mix, a wide nucleus
 * (which takes the second pass), and three bad values (FS_ROW_BAD_FILTER:
 * k < 0, p = 0, min_p = 1). */
enum { NFILT = 11 };
static const int32_t FILT_K[NFILT] = {50, 0, 0, 50, 1, 0, 7, 0, -1, 0, 0};
static const float FILT_P[NFILT] = {1.0f, 0.9f, 1.0f, 0.9f, 1.0f, 1.0f, 0.8f, 0.995f,
                                    1.0f, 0.0f, 1.0f};
static const float FILT_MP[NFILT] = {0.0f, 0.0f, 0.05f, 0.05f, 0.0f, 0.0f, 0.1f, 0.0f,
                                     0.0f, 0.0f, 1.0f};

static int filt_bad(int64_t r)
{
    return r % NFILT >= 8;
}

typedef struct fcase {
    const char *name;
    int fused; /* bf16 head, or fp32 logits */
    int64_t V, D;
    int shape;
    int64_t R;
    int peaked; /* Zipf-like bias: rows the one pass decides */
} fcase;

/* The allowed token of `row` with the highest score (logit + bias) strictly
 * below the row's top score, the lowest id among equals; the top token when
 * every allowed token ties. */
static int32_t runner_up(const tprob *pb, int64_t row)
{
    const int64_t V = pb->c.V, W = fst_mask_words(V);
    const double *l = pb->ref + row * V;
    const float *bias = pb->bias ? pb->bias + row * V : NULL;
    const uint32_t *al = pb->allowed ? pb->allowed + row * W : NULL;
    double top = -INFINITY, second = -INFINITY;
    int32_t top_id = 0, second_id = -1;
    for (int64_t v = 0; v < V; ++v) {
        if (al && !((al[v / 32] >> (v % 32)) & 1u))
            continue;
        const double sc = l[v] + (bias ? bias[v] : 0.0f);
        if (sc > top) {
            if (top > -INFINITY)
                second = top, second_id = top_id;
            top = sc, top_id = (int32_t)v;
        } else if (sc < top && sc > second) {
            second = sc, second_id = (int32_t)v;
        }
    }
    return second_id >= 0 ? second_id : top_id;
}

/* A tree problem whose logits are exact in fp32 whatever the summation
 * order (tests/support/exact_inputs.h): an LM head of multiples of 1/8 and
 * hidden states of multiples of 1/2 (bf16), or logits of multiples of 1/16
 * (fp32).  Every score is then the same float on both contexts, so the kept
 * sets, the noise and the walks must agree exactly. */
static void make_filter_problem(const fcase *fc, uint64_t seed, tprob *pb)
{
    memset(pb, 0, sizeof *pb);
    const tcase c = {fc->fused, fc->fused ? FS_DTYPE_BF16 : FS_DTYPE_F32, fc->V, fc->D,
                     fc->shape, fc->R, 0};
    pb->c = c;
    make_tree(&pb->tr, c.shape, c.R, seed);
    const int64_t rows = pb->tr.t.num_nodes + c.R, V = c.V, D = c.D, R = c.R;
    pb->rows = rows;
    fst_rng rng;
    fst_rng_seed(&rng, seed ^ 0xF17Eull);
    pb->ref = malloc(sizeof(double) * (size_t)(rows * V));
    if (c.fused) {
        float *wf, *hf;
        fst_exact_head(&rng, V, D, rows, &wf, &hf);
        for (int64_t r = 0; r < rows; ++r)
            for (int64_t v = 0; v < V; ++v) {
                double acc = 0.0;
                for (int64_t k = 0; k < D; ++k)
                    acc += (double)hf[r * D + k] * (double)wf[v * D + k];
                pb->ref[r * V + v] = acc;
            }
        pb->weight = fst_pack(wf, (size_t)(V * D), FS_DTYPE_BF16);
        pb->hidden = fst_pack(hf, (size_t)(rows * D), FS_DTYPE_BF16);
        free(wf);
        free(hf);
    } else {
        float *l = fst_exact_logits(&rng, rows, V);
        for (int64_t i = 0; i < rows * V; ++i)
            pb->ref[i] = l[i];
        pb->logits = l;
    }
    pb->temperature = malloc(sizeof(float) * (size_t)R);
    pb->seed = malloc(sizeof(uint64_t) * (size_t)R);
    pb->offset = malloc(sizeof(uint64_t) * (size_t)R);
    pb->top_k = malloc(sizeof(int32_t) * (size_t)R);
    pb->top_p = malloc(sizeof(float) * (size_t)R);
    pb->min_p = malloc(sizeof(float) * (size_t)R);
    for (int64_t r = 0; r < R; ++r) {
        pb->temperature[r] = temps[(uint64_t)(r + r / NFILT) % 4];
        pb->seed[r] = seed * 1000003u + (uint64_t)r * 7919u;
        pb->offset[r] = (uint64_t)r * 3u + (seed & 0xff);
        pb->top_k[r] = FILT_K[r % NFILT];
        pb->top_p[r] = FILT_P[r % NFILT];
        pb->min_p[r] = FILT_MP[r % NFILT];
        /* the temperature cycle would make every top-k 1 request greedy
           (r = 4 + 11 m), where the filters change nothing: sample them */
        if (pb->top_k[r] == 1)
            pb->temperature[r] = 1.0f;
    }
    if (fc->peaked)
        pb->bias = fst_zipf_bias(seed + 1, rows, V);
    pb->allowed = fst_gen_allowed(seed + 2, rows, V, 0.9);
    for (int64_t i = 0; i < rows; i += 3) /* every third row unmasked */
        for (int64_t wd = 0; wd < fst_mask_words(V); ++wd)
            pb->allowed[i * fst_mask_words(V) + wd] = 0xffffffffu;
    pb->p.temperature = pb->temperature;
    pb->p.seed = pb->seed;
    pb->p.offset = pb->offset;
    pb->p.logit_bias = pb->bias;
    pb->p.allowed = pb->allowed;
    pb->p.top_k = pb->top_k;
    pb->p.top_p = pb->top_p;
    pb->p.min_p = pb->min_p;
    fstt_choose_tokens(&pb->tr, pb->ref, V, &pb->p, seed);
    /* power against a kept record that leaves the scan's children's
       scores: under top-k 1 the first child of every node is its row's
       best token strictly below the top score -- outside F, so never
       accepted, where a walk that reads its unfiltered score (against the
       kept log-sum-exp, i.e. the top score alone) would accept it with
       probability exp(s_2 - s_1), near 1 on these grids */
    const fs_draft_tree *t = &pb->tr.t;
    for (int64_t r = 0; r < R; ++r) {
        if (pb->top_k[r] != 1)
            continue;
        const int64_t b = t->node_offsets[r], n = t->node_offsets[r + 1] - b;
        for (int64_t i = 0; i < n; ++i) {
            const int32_t up = pb->tr.parents[b + i];
            int first = 1;
            for (int64_t j = 0; j < i; ++j)
                first &= pb->tr.parents[b + j] != up;
            if (first)
                pb->tr.tokens[b + i] = runner_up(pb, b + r + up + 1);
        }
    }
}

/* Rows of request r that filter: valid, sampled, some filter on. */
static int64_t filtered_rows(const tprob *pb, int64_t r, int32_t status)
{
    if (status != FS_ROW_OK || pb->temperature[r] < FS_MIN_TEMPERATURE)
        return 0;
    const int on = (pb->top_k[r] > 0 && pb->top_k[r] < pb->c.V) || pb->top_p[r] < 1.0f ||
                   pb->min_p[r] > 0.0f;
    return on ? pb->tr.t.node_offsets[r + 1] - pb->tr.t.node_offsets[r] + 1 : 0;
}

static fs_context *gpu_ctx_with(const char *env)
{
    if (env)
        setenv(env, "1", 1);
    fs_context *ctx = gt_gpu_ctx();
    if (env)
        unsetenv(env);
    return ctx;
}

/* GPU and CPU equal: statuses, tokens, path nodes, counts; logprobs within
 * float rounding (the kept record's log-sum-exp is merged in another
 * order).  Second-pass counts: every filtered row when forced; otherwise
 * at most the filtered rows (the GPU's candidate prefix may be shorter than
 * the CPU's 64, so it may hand over rows the CPU decides). */
static void expect_filter_same(const tprob *pb, const tout *c, const tout *g, int forced,
                               const char *label)
{
    const int64_t R = pb->c.R, S = stride_of(pb);
    int64_t fb_gpu = 0, fb_cpu = 0, filt = 0, ok = 0;
    for (int64_t r = 0; r < R; ++r) {
        if (c->st[r] != g->st[r])
            fail_msg("%s: request %lld: status CPU %d (%s), GPU %d (%s)", label, (long long)r,
                     c->st[r], fs_row_status_string(c->st[r]), g->st[r],
                     fs_row_status_string(g->st[r]));
        if (filt_bad(r) && g->st[r] != FS_ROW_BAD_FILTER)
            fail_msg("%s: request %lld (k %d p %g min_p %g): status %d, expected "
                     "FS_ROW_BAD_FILTER",
                     label, (long long)r, pb->top_k[r], (double)pb->top_p[r],
                     (double)pb->min_p[r], g->st[r]);
        ok += g->st[r] == FS_ROW_OK;
        const int32_t *ct = c->tok + r * S, *gk = g->tok + r * S;
        const int32_t *cp = c->path + r * (S - 1), *gp = g->path + r * (S - 1);
        if (c->nem[r] != g->nem[r] || memcmp(ct, gk, sizeof(int32_t) * (size_t)S) != 0 ||
            memcmp(cp, gp, sizeof(int32_t) * (size_t)(S - 1)) != 0) {
            char bc[512], bg[512], pc[512], pg[512];
            fmt_ints(bc, sizeof bc, ct, S);
            fmt_ints(bg, sizeof bg, gk, S);
            fmt_ints(pc, sizeof pc, cp, S - 1);
            fmt_ints(pg, sizeof pg, gp, S - 1);
            fail_msg("%s: request %lld (k %d p %g min_p %g T %g, %lld nodes, status %d): CPU "
                     "emitted %d [%s] path [%s], GPU emitted %d [%s] path [%s]",
                     label, (long long)r, pb->top_k[r], (double)pb->top_p[r],
                     (double)pb->min_p[r], (double)pb->temperature[r],
                     (long long)(pb->tr.t.node_offsets[r + 1] - pb->tr.t.node_offsets[r]),
                     c->st[r], c->nem[r], bc, pc, g->nem[r], bg, pg);
        }
        for (int64_t k = 0; k < S; ++k)
            if (!gt_close(c->lp[r * S + k], g->lp[r * S + k], 2e-3))
                fail_msg("%s: request %lld slot %lld: logprob CPU %.9g GPU %.9g", label,
                         (long long)r, (long long)k, c->lp[r * S + k], g->lp[r * S + k]);
        const int64_t n = filtered_rows(pb, r, c->st[r]);
        if (g->fb[r] < 0 || g->fb[r] > n || (forced && g->fb[r] != n))
            fail_msg("%s: request %lld: %d second-pass rows of %lld filtered%s", label,
                     (long long)r, g->fb[r], (long long)n, forced ? " (forced)" : "");
        if (c->fb[r] < 0 || c->fb[r] > n)
            fail_msg("%s: request %lld: CPU counted %d second-pass rows of %lld filtered",
                     label, (long long)r, c->fb[r], (long long)n);
        fb_gpu += g->fb[r];
        fb_cpu += c->fb[r];
        filt += n;
    }
    printf("  %-58s identical (%lld ok); second pass GPU %lld, CPU %lld of %lld filtered rows\n",
           label, (long long)ok, (long long)fb_gpu, (long long)fb_cpu, (long long)filt);
    fflush(stdout);
}

static void run_filter_case(const fcase *fc, uint64_t seed)
{
    tprob pb;
    make_filter_problem(fc, seed, &pb);
    tout co;
    out_alloc(&pb, &co);
    run_cpu(&pb, &co);
    static const char *modes[2] = {NULL, "FLASHSPEC_FILTER_SECOND_PASS"};
    for (int m = 0; m < 2; ++m) {
        fs_context *gpu = gpu_ctx_with(modes[m]);
        tout go;
        out_alloc(&pb, &go);
        run_gpu(gpu, &pb, &go);
        char label[200];
        snprintf(label, sizeof label, "%s rows=%lld [%s]", fc->name, (long long)pb.rows,
                 modes[m] ? "second pass" : "default");
        expect_filter_same(&pb, &co, &go, m == 1, label);
        out_free(&go);
        fs_context_destroy(gpu);
    }
    out_free(&co);
    free_problem(&pb);
}

/* top-k / top-p / min-p on tree rows: the same kept sets, kept children and
 * walks as the CPU backend, in the one pass and with every filtered row
 * forced through the second pass; over logits and fused, on the Hopper
 * tile kernel (<= 160 rows) and in its row chunks past 160 rows (the
 * generic scan in the test_gpu_tree_generic run); bad values fail their
 * request with FS_ROW_BAD_FILTER. */
static void test_filters(void **state)
{
    (void)state;
    const int small = gt_small_mode();
    const fcase cases[] = {
        {"logits peaked mixed", 0, 5003, 0, SH_MIXED, 33, 1},
        {"logits flat star", 0, 3001, 0, SH_STAR, 22, 0},
        {"fused peaked mixed (tile)", 1, 4099, 64, SH_MIXED, 16, 1},
        {"fused flat star (tile)", 1, 2053, 64, SH_STAR, 11, 0},
        {"fused peaked chain (tile)", 1, 2053, 64, SH_CHAIN, 22, 1},
        {"fused peaked mixed (> 160 rows: chunks)", 1, 2053, 64, SH_MIXED, 44, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; ++i) {
        fcase c = cases[i];
        if (small && c.R > 11)
            c.R = 11;
        run_filter_case(&c, 900 + 17 * (uint64_t)i);
    }
}

/* Equal floats, or both NaN. */
static int same_float(float a, float b)
{
    return a == b || (isnan(a) && isnan(b));
}

/* A chain given as a tree equals fs_verify on the GPU bit for bit: same
 * scan kernel and merge (row counts where verify takes the Hopper tile
 * kernel too, and no op tail), the one child's push the same float
 * operations as verify's excluded token, the same uniforms. */
static void test_chain_equals_verify(void **state)
{
    (void)state;
    static const tcase cs[] = {
        {0, FS_DTYPE_F32, 3001, 0, SH_CHAIN, 12, 1},
        {0, FS_DTYPE_BF16, 5003, 0, SH_CHAIN, 60, 0},
        {1, FS_DTYPE_BF16, 5003, 136, SH_CHAIN, 12, 1},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; ++i) {
        const tcase *c = &cs[i];
        tprob pb;
        make_problem(c, 500 + i, &pb);
        const int64_t R = c->R, S = stride_of(&pb);
        tout to;
        out_alloc(&pb, &to);
        fs_context *gpu = gt_gpu_ctx();
        run_gpu(gpu, &pb, &to);

        tdev g;
        upload(&pb, &g);
        fs_drafts d = {R, pb.tr.t.num_nodes, S - 1, g.t.tokens, g.t.node_offsets};
        size_t bytes = 0;
        GT_FS(gpu, fs_verify_workspace_size(gpu, R, d.num_draft_tokens, c->V, &bytes));
        void *ws = gt_dmalloc(bytes);
        int32_t *tok = gt_dmalloc(sizeof(int32_t) * (size_t)(R * S));
        int32_t *nem = gt_dmalloc(sizeof(int32_t) * (size_t)R);
        int32_t *st = gt_dmalloc(sizeof(int32_t) * (size_t)R);
        float *lp = gt_dmalloc(sizeof(float) * (size_t)(R * S));
        fs_lm_head head = {g.w, c->V, c->D, c->dt};
        GT_FS(gpu, c->fused ? fs_verify(gpu, &head, g.h, &d, &g.p, ws, bytes, tok, nem, lp, st)
                            : fs_verify_logits(gpu, g.l, c->dt, c->V, &d, &g.p, ws, bytes, tok,
                                               nem, lp, st));
        GT_CUDA(cudaDeviceSynchronize());
        tout vo;
        out_alloc(&pb, &vo);
        gt_down(vo.tok, tok, sizeof(int32_t) * (size_t)(R * S));
        gt_down(vo.nem, nem, sizeof(int32_t) * (size_t)R);
        gt_down(vo.st, st, sizeof(int32_t) * (size_t)R);
        gt_down(vo.lp, lp, sizeof(float) * (size_t)(R * S));
        for (int64_t r = 0; r < R; ++r) {
            char bt[256], bv[256];
            fmt_ints(bt, sizeof bt, to.tok + r * S, S);
            fmt_ints(bv, sizeof bv, vo.tok + r * S, S);
            if (to.st[r] != vo.st[r] || to.nem[r] != vo.nem[r] ||
                memcmp(to.tok + r * S, vo.tok + r * S, sizeof(int32_t) * (size_t)S) != 0)
                fail_msg("chain %s %s R=%lld: request %lld: tree status %d emitted %d [%s], "
                         "verify status %d emitted %d [%s]",
                         c->fused ? "fused" : "logits", fst_dtype_name(c->dt), (long long)R,
                         (long long)r, to.st[r], to.nem[r], bt, vo.st[r], vo.nem[r], bv);
            for (int64_t k = 0; k < S; ++k)
                if (!same_float(to.lp[r * S + k], vo.lp[r * S + k]))
                    fail_msg("chain %s R=%lld: request %lld slot %lld: logprob tree %.9g, "
                             "verify %.9g",
                             c->fused ? "fused" : "logits", (long long)R, (long long)r,
                             (long long)k, to.lp[r * S + k], vo.lp[r * S + k]);
            /* the path is the chain itself */
            for (int64_t k = 0; k + 1 < to.nem[r]; ++k)
                assert_int_equal(to.path[r * (S - 1) + k], k);
        }
        printf("chain as a tree = fs_verify: %s %s R=%lld rows=%lld\n",
               c->fused ? "fused" : "logits", fst_dtype_name(c->dt), (long long)R,
               (long long)pb.rows);
        gt_dfree(ws);
        gt_dfree(tok);
        gt_dfree(nem);
        gt_dfree(st);
        gt_dfree(lp);
        free_dev(&g);
        out_free(&vo);
        out_free(&to);
        fs_context_destroy(gpu);
        free_problem(&pb);
    }
}

int main(void)
{
    GT_SKIP_WITHOUT_GPU("test_gpu_tree");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_logits),       cmocka_unit_test(test_fused),
        cmocka_unit_test(test_empty),        cmocka_unit_test(test_bad_requests),
        cmocka_unit_test(test_big_trees),
        cmocka_unit_test(test_chain_equals_verify), cmocka_unit_test(test_filters),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else
GT_MAIN_WITHOUT_CUDA("test_gpu_tree")
#endif
