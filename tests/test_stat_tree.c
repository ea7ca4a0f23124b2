/* Exactness of tree verify, by chi-squared goodness of fit (GSL): the joint
 * law of (accepted path, emitted token) against the law of sampling token
 * by token from the target, computed exactly by enumeration:
 *   P(walk ends at node a, emits t) = reach(a) p_a(t) [t is no child's token of a],
 *   reach(root) = 1,  reach(c) = reach(a) p_a(token of c)  for the first child
 *   of a carrying that token (0 for a repeat),
 * on small trees with several children per node (repeated and masked
 * siblings, children holding all the mass, depth 3, 6 children, tiles that
 * cut noise blocks).  The accepted path is the node the walk ends at, so the
 * cells are (node or root, token).  10^5 requests per case, each with its
 * own seed and offset; Bonferroni p > 0.001 / NTESTS for the library.
 *
 * Power: the same harness must reject (p < 1e-6) a walk whose recovery draw
 * keeps the rejected siblings -- the library with FS_FAULT_KEEP_SIBLINGS and
 * the oracle's REF_TREE_KEEP_SIBLINGS -- and one that accepts a later
 * sibling with its unrenormalised p(c_j) (REF_TREE_UNRENORMALISED), and
 * accept the exact oracle walk on the same data.
 *
 * Filters: the same law with every row's p the filtered target (top-k ->
 * top-p -> min-p on that row's scores, materialised in double by
 * filter_ref.c), under each filter and all three together, in the one pass,
 * with the second pass forced and with the candidate cap at 1 (the second
 * pass reached naturally); power: the library testing children with their
 * unfiltered p (FS_FAULT_UNFILTERED_PX) and recovering from the unfiltered
 * row (FS_FAULT_UNFILTERED_DRAW) must be rejected.  Fixed seeds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_backend.h"
#include "fs_test.h"
#include "naive_ref.h"
#include "naive_tree.h"
#include "stat_harness.h"
#include "tree_test.h"

enum { NTESTS = 8, NFILTERED = 8, DRAWS = 100000, CHUNK = 4096, MAXN = 8 };
#define ALPHA (0.001 / NTESTS)
#define ALPHA_FILTERED (0.001 / NFILTERED)
#define REJECT 1e-6

/* A tree and its target rows, given by probabilities: node i carries token
 * tok[i] under parent par[i] and has probability q[i] in its parent's row
 * (0: masked there).  The rest of a row's mass goes to its other tokens at
 * random, or nowhere when only_children has the row's bit (row 0 = root,
 * 1 + i = node i): then only the children are allowed, and their q are
 * scaled to sum to 1. */
typedef struct tcase {
    const char *name;
    int64_t V, n;
    float T;
    int32_t par[MAXN], tok[MAXN];
    double q[MAXN];
    unsigned only_children;
    int64_t tile;
    int extra_mask; /* also mask ~25% of the tokens that are no child's */
} tcase;

/* Filters on every row of every request, and how the library resolves them. */
enum { PASS_ONE = 0, PASS_SECOND = 1, PASS_CAP1 = 2 };
typedef struct tfilt {
    int32_t top_k;
    float top_p, min_p;
    int pass;
} tfilt;

typedef struct problem {
    const tcase *c;
    const tfilt *f; /* NULL: no filters */
    int64_t draws;  /* requests drawn (build: DRAWS) */
    int64_t V, n, W;
    float rows[(MAXN + 1) * 64];
    uint32_t allowed[(MAXN + 1) * 2];
    fs_draft_tree tree;
    int32_t offsets[2];
} problem;

static int is_child_token(const tcase *c, int64_t node, int32_t t)
{
    for (int64_t i = 0; i < c->n; ++i)
        if (c->par[i] == node && c->tok[i] == t)
            return 1;
    return 0;
}

static void build(problem *pb, const tcase *c, uint64_t seed)
{
    memset(pb, 0, sizeof *pb);
    pb->c = c;
    pb->draws = DRAWS;
    pb->V = c->V;
    pb->n = c->n;
    pb->W = fst_mask_words(c->V);
    assert_true(c->V <= 64);
    fst_rng g;
    fst_rng_seed(&g, seed);
    for (int64_t j = 0; j <= c->n; ++j) {
        double p[64] = {0}, given = 0.0;
        uint32_t *al = pb->allowed + j * pb->W;
        for (int64_t v = 0; v < c->V; ++v)
            fst_set_allowed(al, v, 1);
        /* the children's probabilities (first copy of a repeated token) */
        for (int64_t i = 0; i < c->n; ++i) {
            if (c->par[i] != j - 1 || p[c->tok[i]] > 0.0 || !fst_allowed(al, c->tok[i]))
                continue;
            if (c->q[i] == 0.0)
                fst_set_allowed(al, c->tok[i], 0);
            p[c->tok[i]] = c->q[i];
            given += c->q[i];
        }
        int only = (c->only_children >> j) & 1u;
        double other = 0.0;
        for (int64_t v = 0; v < c->V; ++v) {
            if (is_child_token(c, j - 1, (int32_t)v))
                continue;
            if (only || (c->extra_mask && fst_unif(&g) < 0.25)) {
                fst_set_allowed(al, v, 0);
                continue;
            }
            p[v] = exp(fst_normal(&g));
            other += p[v];
        }
        double scale_other = other > 0.0 ? (1.0 - given) / other : 0.0;
        double scale_given = only ? 1.0 / given : 1.0;
        for (int64_t v = 0; v < c->V; ++v) {
            double pv = is_child_token(c, j - 1, (int32_t)v) ? p[v] * scale_given
                                                             : p[v] * scale_other;
            pb->rows[j * c->V + v] = pv > 0.0 ? (float)(c->T * log(pv)) : 0.0f;
        }
    }
    pb->offsets[0] = 0;
    pb->offsets[1] = (int32_t)c->n;
    fs_draft_tree t = {1, c->n, c->n, FS_TREE_MAX_CHILDREN, c->tok, c->par, pb->offsets};
    pb->tree = t;
}

/* The target law of (end node, token), cell (a + 1) * V + t. */
static void expected(const problem *pb, double *prob)
{
    const tcase *c = pb->c;
    const int64_t V = pb->V;
    double reach[MAXN + 1], p[64];
    reach[0] = 1.0;
    for (int64_t a = -1; a < c->n; ++a) {
        const float *l = pb->rows + (a + 1) * V;
        const uint32_t *al = pb->allowed + (a + 1) * pb->W;
        if (pb->f) {
            if (!stat_softmax_filtered(l, NULL, al, V, c->T, pb->f->top_k, pb->f->top_p,
                                       pb->f->min_p, p))
                fail_msg("%s: a filter decision at a near-tie: move the parameters", c->name);
        } else {
            stat_softmax(l, NULL, al, V, c->T, p);
        }
        for (int64_t t = 0; t < V; ++t)
            prob[(a + 1) * V + t] = is_child_token(c, a, (int32_t)t) ? 0.0 : reach[a + 1] * p[t];
        for (int64_t i = a + 1; i < c->n; ++i) {
            if (c->par[i] != a)
                continue;
            int first = 1;
            for (int64_t j = a + 1; j < i; ++j)
                first &= !(c->par[j] == a && c->tok[j] == c->tok[i]);
            reach[i + 1] = first ? reach[a + 1] * p[c->tok[i]] : 0.0;
        }
    }
}

/* Tally one request's output: 1 if well formed. */
static int tally(const problem *pb, const int32_t *tok, const int32_t *path, int32_t nem,
                 uint64_t *counts)
{
    const tcase *c = pb->c;
    const int64_t S = c->n + 1;
    if (nem < 1 || nem > S || tok[nem - 1] < 0 || tok[nem - 1] >= pb->V)
        return 0;
    int32_t node = -1;
    for (int32_t k = 0; k + 1 < nem; ++k) {
        int32_t x = path[k];
        if (x < 0 || x >= c->n || c->par[x] != node || c->tok[x] != tok[k])
            return 0;
        node = x;
    }
    for (int64_t k = nem; k < S; ++k)
        if (tok[k] != -1)
            return 0;
    counts[(node + 1) * pb->V + tok[nem - 1]]++;
    return 1;
}

enum { BY_LIBRARY = -1 }; /* else: the oracle with these flags */

/* counts[(n + 1) * V] from `draws` requests; returns the malformed ones. */
static uint64_t draw(const problem *pb, int how, uint64_t seed, uint64_t *counts)
{
    const tcase *c = pb->c;
    const int64_t V = pb->V, n = pb->n, per = n + 1, W = pb->W, S = n + 1;
    float *lg = malloc(sizeof(float) * (size_t)(CHUNK * per * V));
    double *ref = malloc(sizeof(double) * (size_t)(CHUNK * per * V));
    uint32_t *al = malloc(sizeof(uint32_t) * (size_t)(CHUNK * per * W));
    int32_t *tk = malloc(sizeof(int32_t) * (size_t)(CHUNK * n + 1));
    int32_t *pa = malloc(sizeof(int32_t) * (size_t)(CHUNK * n + 1));
    int32_t *offs = malloc(sizeof(int32_t) * (CHUNK + 1));
    float *T = malloc(sizeof(float) * CHUNK);
    int32_t *fk = malloc(sizeof(int32_t) * CHUNK);
    float *fp = malloc(sizeof(float) * CHUNK), *fm = malloc(sizeof(float) * CHUNK);
    uint64_t *sd = malloc(sizeof(uint64_t) * CHUNK), *of = malloc(sizeof(uint64_t) * CHUNK);
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)(CHUNK * S));
    int32_t *path = malloc(sizeof(int32_t) * (size_t)(CHUNK * n + 1));
    int32_t *nem = malloc(sizeof(int32_t) * CHUNK), *st = malloc(sizeof(int32_t) * CHUNK);
    float *lp = malloc(sizeof(float) * (size_t)(CHUNK * S));
    double *rlp = malloc(sizeof(double) * (size_t)(CHUNK * S));
    for (int64_t i = 0; i < CHUNK; ++i) {
        memcpy(lg + i * per * V, pb->rows, sizeof(float) * (size_t)(per * V));
        memcpy(al + i * per * W, pb->allowed, sizeof(uint32_t) * (size_t)(per * W));
        memcpy(tk + i * n, c->tok, sizeof(int32_t) * (size_t)n);
        memcpy(pa + i * n, c->par, sizeof(int32_t) * (size_t)n);
        offs[i] = (int32_t)(i * n);
        T[i] = c->T;
        fk[i] = pb->f ? pb->f->top_k : 0;
        fp[i] = pb->f ? pb->f->top_p : 1.0f;
        fm[i] = pb->f ? pb->f->min_p : 0.0f;
    }
    for (int64_t i = 0; i < CHUNK * per * V; ++i)
        ref[i] = lg[i];
    offs[CHUNK] = (int32_t)(CHUNK * n);
    fs_context *ctx = fst_cpu_ctx();
    uint64_t malformed = 0;
    fs_cpu_set_tile_size(c->tile);
    if (pb->f) {
        fs_cpu_set_filter_second_pass(pb->f->pass == PASS_SECOND);
        fs_cpu_set_filter_candidates(pb->f->pass == PASS_CAP1 ? 1 : 0);
    }
    for (int64_t done = 0; done < pb->draws; done += CHUNK) {
        int64_t m = pb->draws - done < CHUNK ? pb->draws - done : CHUNK;
        for (int64_t i = 0; i < m; ++i) {
            sd[i] = stat_seed(seed, done + i);
            of[i] = stat_offset(seed, done + i);
        }
        /* offs[i] = i * n: any prefix is a layout */
        fs_draft_tree t = {m, m * n, n, FS_TREE_MAX_CHILDREN, tk, pa, offs};
        fs_sampling p = {T, sd, of, NULL, al};
        if (pb->f) {
            p.top_k = fk;
            p.top_p = fp;
            p.min_p = fm;
        }
        if (how == BY_LIBRARY) {
            fs_status s = fstt_verify_tree_logits(ctx, lg, FS_DTYPE_F32, V, &t, &p, tok, path,
                                                  nem, lp, st);
            if (s != FS_OK)
                fail_msg("%s: %s (%s)", c->name, fs_status_string(s), fs_context_last_error(ctx));
        } else {
            assert_null(pb->f); /* the oracle's filtered walk is test_tree_oracle's */
            ref_verify_tree(ref, V, &t, &p, (unsigned)how, tok, path, nem, rlp, st, NULL);
        }
        for (int64_t i = 0; i < m; ++i)
            malformed += !tally(pb, tok + i * S, path + i * n, nem[i], counts);
    }
    fs_cpu_set_tile_size(0);
    fs_cpu_set_filter_second_pass(0);
    fs_cpu_set_filter_candidates(0);
    fs_context_destroy(ctx);
    free(fk);
    free(fp);
    free(fm);
    free(lg);
    free(ref);
    free(al);
    free(tk);
    free(pa);
    free(offs);
    free(T);
    free(sd);
    free(of);
    free(tok);
    free(path);
    free(nem);
    free(st);
    free(lp);
    free(rlp);
    return malformed;
}

/* p-value of draws made `how`; *impossible gets the draws in zero cells. */
static double run(const problem *pb, int how, uint64_t seed, fst_chi2 *res, int drop_impossible)
{
    const int64_t cells = (pb->n + 1) * pb->V;
    uint64_t *counts = calloc((size_t)cells, sizeof(uint64_t));
    double *prob = malloc(sizeof(double) * (size_t)cells);
    uint64_t malformed = draw(pb, how, seed, counts);
    if (malformed)
        fail_msg("%s: %llu malformed outputs", pb->c->name, (unsigned long long)malformed);
    expected(pb, prob);
    double total = 0.0;
    for (int64_t i = 0; i < cells; ++i)
        total += prob[i];
    assert_true(fabs(total - 1.0) < 1e-9);
    if (drop_impossible)
        for (int64_t i = 0; i < cells; ++i)
            if (prob[i] == 0.0)
                counts[i] = 0;
    double p = fst_chi2_test(counts, prob, cells, res);
    free(counts);
    free(prob);
    return p;
}

static const tcase CASES[] = {
    {"three leaves", 13, 3, 1.0f, {-1, -1, -1}, {3, 7, 11}, {0.35, 0.25, 0.2}, 0, 0, 0},
    {"two levels T0.8", 11, 6, 0.8f, {-1, -1, 0, 0, 1, 1}, {2, 5, 1, 2, 8, 9},
     {0.4, 0.3, 0.3, 0.3, 0.5, 0.2}, 0, 0, 0},
    {"repeated sibling", 9, 3, 1.0f, {-1, -1, -1}, {4, 4, 6}, {0.3, 0.3, 0.3}, 0, 0, 0},
    {"masked sibling T1.5", 13, 3, 1.5f, {-1, -1, -1}, {1, 5, 9}, {0.4, 0.0, 0.3}, 0, 4, 0},
    {"children hold all mass", 13, 4, 1.0f, {-1, -1, -1, 0}, {2, 6, 10, 3},
     {0.5, 0.3, 0.2, 0.6}, 1u, 0, 0},
    {"six children tile 4", 21, 6, 1.0f, {-1, -1, -1, -1, -1, -1}, {0, 3, 7, 8, 15, 20},
     {0.15, 0.15, 0.1, 0.1, 0.1, 0.1}, 0, 4, 0},
    {"depth 3 mixed", 11, 6, 1.0f, {-1, 0, 0, 1, 3, -1}, {1, 2, 3, 4, 5, 6},
     {0.5, 0.5, 0.3, 0.6, 0.7, 0.3}, 0, 0, 0},
    {"masks T0.5 tile 8", 37, 5, 0.5f, {-1, -1, 0, 0, 1}, {4, 20, 33, 5, 16},
     {0.4, 0.3, 0.35, 0.35, 0.6}, 0, 8, 1},
};

static void test_tree_joint_law(void **state)
{
    (void)state;
    assert_int_equal(sizeof CASES / sizeof CASES[0], NTESTS);
    for (size_t i = 0; i < NTESTS; ++i) {
        problem pb;
        build(&pb, &CASES[i], 3000 + i);
        fst_chi2 r;
        double t0 = fst_now();
        double p = run(&pb, BY_LIBRARY, 3100 + i, &r, 0);
        print_message("%-26s n %lld V %3lld T %.2g: chi2 %8.2f df %3d p %.4f (%.2fs)\n",
                      CASES[i].name, (long long)CASES[i].n, (long long)CASES[i].V, CASES[i].T,
                      r.stat, r.df, p, fst_now() - t0);
        if (r.impossible)
            fail_msg("%s: %llu draws in zero-probability cells", CASES[i].name,
                     (unsigned long long)r.impossible);
        if (!(p > ALPHA))
            fail_msg("%s: p = %.3g <= %.3g (chi2 %.1f, df %d, worst cell node %lld token %lld "
                     "z %.1f)",
                     CASES[i].name, p, ALPHA, r.stat, r.df,
                     (long long)(r.worst_cell >= 0 ? r.worst_cell / CASES[i].V - 1 : -2),
                     (long long)(r.worst_cell >= 0 ? r.worst_cell % CASES[i].V : -1), r.worst_z);
    }
}

static void expect_reject(const char *what, double p, const fst_chi2 *r)
{
    print_message("  %-52s chi2 %10.1f df %3d p %.3g  -> must reject\n", what, r->stat, r->df, p);
    if (!(p < REJECT))
        fail_msg("%s: the harness did not reject a wrong walk (p = %.3g)", what, p);
}

static void expect_accept(const char *what, double p, const fst_chi2 *r)
{
    print_message("  %-52s chi2 %10.1f df %3d p %.4f  -> must accept\n", what, r->stat, r->df, p);
    if (!(p > ALPHA))
        fail_msg("%s: the exact walk was rejected (p = %.3g <= %.3g)", what, p, ALPHA);
}

/* Three leaves under the root (the power case) and the two-level tree. */
static void test_power(void **state)
{
    (void)state;
    for (int ci = 0; ci < 2; ++ci) {
        const tcase *c = &CASES[ci];
        problem pb;
        build(&pb, c, 3000 + (uint64_t)ci);
        fst_chi2 r;
        char what[128];
        snprintf(what, sizeof what, "%s: oracle, exact walk", c->name);
        expect_accept(what, run(&pb, REF_TREE_EXACT, 3200 + (uint64_t)ci, &r, 0), &r);

        /* recovery keeps the rejected siblings: the library's fault and the oracle's */
        fs_cpu_set_faults(FS_FAULT_KEEP_SIBLINGS);
        double p = run(&pb, BY_LIBRARY, 3300 + (uint64_t)ci, &r, 0);
        fs_cpu_set_faults(FS_FAULT_NONE);
        snprintf(what, sizeof what, "%s: library, recovery keeps siblings", c->name);
        expect_reject(what, p, &r);
        assert_true(r.impossible > 100); /* a rejected sibling emitted */
        fs_cpu_set_faults(FS_FAULT_KEEP_SIBLINGS);
        p = run(&pb, BY_LIBRARY, 3300 + (uint64_t)ci, &r, 1);
        fs_cpu_set_faults(FS_FAULT_NONE);
        snprintf(what, sizeof what, "%s:   same, impossible draws dropped", c->name);
        expect_reject(what, p, &r);
        snprintf(what, sizeof what, "%s: oracle, recovery keeps siblings", c->name);
        expect_reject(what, run(&pb, REF_TREE_KEEP_SIBLINGS, 3400 + (uint64_t)ci, &r, 0), &r);

        /* later siblings accepted with their unrenormalised p(c_j) */
        snprintf(what, sizeof what, "%s: oracle, unrenormalised p(c_j)", c->name);
        expect_reject(what, run(&pb, REF_TREE_UNRENORMALISED, 3500 + (uint64_t)ci, &r, 0), &r);
        assert_int_equal(r.impossible, 0);
    }
}

/* A slightly wrong walk: the first child is unlikely (p = 0.05), so accepting
 * the second with p(c_2) instead of p(c_2) / 0.95 shifts its cell by 5%. */
static void test_power_subtle(void **state)
{
    (void)state;
    static const tcase c = {"unlikely first child", 13, 3, 1.0f, {-1, -1, -1}, {3, 7, 11},
                            {0.05, 0.3, 0.2}, 0, 0, 0};
    problem pb;
    build(&pb, &c, 3600);
    fst_chi2 r;
    expect_accept("unlikely first child: library", run(&pb, BY_LIBRARY, 3601, &r, 0), &r);
    expect_accept("unlikely first child: oracle, exact walk", run(&pb, REF_TREE_EXACT, 3602, &r, 0),
                  &r);
    expect_reject("unlikely first child: oracle, unrenormalised p(c_j)",
                  run(&pb, REF_TREE_UNRENORMALISED, 3603, &r, 0), &r);
}

/* ---- filters ------------------------------------------------------------ */

typedef struct fcase {
    const tcase *c;
    tfilt f;
    const char *what;
} fcase;

/* The first child tried is cut (0.05 < 0.2 x 0.3) while other tokens stay
   in F: a walk that tests it on its unfiltered score accepts it. */
static const tcase UNLIKELY_FIRST = {"unlikely first child", 13, 3, 1.0f, {-1, -1, -1},
                                     {3, 7, 11}, {0.05, 0.3, 0.2}, 0, 0, 0};

/* Each filter cuts children somewhere: "three leaves" has children of 0.35,
   0.25 and 0.2 at the root (top-k 2 and top-p 0.5 cut the third, and the
   other tokens); the other trees' rows are cut by min-p (node 1's children
   of 0.5 and 0.2: the second is cut) and the three together at several
   depths. */
static const fcase FCASES[] = {
    {&CASES[0], {2, 1.0f, 0.0f, PASS_ONE}, "top-k 2"},
    {&CASES[0], {0, 0.5f, 0.0f, PASS_ONE}, "top-p 0.5"},
    {&CASES[1], {0, 1.0f, 0.6f, PASS_ONE}, "min-p 0.6"},
    {&UNLIKELY_FIRST, {0, 1.0f, 0.2f, PASS_ONE}, "min-p 0.2"},
    {&CASES[5], {4, 0.8f, 0.3f, PASS_ONE}, "all three"},
    {&CASES[5], {4, 0.8f, 0.3f, PASS_SECOND}, "all three, second pass"},
    {&CASES[6], {3, 0.9f, 0.1f, PASS_CAP1}, "all three, cap 1"},
    {&CASES[7], {0, 0.55f, 0.0f, PASS_SECOND}, "top-p 0.55, second pass"},
};

static void test_tree_joint_law_filtered(void **state)
{
    (void)state;
    assert_int_equal(sizeof FCASES / sizeof FCASES[0], NFILTERED);
    for (size_t i = 0; i < NFILTERED; ++i) {
        const tcase *c = FCASES[i].c;
        problem pb;
        build(&pb, c, 3000 + (uint64_t)(c - CASES));
        pb.f = &FCASES[i].f;
        /* the CPU second pass clears its histograms per level and row: fewer
           draws keep the run short, the law is tested all the same */
        if (pb.f->pass != PASS_ONE)
            pb.draws = DRAWS / 4;
        fst_chi2 r;
        double t0 = fst_now();
        double p = run(&pb, BY_LIBRARY, 3700 + i, &r, 0);
        print_message("%-22s %-24s chi2 %8.2f df %3d p %.4f (%.2fs)\n", c->name, FCASES[i].what,
                      r.stat, r.df, p, fst_now() - t0);
        if (r.impossible)
            fail_msg("%s, %s: %llu draws in zero-probability cells", c->name, FCASES[i].what,
                     (unsigned long long)r.impossible);
        if (!(p > ALPHA_FILTERED))
            fail_msg("%s, %s: p = %.3g <= %.3g (chi2 %.1f, df %d, worst cell node %lld token "
                     "%lld z %.1f)",
                     c->name, FCASES[i].what, p, ALPHA_FILTERED, r.stat, r.df,
                     (long long)(r.worst_cell >= 0 ? r.worst_cell / c->V - 1 : -2),
                     (long long)(r.worst_cell >= 0 ? r.worst_cell % c->V : -1), r.worst_z);
    }
}

/* A walk on the unfiltered p for the children, or recovering from the
   unfiltered row, is rejected -- on the six children with all three filters
   also once its impossible draws (a cut child accepted, a cut token
   emitted) are dropped.  (On "three leaves" with top-k 2 the possible cells
   of the unfiltered-p walk keep the right proportions, so there only the
   impossible draws give it away.) */
static void test_power_filtered(void **state)
{
    (void)state;
    static const struct {
        uint32_t fault;
        const char *what;
    } faults[2] = {{FS_FAULT_UNFILTERED_PX, "children tested with the unfiltered p"},
                   {FS_FAULT_UNFILTERED_DRAW, "recovery from the unfiltered row"}};
    for (int fi = 0; fi < 2; ++fi)
        for (int ci = 0; ci < 2; ++ci) {
            const fcase *fc = &FCASES[ci ? 4 : 0];
            problem pb;
            build(&pb, fc->c, 3000 + (uint64_t)(fc->c - CASES));
            pb.f = &fc->f;
            pb.draws = DRAWS / 4; /* the wrong walks are far off */
            fst_chi2 r;
            char what[160];
            for (int drop = 0; drop <= ci; ++drop) {
                fs_cpu_set_faults(faults[fi].fault);
                double p = run(&pb, BY_LIBRARY, 3800 + (uint64_t)(fi * 2 + ci), &r, drop);
                fs_cpu_set_faults(FS_FAULT_NONE);
                snprintf(what, sizeof what, "%s, %s: %s%s", fc->c->name, fc->what,
                         faults[fi].what, drop ? " (impossible dropped)" : "");
                expect_reject(what, p, &r);
            }
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_tree_joint_law, fst_reset_hooks),
        cmocka_unit_test_setup(test_power, fst_reset_hooks),
        cmocka_unit_test_setup(test_power_subtle, fst_reset_hooks),
        cmocka_unit_test_setup(test_tree_joint_law_filtered, fst_reset_hooks),
        cmocka_unit_test_setup(test_power_filtered, fst_reset_hooks),
    };
    return cmocka_run_group_tests_name("stat_tree", tests, NULL, NULL);
}
