/* Tree verify on the CPU against the naive materialised oracle
 * (support/naive_tree.c), token for token with the same noise: random ragged
 * trees with several children per node, fused and over logits, f32 / f16 /
 * bf16, T in {0, 0.5, 0.7, 1, 2}, with and without bias and mask; the
 * accepted node indices as well as the tokens.  A disagreement is tolerated
 * only where the oracle's walk had a floating-point near-tie (decision
 * margin < 1e-4), and there must be almost none.  Also: a chain given as a
 * tree is fs_verify bit for bit with the same seeds; the walk really goes
 * deep, through later siblings and repeated tokens; tile-size and batch
 * independence; and the comparison catches the injected faults.
 *
 * Filters (top-k / top-p / min-p): the oracle is the sort-based materialised
 * filter (support/filter_ref.c, vLLM's sort + threshold + cumsum with ties
 * kept) applied to every target row, then the same naive tree walk under the
 * mask "allowed and kept"; compared in the one pass, with the candidate cap
 * lowered and with the second pass forced (which must also agree with the
 * one pass), with the fallback counts; a chain with filters is fs_verify with
 * the same filters; and the comparison catches a walk that tests children
 * with their unfiltered p and one that recovers from the unfiltered row. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_backend.h"
#include "filter_ref.h"
#include "fs_test.h"
#include "naive_ref.h"
#include "naive_tree.h"
#include "oracle_inputs.h"
#include "tree_test.h"

#define NEAR_TIE 1e-4
#define LOGPROB_TOL 1e-4

static const fs_dtype DTYPES[3] = {FS_DTYPE_F32, FS_DTYPE_F16, FS_DTYPE_BF16};

static long g_compared, g_near_ties, g_accepted, g_bad;
static long g_filtered, g_filtered_rows, g_near_filter;
/* ---- outputs ------------------------------------------------------------ */

typedef struct outs {
    int64_t R, S, P; /* requests, token stride, path stride */
    int32_t *tok, *path, *nem, *st;
    float *lp;
    fs_status ret;
} outs;

static void outs_alloc(outs *o, const fs_draft_tree *t)
{
    o->R = t->num_requests;
    o->S = t->max_depth + 1;
    o->P = t->max_depth;
    o->tok = malloc(sizeof(int32_t) * (size_t)(o->R * o->S));
    o->lp = malloc(sizeof(float) * (size_t)(o->R * o->S));
    o->path = malloc(sizeof(int32_t) * (size_t)(o->R * o->P + 1));
    o->nem = malloc(sizeof(int32_t) * (size_t)o->R);
    o->st = malloc(sizeof(int32_t) * (size_t)o->R);
}

static void outs_free(outs *o)
{
    free(o->tok);
    free(o->lp);
    free(o->path);
    free(o->nem);
    free(o->st);
}

static void run_tree(fs_context *ctx, const fst_inputs *in, const fs_draft_tree *t,
                     const fs_sampling *p, outs *o, int with_optional)
{
    int32_t *path = with_optional ? o->path : NULL;
    float *lp = with_optional ? o->lp : NULL;
    o->ret = in->fused ? fstt_verify_tree(ctx, &in->head, in->hidden, t, p, o->tok, path, o->nem,
                                          lp, o->st)
                       : fstt_verify_tree_logits(ctx, in->logits, in->dt, in->V, t, p, o->tok,
                                                 path, o->nem, lp, o->st);
}

/* ---- the comparison ----------------------------------------------------- */

static void check_tree(const fst_inputs *in, const fs_draft_tree *t, const fs_sampling *p,
                       const outs *o, const char *label)
{
    const int64_t R = o->R, S = o->S, P = o->P;
    int32_t *rt = malloc(sizeof(int32_t) * (size_t)(R * S));
    int32_t *rp = malloc(sizeof(int32_t) * (size_t)(R * P + 1));
    double *rl = malloc(sizeof(double) * (size_t)(R * S));
    double *rm = malloc(sizeof(double) * (size_t)R);
    int32_t *rn = malloc(sizeof(int32_t) * (size_t)R), *rs = malloc(sizeof(int32_t) * (size_t)R);
    /* filters: the oracle walks the target restricted to each row's kept set */
    const int filtered = p->top_k || p->top_p || p->min_p;
    fs_sampling q = *p;
    unsigned char *near = NULL;
    uint32_t *mask = NULL;
    if (filtered) {
        fs_drafts d = {t->num_requests, t->num_nodes, t->max_depth, t->tokens, t->node_offsets};
        int64_t *req = ref_filter_verify_requests(&d);
        near = malloc((size_t)in->rows);
        mask = ref_filter_mask(in->ref, in->rows, in->V, p, req, near);
        q.allowed = mask;
        free(req);
    }
    ref_verify_tree(in->ref, in->V, t, &q, REF_TREE_EXACT, rt, rp, rn, rl, rs, rm);
    for (int64_t r = 0; r < R; ++r) {
        ++g_compared;
        /* a pre-scan failure stays, else bad filters, else the scan's */
        if (filtered && (rs[r] == FS_ROW_OK || rs[r] == FS_ROW_NONFINITE ||
                         rs[r] == FS_ROW_ALL_MASKED) &&
            ref_filter_status(p, r) != FS_ROW_OK)
            rs[r] = FS_ROW_BAD_FILTER;
        const int32_t *tk = o->tok + r * S, *pa = o->path + r * P;
        const float *lp = o->lp + r * S;
        if (o->st[r] != rs[r])
            fail_msg("%s request %lld: status %d, oracle %d", label, (long long)r, o->st[r], rs[r]);
        if (o->nem[r] < 0 || o->nem[r] > S)
            fail_msg("%s request %lld: num_emitted %d", label, (long long)r, o->nem[r]);
        for (int64_t k = o->nem[r]; k < S; ++k)
            if (tk[k] != -1 || !isnan(lp[k]))
                fail_msg("%s request %lld: padding [%lld] = (%d, %g)", label, (long long)r,
                         (long long)k, tk[k], lp[k]);
        for (int64_t k = o->nem[r] > 0 ? o->nem[r] - 1 : 0; k < P; ++k)
            if (pa[k] != -1)
                fail_msg("%s request %lld: path padding [%lld] = %d", label, (long long)r,
                         (long long)k, pa[k]);
        if (rs[r] != FS_ROW_OK) {
            assert_int_equal(o->nem[r], 0);
            ++g_bad;
            continue;
        }
        g_accepted += o->nem[r] - 1;
        if (filtered) {
            const ref_filter f = ref_filter_of(p, r);
            const int on = p->temperature[r] >= FS_MIN_TEMPERATURE &&
                           ((f.top_k > 0 && f.top_k < in->V) || f.top_p < 1.0 || f.min_p > 0.0);
            g_filtered += on;
            g_filtered_rows += on ? t->node_offsets[r + 1] - t->node_offsets[r] + 1 : 0;
        }
        /* the path is a path: each node a child of the one before, carrying its token */
        const int32_t *par = t->parents + t->node_offsets[r];
        const int32_t *tt = t->tokens + t->node_offsets[r];
        const int64_t n = t->node_offsets[r + 1] - t->node_offsets[r];
        for (int64_t k = 0; k + 1 < o->nem[r]; ++k)
            if (pa[k] < 0 || pa[k] >= n || par[pa[k]] != (k ? pa[k - 1] : -1) || tt[pa[k]] != tk[k])
                fail_msg("%s request %lld: path [%lld] = node %d is not a child carrying %d",
                         label, (long long)r, (long long)k, pa[k], tk[k]);
        int same = o->nem[r] == rn[r];
        for (int64_t k = 0; same && k < o->nem[r]; ++k)
            same = tk[k] == rt[r * S + k] && (k + 1 == o->nem[r] || pa[k] == rp[r * P + k]);
        int any_near = 0;
        for (int64_t i = t->node_offsets[r] + r; near && i <= t->node_offsets[r + 1] + r; ++i)
            any_near |= near[i];
        if (any_near) {
            /* a filter decision within float rounding: either kept set is right */
            ++g_near_filter;
            continue;
        }
        if (same) {
            for (int64_t k = 0; k < o->nem[r]; ++k)
                if (!(fabs((double)lp[k] - rl[r * S + k]) < LOGPROB_TOL))
                    FST_MISMATCH("%s request %lld (T %g) slot %lld: token %d logprob %.7g, oracle "
                                 "%.7g",
                                 label, (long long)r, p->temperature[r], (long long)k, tk[k], lp[k],
                                 rl[r * S + k]);
            continue;
        }
        if (!(rm[r] < NEAR_TIE)) {
            char a[256], b[256];
            fst_token_list(a, sizeof a, tk, S);
            fst_token_list(b, sizeof b, rt + r * S, S);
            FST_MISMATCH("%s request %lld (T %g): emitted %d [%s ], oracle %d [%s ], margin %.3g",
                         label, (long long)r, p->temperature[r], o->nem[r], a, rn[r], b, rm[r]);
            continue;
        }
        print_message("%s request %lld: near-tie (margin %.3g)\n", label, (long long)r, rm[r]);
        ++g_near_ties;
    }
    free(rt);
    free(rp);
    free(rl);
    free(rm);
    free(rn);
    free(rs);
    free(near);
    free(mask);
}

/* ---- random trees against the oracle ------------------------------------ */

static void tree_grid(int64_t V, int64_t D, int64_t R, int64_t max_nodes, int64_t max_depth,
                      int64_t max_children, uint64_t seed0)
{
    fs_context *ctx = fst_cpu_ctx();
    uint64_t seed = seed0;
    for (int di = 0; di < 3; ++di)
        for (int fused = 0; fused < 2; ++fused)
            for (int bm = 0; bm < 4; ++bm) {
                ++seed;
                fstt_tree tr;
                int64_t rows = fstt_make_shapes(&tr, R, max_nodes, max_depth, max_children, seed);
                /* a wider output stride than any request needs, sometimes */
                if (bm == 3)
                    tr.t.max_depth += 2;
                fst_inputs in;
                fst_params pp;
                fst_make_inputs(&in, DTYPES[di], fused, rows, V, D, seed, 0);
                fst_make_params(&pp, R, rows, V, bm & 1, bm >> 1, seed);
                fstt_choose_tokens(&tr, in.ref, V, &pp.p, seed);
                outs o, o2;
                outs_alloc(&o, &tr.t);
                outs_alloc(&o2, &tr.t);
                char label[128];
                snprintf(label, sizeof label, "tree %s %s V%lld bias%d mask%d",
                         fst_dtype_name(DTYPES[di]), fused ? "fused" : "logits", (long long)V,
                         bm & 1, bm >> 1);
                run_tree(ctx, &in, &tr.t, &pp.p, &o, 1);
                if (o.ret != FS_OK)
                    fail_msg("%s: %s (%s)", label, fs_status_string(o.ret),
                             fs_context_last_error(ctx));
                check_tree(&in, &tr.t, &pp.p, &o, label);
                /* the optional outputs change nothing */
                run_tree(ctx, &in, &tr.t, &pp.p, &o2, 0);
                assert_int_equal(o2.ret, FS_OK);
                assert_memory_equal(o.tok, o2.tok, sizeof(int32_t) * (size_t)(o.R * o.S));
                assert_memory_equal(o.nem, o2.nem, sizeof(int32_t) * (size_t)o.R);
                outs_free(&o);
                outs_free(&o2);
                fst_free_params(&pp);
                fst_free_inputs(&in);
                fstt_free(&tr);
            }
    fs_context_destroy(ctx);
}

static void test_tree_vs_oracle(void **state)
{
    (void)state;
    tree_grid(1013, 67, 16, 14, 4, 4, 100);
}

static void test_tree_vs_oracle_small(void **state)
{
    (void)state;
    tree_grid(2, 3, 12, 6, 3, 2, 200);
    tree_grid(7, 5, 16, 10, 4, 3, 300);
    tree_grid(37, 11, 20, 16, 5, 5, 400);
    tree_grid(300, 9, 8, 24, 3, FS_TREE_MAX_CHILDREN, 500); /* wide: every child slot */
}

/* ---- filters against the oracle ----------------------------------------- */

enum { PASS_ONE = 0, PASS_CAP = 1, PASS_SECOND = 2 };
static const char *const PASS_NAME[3] = {"one pass", "cap 4", "second pass"};

static void set_pass(int mode)
{
    fs_cpu_set_filter_candidates(mode == PASS_CAP ? 4 : 0);
    fs_cpu_set_filter_second_pass(mode == PASS_SECOND);
}

/* 1 when request r's rows filter: T > 0, good parameters, some filter on. */
static int filters_on(const fs_sampling *p, int64_t r, int64_t V)
{
    if (!(p->temperature[r] >= FS_MIN_TEMPERATURE) || ref_filter_status(p, r) != FS_ROW_OK)
        return 0;
    const ref_filter f = ref_filter_of(p, r);
    return (f.top_k > 0 && f.top_k < V) || f.top_p < 1.0 || f.min_p > 0.0;
}

/* out_filter_fallback: written for every request, within [0, n_r + 1], 0
   where no row filters; forced: every row of a usable filtered request. */
static long check_fallback(const fs_draft_tree *t, const fs_sampling *p, const outs *o, int64_t V,
                           int forced, const char *label)
{
    long total = 0;
    for (int64_t r = 0; r < t->num_requests; ++r) {
        const int32_t f = p->out_filter_fallback[r];
        const int on = o->st[r] == FS_ROW_OK && filters_on(p, r, V);
        const int32_t most = on ? t->node_offsets[r + 1] - t->node_offsets[r] + 1 : 0;
        if (f < 0 || f > most || (forced && f != most))
            fail_msg("%s request %lld: out_filter_fallback %d (rows that filter: %d)", label,
                     (long long)r, f, most);
        total += f;
    }
    return total;
}

/* Random trees with filters, in each pass mode; the forced second pass and
   the lowered cap emit what the one pass emits (but at near-ties). */
static void filter_grid(int64_t V, int64_t D, int64_t R, int64_t max_nodes, int64_t max_depth,
                        int64_t max_children, uint64_t seed0, int ties)
{
    fs_context *ctx = fst_cpu_ctx();
    uint64_t seed = seed0;
    long second_rows = 0, differ = 0, requests = 0;
    static const unsigned arrays[4] = {FST_ARR_K, FST_ARR_P, FST_ARR_MINP, FST_ARR_ALL};
    for (int di = 0; di < 3; ++di)
        for (int fused = 0; fused < 2; ++fused) {
            if (ties && fused)
                continue;
            for (int ai = 0; ai < 4; ++ai) {
                ++seed;
                const int bm = (ai + di) & 3;
                fstt_tree tr;
                int64_t rows =
                    fstt_make_shapes(&tr, R, max_nodes, max_depth, max_children, seed);
                fst_inputs in;
                fst_params pp;
                fst_make_inputs(&in, DTYPES[di], fused, rows, V, D, seed, ties);
                fst_make_params(&pp, R, rows, V, bm & 1, bm >> 1, seed);
                fst_params_add_filters(&pp, R, V, seed, arrays[ai]);
                fstt_choose_tokens(&tr, in.ref, V, &pp.p, seed);
                outs o[3];
                for (int mode = 0; mode < 3; ++mode) {
                    outs_alloc(&o[mode], &tr.t);
                    char label[160];
                    snprintf(label, sizeof label, "filtered tree %s %s V%lld arrays %u bm%d%s %s",
                             fst_dtype_name(DTYPES[di]), fused ? "fused" : "logits",
                             (long long)V, arrays[ai], bm, ties ? " ties" : "", PASS_NAME[mode]);
                    set_pass(mode);
                    run_tree(ctx, &in, &tr.t, &pp.p, &o[mode], 1);
                    set_pass(PASS_ONE);
                    if (o[mode].ret != FS_OK && o[mode].ret != FS_ERR_INVALID_ROWS)
                        fail_msg("%s: %s (%s)", label, fs_status_string(o[mode].ret),
                                 fs_context_last_error(ctx));
                    check_tree(&in, &tr.t, &pp.p, &o[mode], label);
                    long fb = check_fallback(&tr.t, &pp.p, &o[mode], V, mode == PASS_SECOND,
                                             label);
                    if (mode == PASS_ONE)
                        second_rows += fb;
                }
                for (int mode = 1; mode < 3; ++mode)
                    for (int64_t r = 0; r < R; ++r) {
                        ++requests;
                        differ += o[mode].nem[r] != o[0].nem[r] ||
                                  memcmp(o[mode].tok + r * o[0].S, o[0].tok + r * o[0].S,
                                         sizeof(int32_t) * (size_t)o[0].S) ||
                                  memcmp(o[mode].path + r * o[0].P, o[0].path + r * o[0].P,
                                         sizeof(int32_t) * (size_t)o[0].P);
                    }
                for (int mode = 0; mode < 3; ++mode)
                    outs_free(&o[mode]);
                fst_free_params(&pp);
                fst_free_inputs(&in);
                fstt_free(&tr);
            }
        }
    print_message("filters V%lld%s: %ld rows took the second pass unforced; %ld of %ld "
                  "requests differ between the one pass and the cap 4 / forced second pass\n",
                  (long long)V, ties ? " (ties)" : "", second_rows, differ, requests);
    assert_true(differ <= 1 + requests / 200);
    fs_context_destroy(ctx);
}

static void test_tree_filters_vs_oracle(void **state)
{
    (void)state;
    filter_grid(1013, 67, 16, 14, 4, 4, 2000, 0);
    filter_grid(37, 11, 20, 16, 5, 5, 2100, 0);
    filter_grid(300, 9, 12, 24, 3, FS_TREE_MAX_CHILDREN, 2200, 0); /* wide */
    filter_grid(201, 1, 16, 12, 4, 4, 2300, 1);                   /* tie-heavy logits */
}

/* Many requests over a small vocabulary at T > 0: the walk goes deep, accepts
 * later siblings, emits bonus tokens at leaves and recovers at every depth,
 * and all of it agrees with the oracle. */
static void test_tree_paths(void **state)
{
    (void)state;
    fs_context *ctx = fst_cpu_ctx();
    const int64_t R = 600, V = 11, maxn = 12, maxd = 4, maxc = 3;
    fstt_tree tr;
    int64_t rows = fstt_make_shapes(&tr, R, maxn, maxd, maxc, 77);
    fst_inputs in;
    fst_params pp;
    fst_make_inputs(&in, FS_DTYPE_F32, 0, rows, V, 1, 77, 0);
    fst_make_params(&pp, R, rows, V, 1, 0, 77);
    for (int64_t r = 0; r < R; ++r)
        if (pp.T[r] == 0.0f)
            pp.T[r] = 1.0f; /* random walks only */
    fstt_choose_tokens(&tr, in.ref, V, &pp.p, 77);
    outs o;
    outs_alloc(&o, &tr.t);
    run_tree(ctx, &in, &tr.t, &pp.p, &o, 1);
    assert_int_equal(o.ret, FS_OK);
    check_tree(&in, &tr.t, &pp.p, &o, "tree paths");
    long stops[8] = {0}, later_sibling = 0, leaf_bonus = 0, repeats = 0;
    for (int64_t r = 0; r < R; ++r) {
        const int32_t *par = tr.parents + tr.offsets[r], *tt = tr.tokens + tr.offsets[r];
        int64_t n = tr.offsets[r + 1] - tr.offsets[r], acc = o.nem[r] - 1;
        stops[acc]++;
        for (int64_t k = 0; k < acc; ++k) {
            int32_t node = o.path[r * o.P + k];
            for (int64_t j = (k ? o.path[r * o.P + k - 1] : -1) + 1; j < node; ++j)
                if (par[j] == par[node])
                    ++later_sibling; /* an earlier sibling was rejected */
        }
        int32_t last = acc > 0 ? o.path[r * o.P + acc - 1] : -1;
        int leaf = 1;
        for (int64_t j = last + 1; j < n; ++j)
            if (par[j] == last)
                leaf = 0;
        leaf_bonus += acc > 0 && leaf;
        for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < i; ++j)
                repeats += par[j] == par[i] && tt[j] == tt[i];
    }
    print_message("stops at depth 0..4: %ld %ld %ld %ld %ld; later siblings accepted %ld, leaf "
                  "bonuses %ld, repeated sibling tokens %ld\n",
                  stops[0], stops[1], stops[2], stops[3], stops[4], later_sibling, leaf_bonus,
                  repeats);
    for (int k = 0; k <= 4; ++k)
        if (stops[k] == 0)
            fail_msg("no request stopped after %d accepted nodes", k);
    assert_true(later_sibling > 20);
    assert_true(leaf_bonus > 20);
    assert_true(repeats > 5);
    outs_free(&o);
    fst_free_params(&pp);
    fst_free_inputs(&in);
    fstt_free(&tr);
    fs_context_destroy(ctx);
}

/* ---- a chain as a tree is fs_verify ------------------------------------- */

/* filters: the same random filters on both calls (pass: the PASS_* mode). */
static void chain_case(fs_context *ctx, fs_dtype dt, int fused, int bm, uint64_t seed, int filters,
                       int pass)
{
    const int64_t R = 24, maxd = 5, V = 517, D = 21;
    fst_rng g;
    fst_rng_seed(&g, seed);
    int32_t lens[24];
    for (int64_t r = 0; r < R; ++r)
        lens[r] = (int32_t)(r == 0 ? 0 : fst_randint(&g, maxd + 1));
    int32_t zeros[24 * 5 + 1] = {0};
    fstt_tree tr;
    int64_t rows = fstt_make_chains(&tr, R, lens, zeros, maxd + (bm == 3));
    fst_inputs in;
    fst_params pp;
    fst_make_inputs(&in, dt, fused, rows, V, D, seed, 0);
    fst_make_params(&pp, R, rows, V, bm & 1, bm >> 1, seed);
    pp.T[3] = -1.0f; /* a bad request in both */
    if (filters) {
        fst_params_add_filters(&pp, R, V, seed, FST_ARR_ALL);
        pp.top_k[5] = -1; /* and a bad filter */
    }
    fstt_choose_tokens(&tr, in.ref, V, &pp.p, seed);
    fs_drafts d = {R, tr.t.num_nodes, tr.t.max_depth, tr.tokens, tr.offsets};
    const int64_t S = tr.t.max_depth + 1;
    outs o;
    outs_alloc(&o, &tr.t);
    int32_t *vt = malloc(sizeof(int32_t) * (size_t)(R * S)), vn[24], vs[24];
    float *vl = malloc(sizeof(float) * (size_t)(R * S));
    int32_t vfb[24];
    set_pass(pass);
    fs_status a = fused ? fst_verify(ctx, &in.head, in.hidden, &d, &pp.p, vt, vn, vl, vs)
                        : fst_verify_logits(ctx, in.logits, dt, V, &d, &pp.p, vt, vn, vl, vs);
    if (filters)
        memcpy(vfb, pp.fallback, sizeof vfb);
    run_tree(ctx, &in, &tr.t, &pp.p, &o, 1);
    set_pass(PASS_ONE);
    if (filters)
        assert_memory_equal(vfb, pp.fallback, sizeof vfb);
    assert_int_equal(a, FS_ERR_INVALID_ROWS);
    assert_int_equal(o.ret, FS_ERR_INVALID_ROWS);
    for (int64_t r = 0; r < R; ++r) {
        ++g_compared;
        if (o.st[r] != vs[r] || o.nem[r] != vn[r])
            fail_msg("chain %s %s bm%d filters %d pass %d request %lld: tree (status %d, %d "
                     "emitted), verify (%d, %d)",
                     fst_dtype_name(dt), fused ? "fused" : "logits", bm, filters, pass,
                     (long long)r, o.st[r], o.nem[r], vs[r], vn[r]);
        for (int64_t k = 0; k < S; ++k) {
            float x = o.lp[r * S + k], y = vl[r * S + k];
            if (o.tok[r * S + k] != vt[r * S + k] || !(x == y || (isnan(x) && isnan(y))))
                fail_msg("chain %s %s bm%d filters %d pass %d request %lld slot %lld: tree (%d, "
                         "%.9g), verify (%d, %.9g)",
                         fst_dtype_name(dt), fused ? "fused" : "logits", bm, filters, pass,
                         (long long)r, (long long)k, o.tok[r * S + k], x, vt[r * S + k], y);
        }
        for (int64_t k = 0; k < o.P; ++k)
            assert_int_equal(o.path[r * o.P + k], k + 1 < o.nem[r] ? k : -1);
    }
    if (pass == PASS_ONE)
        check_tree(&in, &tr.t, &pp.p, &o, filters ? "filtered chain as tree" : "chain as tree");
    free(vt);
    free(vl);
    outs_free(&o);
    fst_free_params(&pp);
    fst_free_inputs(&in);
    fstt_free(&tr);
}

static void test_chain_is_verify(void **state)
{
    (void)state;
    fs_context *ctx = fst_cpu_ctx();
    uint64_t seed = 900;
    for (int di = 0; di < 3; ++di)
        for (int fused = 0; fused < 2; ++fused)
            for (int bm = 0; bm < 4; ++bm)
                chain_case(ctx, DTYPES[di], fused, bm, ++seed, 0, PASS_ONE);
    /* and on tiles that cut noise blocks */
    fs_cpu_set_tile_size(7);
    chain_case(ctx, FS_DTYPE_F32, 0, 3, 950, 0, PASS_ONE);
    chain_case(ctx, FS_DTYPE_BF16, 1, 1, 951, 0, PASS_ONE);
    fs_cpu_set_tile_size(0);
    /* with filters, in every pass mode: the kept records and the second pass
       of a one-child tree row are verify's bit for bit */
    for (int di = 0; di < 3; ++di)
        for (int fused = 0; fused < 2; ++fused)
            for (int pass = 0; pass < 3; ++pass)
                chain_case(ctx, DTYPES[di], fused, (di + pass) & 3, ++seed, 1, pass);
    fs_cpu_set_tile_size(7);
    chain_case(ctx, FS_DTYPE_F32, 0, 3, 960, 1, PASS_ONE);
    chain_case(ctx, FS_DTYPE_BF16, 1, 1, 961, 1, PASS_SECOND);
    fs_cpu_set_tile_size(0);
    fs_context_destroy(ctx);
}

/* ---- independence of tiles and of the batch ----------------------------- */

static void test_tree_tile_independence(void **state)
{
    (void)state;
    fs_context *ctx = fst_cpu_ctx();
    const int64_t V = 1013, R = 12;
    const int64_t tiles[] = {1, 7, 64, 256, V};
    for (int fused = 0; fused < 2; ++fused) {
        fstt_tree tr;
        int64_t rows = fstt_make_shapes(&tr, R, 10, 4, 3, 1500 + fused);
        fst_inputs in;
        fst_params pp;
        fst_make_inputs(&in, fused ? FS_DTYPE_BF16 : FS_DTYPE_F32, fused, rows, V, 35, 1500 + fused,
                        0);
        fst_make_params(&pp, R, rows, V, 1, 1, 1500 + fused);
        fstt_choose_tokens(&tr, in.ref, V, &pp.p, 1500);
        outs o0, o;
        outs_alloc(&o0, &tr.t);
        outs_alloc(&o, &tr.t);
        for (size_t ti = 0; ti < sizeof tiles / sizeof tiles[0]; ++ti) {
            fs_cpu_set_tile_size(tiles[ti]);
            outs *x = ti == 0 ? &o0 : &o;
            run_tree(ctx, &in, &tr.t, &pp.p, x, 1);
            assert_int_equal(x->ret, FS_OK);
            if (ti == 0) {
                check_tree(&in, &tr.t, &pp.p, x, "tree tile 1");
                continue;
            }
            if (memcmp(o.tok, o0.tok, sizeof(int32_t) * (size_t)(R * o.S)) ||
                memcmp(o.path, o0.path, sizeof(int32_t) * (size_t)(R * o.P)) ||
                memcmp(o.nem, o0.nem, sizeof(int32_t) * (size_t)R))
                fail_msg("tree verify differs between tile 1 and tile %lld",
                         (long long)tiles[ti]);
            for (int64_t k = 0; k < R * o.S; ++k)
                assert_true(o.tok[k] < 0 ? isnan(o.lp[k]) : fabsf(o.lp[k] - o0.lp[k]) < 1e-5f);
        }
        fs_cpu_set_tile_size(0);
        outs_free(&o0);
        outs_free(&o);
        fst_free_params(&pp);
        fst_free_inputs(&in);
        fstt_free(&tr);
    }
    fs_context_destroy(ctx);
}

/* Each request gives the same output alone as in its batch. */
static void test_tree_batch_independence(void **state)
{
    (void)state;
    fs_context *ctx = fst_cpu_ctx();
    const int64_t V = 301, R = 14;
    fstt_tree tr;
    int64_t rows = fstt_make_shapes(&tr, R, 9, 3, 3, 1600);
    fst_inputs in;
    fst_params pp;
    fst_make_inputs(&in, FS_DTYPE_F32, 0, rows, V, 1, 1600, 0);
    fst_make_params(&pp, R, rows, V, 1, 1, 1600);
    fstt_choose_tokens(&tr, in.ref, V, &pp.p, 1600);
    outs o;
    outs_alloc(&o, &tr.t);
    run_tree(ctx, &in, &tr.t, &pp.p, &o, 1);
    assert_int_equal(o.ret, FS_OK);
    const int64_t W = fst_mask_words(V);
    for (int64_t r = 0; r < R; ++r) {
        int64_t b = tr.offsets[r], n = tr.offsets[r + 1] - b, row0 = b + r;
        int32_t off1[2] = {0, (int32_t)n};
        fs_draft_tree t1 = {1, n, tr.t.max_depth, tr.t.max_children, tr.tokens + b,
                            tr.parents + b, off1};
        fs_sampling p1 = {&pp.T[r], &pp.seed[r], &pp.off[r], pp.bias + row0 * V,
                          pp.allowed + row0 * W};
        int32_t tk[4], pa[3], nem, st;
        float lp[4];
        assert_int_equal(fstt_verify_tree_logits(ctx, (float *)in.logits + row0 * V,
                                                 FS_DTYPE_F32, V, &t1, &p1, tk, pa, &nem, lp,
                                                 &st),
                         FS_OK);
        assert_int_equal(nem, o.nem[r]);
        assert_memory_equal(tk, o.tok + r * o.S, sizeof tk);
        assert_memory_equal(pa, o.path + r * o.P, sizeof pa);
        for (int k = 0; k < nem; ++k)
            assert_true(fabsf(lp[k] - o.lp[r * o.S + k]) < 1e-6f);
    }
    outs_free(&o);
    fst_free_params(&pp);
    fst_free_inputs(&in);
    fstt_free(&tr);
    fs_context_destroy(ctx);
}

/* ---- the comparison has teeth -------------------------------------------- */

static long faulty_mismatches(uint32_t faults, int64_t tile, uint64_t seed, int filters)
{
    fs_context *ctx = fst_cpu_ctx();
    const int64_t R = 300, V = 29;
    fstt_tree tr;
    int64_t rows = fstt_make_shapes(&tr, R, 8, 3, 4, seed);
    fst_inputs in;
    fst_params pp;
    fst_make_inputs(&in, FS_DTYPE_F32, 0, rows, V, 1, seed, 0);
    fst_make_params(&pp, R, rows, V, 0, 0, seed);
    if (filters)
        fst_params_add_filters(&pp, R, V, seed, FST_ARR_ALL);
    fstt_choose_tokens(&tr, in.ref, V, &pp.p, seed);
    outs o;
    outs_alloc(&o, &tr.t);
    fs_cpu_set_tile_size(tile);
    fs_cpu_set_faults(faults);
    run_tree(ctx, &in, &tr.t, &pp.p, &o, 1);
    fs_cpu_set_faults(FS_FAULT_NONE);
    fs_cpu_set_tile_size(0);
    assert_int_equal(o.ret, FS_OK);
    fst_count_only = 1;
    fst_mismatches = 0;
    long compared = g_compared, ties = g_near_ties, accepted = g_accepted, bad = g_bad;
    long filtered = g_filtered, filtered_rows = g_filtered_rows, near_filter = g_near_filter;
    check_tree(&in, &tr.t, &pp.p, &o, "faulty tree");
    fst_count_only = 0;
    g_compared = compared;
    g_near_ties = ties;
    g_accepted = accepted;
    g_bad = bad;
    g_filtered = filtered;
    g_filtered_rows = filtered_rows;
    g_near_filter = near_filter;
    long mm = fst_mismatches;
    /* without the fault the same inputs agree */
    run_tree(ctx, &in, &tr.t, &pp.p, &o, 1);
    check_tree(&in, &tr.t, &pp.p, &o, "fault-free tree");
    outs_free(&o);
    fst_free_params(&pp);
    fst_free_inputs(&in);
    fstt_free(&tr);
    fs_context_destroy(ctx);
    return mm;
}

static void test_oracle_detects_faults(void **state)
{
    (void)state;
    long siblings = faulty_mismatches(FS_FAULT_KEEP_SIBLINGS, 0, 1700, 0);
    long none = faulty_mismatches(FS_FAULT_NO_EXCLUDE, 0, 1701, 0);
    long edge = faulty_mismatches(FS_FAULT_TILE_EDGE, 8, 1702, 0);
    long fsib = faulty_mismatches(FS_FAULT_KEEP_SIBLINGS, 0, 1703, 1);
    long px = faulty_mismatches(FS_FAULT_UNFILTERED_PX, 0, 1704, 1);
    long draw = faulty_mismatches(FS_FAULT_UNFILTERED_DRAW, 0, 1705, 1);
    print_message("injected faults: %ld (rejected siblings kept), %ld (no child excluded), %ld "
                  "(tile edge) mismatches; filtered: %ld (siblings kept), %ld (children's "
                  "unfiltered p), %ld (recovery from the unfiltered row)\n",
                  siblings, none, edge, fsib, px, draw);
    assert_true(siblings >= 5);
    assert_true(none >= 5);
    assert_true(edge >= 5);
    assert_true(fsib >= 5);
    assert_true(px >= 5);
    assert_true(draw >= 5);
}

static void test_summary(void **state)
{
    (void)state;
    print_message("compared %ld requests against the oracle (%ld failed as bad requests, %ld "
                  "accepted nodes), %ld near-ties\n",
                  g_compared, g_bad, g_accepted, g_near_ties);
    assert_true(g_compared > 1000);
    assert_true(g_accepted > g_compared / 2);
    assert_true(g_near_ties <= 2 + g_compared / 1000);
    print_message("filtered: %ld requests (%ld rows), %ld at a near-tie of a filter decision in "
                  "some row\n",
                  g_filtered, g_filtered_rows, g_near_filter);
    assert_true(g_filtered > 1000);
    /* test_filter_oracle's budget per row (tie-heavy logits included) */
    assert_true(g_near_filter <= 10 + g_filtered_rows / 50);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_tree_vs_oracle, fst_reset_hooks),
        cmocka_unit_test_setup(test_tree_vs_oracle_small, fst_reset_hooks),
        cmocka_unit_test_setup(test_tree_filters_vs_oracle, fst_reset_hooks),
        cmocka_unit_test_setup(test_tree_paths, fst_reset_hooks),
        cmocka_unit_test_setup(test_chain_is_verify, fst_reset_hooks),
        cmocka_unit_test_setup(test_tree_tile_independence, fst_reset_hooks),
        cmocka_unit_test_setup(test_tree_batch_independence, fst_reset_hooks),
        cmocka_unit_test_setup(test_oracle_detects_faults, fst_reset_hooks),
        cmocka_unit_test_setup(test_summary, fst_reset_hooks),
    };
    return cmocka_run_group_tests_name("tree_oracle", tests, NULL, NULL);
}
