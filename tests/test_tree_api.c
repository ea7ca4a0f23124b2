/* The tree-verify API contract: host-side validation (right status, a message
 * on the context, nothing written), the workspace query, optional pointers,
 * the refusal of a tensor-parallel context, and per-request errors on the
 * CPU context: bad trees (cycles, a parent after its child, parents out of range, too
 * many children, too deep), bad tokens and temperatures, non-finite and
 * all-masked rows, malformed node offsets, bad top_k / top_p / min_p -- each
 * gets its fs_row_status and sentinels, and every other request is exactly
 * as in a run without it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h" /* struct fs_context: a CPU context posing as a tensor-parallel one */
#include "fs_test.h"
#include "tree_test.h"

enum { V = 23, MAXR = 6, MAXN = 8, MAXD = 4, MAXC = 3, S = MAXD + 1 };

/* ---- a small batch of trees, kept per request ---------------------------- */

typedef struct treq {
    int n;
    int32_t tok[MAXN], par[MAXN];
    float rows[MAXN + 1][V];
    uint32_t allowed[MAXN + 1];
    float T;
    uint64_t seed, off;
    int32_t top_k;
    float top_p, min_p;
} treq;

typedef struct tprob {
    int R;
    treq q[MAXR];
    int64_t max_depth, max_children;
    int use_mask;
    int use_filters; /* pass top_k / top_p / min_p / out_filter_fallback */
} tprob;

/* The flattened arrays of a call, without request `skip` (-1: all). */
typedef struct tflat {
    int64_t R, nodes;
    int32_t offsets[MAXR + 1], tok[MAXR * MAXN + 1], par[MAXR * MAXN + 1];
    float logits[MAXR * (MAXN + 1) * V];
    uint32_t allowed[MAXR * (MAXN + 1)];
    float T[MAXR];
    uint64_t seed[MAXR], off[MAXR];
    int32_t top_k[MAXR];
    float top_p[MAXR], min_p[MAXR];
    fs_draft_tree tree;
    fs_sampling p;
} tflat;

static void flatten(const tprob *pb, int skip, tflat *f)
{
    memset(f, 0, sizeof *f);
    int64_t row = 0, node = 0, r = 0;
    for (int i = 0; i < pb->R; ++i) {
        if (i == skip)
            continue;
        const treq *q = &pb->q[i];
        f->offsets[r] = (int32_t)node;
        memcpy(f->tok + node, q->tok, sizeof(int32_t) * (size_t)q->n);
        memcpy(f->par + node, q->par, sizeof(int32_t) * (size_t)q->n);
        memcpy(f->logits + row * V, q->rows, sizeof(float) * (size_t)((q->n + 1) * V));
        memcpy(f->allowed + row, q->allowed, sizeof(uint32_t) * (size_t)(q->n + 1));
        f->T[r] = q->T;
        f->seed[r] = q->seed;
        f->off[r] = q->off;
        f->top_k[r] = q->top_k;
        f->top_p[r] = q->top_p;
        f->min_p[r] = q->min_p;
        node += q->n;
        row += q->n + 1;
        ++r;
    }
    f->offsets[r] = (int32_t)node;
    f->R = r;
    f->nodes = node;
    fs_draft_tree t = {r, node, pb->max_depth, pb->max_children, f->tok, f->par, f->offsets};
    f->tree = t;
    fs_sampling p = {f->T, f->seed, f->off, NULL, pb->use_mask ? f->allowed : NULL};
    if (pb->use_filters) {
        p.top_k = f->top_k;
        p.top_p = f->top_p;
        p.min_p = f->min_p;
    }
    f->p = p;
}

/* Five requests: a full little tree, none, a chain, a bush, a repeat. */
static void tprob_init(tprob *pb, uint64_t seed)
{
    static const int ns[5] = {6, 0, 3, 3, 4};
    static const int32_t pars[5][MAXN] = {
        {-1, -1, 0, 0, 1, 4}, {0}, {-1, 0, 1}, {-1, -1, -1}, {-1, -1, 1, 1}};
    static const int32_t toks[5][MAXN] = {
        {3, 9, 4, 5, 11, 2}, {0}, {7, 7, 7}, {1, 2, 3}, {6, 6, 8, 6}};
    fst_rng g;
    fst_rng_seed(&g, seed);
    memset(pb, 0, sizeof *pb);
    pb->R = 5;
    pb->max_depth = MAXD;
    pb->max_children = MAXC;
    for (int i = 0; i < 5; ++i) {
        treq *q = &pb->q[i];
        q->n = ns[i];
        memcpy(q->par, pars[i], sizeof q->par);
        memcpy(q->tok, toks[i], sizeof q->tok);
        for (int j = 0; j <= q->n; ++j) {
            for (int v = 0; v < V; ++v)
                q->rows[j][v] = (float)(fst_normal(&g) * 1.5);
            q->allowed[j] = (1u << V) - 1u;
        }
        q->T = i == 1 ? 0.0f : 1.0f;
        q->seed = fst_next(&g);
        q->off = (uint64_t)i;
        /* filters that cut, used when use_filters is set */
        q->top_k = 3 + i;
        q->top_p = 0.9f;
        q->min_p = 0.02f;
    }
}

typedef struct trun {
    int32_t tok[MAXR * S], path[MAXR * MAXD], nem[MAXR], st[MAXR], fb[MAXR];
    float lp[MAXR * S];
    fs_status s;
    char err[512];
} trun;

static void trun_call(const tprob *pb, int skip, trun *o)
{
    tflat f;
    flatten(pb, skip, &f);
    fs_context *ctx = fst_cpu_ctx();
    memset(o, 0xA5, sizeof *o);
    if (pb->use_filters)
        f.p.out_filter_fallback = o->fb;
    o->s = fstt_verify_tree_logits(ctx, f.logits, FS_DTYPE_F32, V, &f.tree, &f.p, o->tok,
                                   o->path, o->nem, o->lp, o->st);
    snprintf(o->err, sizeof o->err, "%s", fs_context_last_error(ctx));
    fs_context_destroy(ctx);
}

/* Request k is bad with status `expect`: sentinels for it, the others as
 * without it. */
static void check_bad_request(const tprob *pb, int k, int32_t expect, const char *what)
{
    trun bad, good;
    trun_call(pb, -1, &bad);
    const int64_t P = pb->max_depth, St = pb->max_depth + 1;
    if (bad.s != FS_ERR_INVALID_ROWS)
        fail_msg("%s (request %d): %s, expected FS_ERR_INVALID_ROWS", what, k,
                 fs_status_string(bad.s));
    if (strlen(bad.err) == 0)
        fail_msg("%s: no last-error message", what);
    if (bad.st[k] != expect)
        fail_msg("%s: request %d status %d (%s), expected %d (%s)", what, k, bad.st[k],
                 fs_row_status_string(bad.st[k]), expect, fs_row_status_string(expect));
    if (bad.nem[k] != 0)
        fail_msg("%s: bad request emitted %d tokens", what, bad.nem[k]);
    for (int64_t j = 0; j < St; ++j)
        if (bad.tok[k * St + j] != -1 || !isnan(bad.lp[k * St + j]))
            fail_msg("%s: sentinel [%lld] = (%d, %g)", what, (long long)j, bad.tok[k * St + j],
                     bad.lp[k * St + j]);
    for (int64_t j = 0; j < P; ++j)
        if (bad.path[k * P + j] != -1)
            fail_msg("%s: path sentinel [%lld] = %d", what, (long long)j, bad.path[k * P + j]);
    if (pb->use_filters && bad.fb[k] != 0)
        fail_msg("%s: bad request's out_filter_fallback %d", what, bad.fb[k]);
    trun_call(pb, k, &good);
    if (good.s != FS_OK)
        fail_msg("%s: the run without request %d failed: %s", what, k, good.err);
    for (int i = 0, j = 0; i < pb->R; ++i) {
        if (i == k)
            continue;
        if (bad.st[i] != FS_ROW_OK || bad.nem[i] != good.nem[j] ||
            memcmp(bad.tok + i * St, good.tok + j * St, sizeof(int32_t) * (size_t)St) ||
            memcmp(bad.path + i * P, good.path + j * P, sizeof(int32_t) * (size_t)P) ||
            memcmp(bad.lp + i * St, good.lp + j * St, sizeof(float) * (size_t)bad.nem[i]) ||
            (pb->use_filters && bad.fb[i] != good.fb[j]))
            fail_msg("%s: request %d changed by bad request %d", what, i, k);
        ++j;
    }
}

static void test_bad_trees(void **state)
{
    (void)state;
    tprob pb;
    char what[128];
    /* structure: request 0 is {-1, -1, 0, 0, 1, 4} */
    static const struct {
        int node;
        int32_t parent;
        const char *name;
    } bad_parent[] = {
        {3, 3, "a node its own parent (cycle)"},
        {2, 5, "a parent after its child"},
        {4, -2, "parent -2"},
        {5, 6, "parent = n"},
        {1, 100, "parent far out of range"},
        {0, INT32_MIN, "parent INT32_MIN"},
        {5, INT32_MAX, "parent INT32_MAX"},
        {0, 0, "the first node its own parent"},
    };
    for (size_t i = 0; i < sizeof bad_parent / sizeof bad_parent[0]; ++i) {
        tprob_init(&pb, 10 + i);
        pb.q[0].par[bad_parent[i].node] = bad_parent[i].parent;
        check_bad_request(&pb, 0, FS_ROW_BAD_TREE, bad_parent[i].name);
    }
    /* a 2-cycle: nodes 1 and 2 of the chain (request 2) each other's parent */
    tprob_init(&pb, 20);
    pb.q[2].par[1] = 2;
    pb.q[2].par[2] = 1;
    check_bad_request(&pb, 2, FS_ROW_BAD_TREE, "a 2-cycle");
    /* the bush's three children of the root, with max_children 2 */
    tprob_init(&pb, 21);
    pb.max_children = 2;
    check_bad_request(&pb, 3, FS_ROW_BAD_TREE, "3 children of the root, max_children 2");
    /* four children under an inner node (request 0's node 0), max_children 3 */
    tprob_init(&pb, 22);
    pb.q[0].par[4] = 0;
    pb.q[0].par[5] = 0;
    check_bad_request(&pb, 0, FS_ROW_BAD_TREE, "4 children under a node, max_children 3");
    /* request 0 four deep (0 -> 2 -> 4 -> 5), max_depth 3 (the chain of 3 fits) */
    tprob_init(&pb, 23);
    pb.max_depth = 3;
    pb.q[0].par[4] = 2;
    check_bad_request(&pb, 0, FS_ROW_BAD_TREE, "depth 4, max_depth 3");
    /* tokens and temperatures */
    const int32_t bad_tok[] = {-1, V, INT32_MAX, INT32_MIN};
    for (int i = 0; i < 4; ++i) {
        tprob_init(&pb, 30 + (uint64_t)i);
        pb.q[3].tok[2] = bad_tok[i];
        snprintf(what, sizeof what, "token %d", bad_tok[i]);
        check_bad_request(&pb, 3, FS_ROW_BAD_DRAFT, what);
    }
    /* a bad tree wins over a bad token */
    tprob_init(&pb, 35);
    pb.q[3].tok[0] = -5;
    pb.q[3].par[1] = 1;
    check_bad_request(&pb, 3, FS_ROW_BAD_TREE, "bad tree and bad token");
    const float bad_t[] = {-2.0f, NAN, INFINITY, 1e-39f};
    for (int k = 0; k < 5; ++k)
        for (int i = 0; i < 4; ++i) {
            tprob_init(&pb, 40 + (uint64_t)(k * 4 + i));
            pb.q[k].T = bad_t[i];
            snprintf(what, sizeof what, "T = %g", bad_t[i]);
            check_bad_request(&pb, k, FS_ROW_BAD_TEMPERATURE, what);
        }
    /* rows: a NaN or +inf on any row -- the deepest leaf's included, which a
       walk rarely reaches -- and an all-masked row fail the whole request */
    for (int j = 0; j <= 6; ++j) {
        tprob_init(&pb, 60 + (uint64_t)j);
        pb.q[0].rows[j][j + 3] = j % 2 ? INFINITY : NAN;
        check_bad_request(&pb, 0, FS_ROW_NONFINITE, "non-finite logit");
        tprob_init(&pb, 70 + (uint64_t)j);
        pb.use_mask = 1;
        pb.q[0].allowed[j] = 0;
        check_bad_request(&pb, 0, FS_ROW_ALL_MASKED, "all-masked row");
    }
}

/* Filters on every request (they cut); one request's bad top_k, top_p or
 * min_p fails it alone with FS_ROW_BAD_FILTER, whatever its temperature,
 * after the tree, token and temperature checks and before the scan's. */
static void test_bad_filters(void **state)
{
    (void)state;
    tprob pb;
    char what[128];
    static const struct {
        int field; /* 0 top_k, 1 top_p, 2 min_p */
        float value;
    } bad[] = {{0, -1.0f}, {1, 0.0f}, {1, 1.5f}, {1, NAN}, {2, 1.0f}, {2, -0.1f}, {2, NAN}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i)
        for (int k = 0; k < 5; ++k) { /* request 1 is greedy and has no nodes */
            tprob_init(&pb, 100 + i * 5 + (uint64_t)k);
            pb.use_filters = 1;
            treq *q = &pb.q[k];
            if (bad[i].field == 0)
                q->top_k = (int32_t)bad[i].value;
            else if (bad[i].field == 1)
                q->top_p = bad[i].value;
            else
                q->min_p = bad[i].value;
            snprintf(what, sizeof what, "%s = %g", bad[i].field == 0   ? "top_k"
                                                   : bad[i].field == 1 ? "top_p"
                                                                       : "min_p",
                     bad[i].value);
            check_bad_request(&pb, k, FS_ROW_BAD_FILTER, what);
        }
    /* the order of the checks */
    tprob_init(&pb, 140);
    pb.use_filters = 1;
    pb.q[0].top_k = -3;
    pb.q[0].par[3] = 3;
    check_bad_request(&pb, 0, FS_ROW_BAD_TREE, "bad tree and bad top_k");
    tprob_init(&pb, 141);
    pb.use_filters = 1;
    pb.q[3].top_p = 2.0f;
    pb.q[3].tok[1] = V;
    check_bad_request(&pb, 3, FS_ROW_BAD_DRAFT, "bad token and bad top_p");
    tprob_init(&pb, 142);
    pb.use_filters = 1;
    pb.q[2].min_p = 1.0f;
    pb.q[2].T = NAN;
    check_bad_request(&pb, 2, FS_ROW_BAD_TEMPERATURE, "bad temperature and bad min_p");
    tprob_init(&pb, 143);
    pb.use_filters = 1;
    pb.q[0].min_p = -1.0f;
    pb.q[0].rows[2][5] = NAN;
    check_bad_request(&pb, 0, FS_ROW_BAD_FILTER, "bad min_p and a non-finite logit");
    /* and the good filters alone leave every request OK, with the fallback
       counts written */
    trun o;
    tprob_init(&pb, 144);
    pb.use_filters = 1;
    trun_call(&pb, -1, &o);
    assert_int_equal(o.s, FS_OK);
    for (int k = 0; k < pb.R; ++k) {
        assert_int_equal(o.st[k], FS_ROW_OK);
        assert_true(o.fb[k] >= 0 && o.fb[k] <= pb.q[k].n + 1);
    }
}

/* Node offsets malformed as a whole: every request fails FS_ROW_BAD_OFFSETS. */
static void test_bad_offsets(void **state)
{
    (void)state;
    for (int which = 0; which < 4; ++which) {
        tprob pb;
        tprob_init(&pb, 80);
        tflat f;
        flatten(&pb, -1, &f);
        if (which == 0)
            f.offsets[0] = 1;
        else if (which == 1)
            f.tree.num_nodes -= 1;
        else if (which == 2)
            f.offsets[f.R] += 1;
        else
            f.offsets[2] = f.offsets[3] + 1; /* decreasing in the middle */
        fs_context *ctx = fst_cpu_ctx();
        trun o;
        memset(&o, 0xA5, sizeof o);
        o.s = fstt_verify_tree_logits(ctx, f.logits, FS_DTYPE_F32, V, &f.tree, &f.p, o.tok,
                                      o.path, o.nem, o.lp, o.st);
        assert_int_equal(o.s, FS_ERR_INVALID_ROWS);
        for (int64_t r = 0; r < f.R; ++r) {
            if (o.st[r] != FS_ROW_BAD_OFFSETS)
                fail_msg("malformed offsets %d: request %lld status %d", which, (long long)r,
                         o.st[r]);
            assert_int_equal(o.nem[r], 0);
            for (int j = 0; j < S; ++j)
                assert_int_equal(o.tok[r * S + j], -1);
            for (int j = 0; j < MAXD; ++j)
                assert_int_equal(o.path[r * MAXD + j], -1);
        }
        fs_context_destroy(ctx);
    }
}

/* ---- host-side validation ------------------------------------------------- */

typedef struct call {
    fs_context *ctx;
    int fused;
    const void *logits;
    fs_dtype dt;
    int64_t vocab;
    fs_lm_head head;
    const fs_lm_head *headp;
    const void *hidden;
    fs_draft_tree tree;
    const fs_draft_tree *treep;
    fs_sampling p;
    const fs_sampling *pp;
    void *ws;
    size_t ws_bytes;
    int32_t *tok, *path, *nem, *st;
    float *lp;
} call;

static fs_status do_call(const call *c)
{
    return c->fused ? fs_verify_tree(c->ctx, c->headp, c->hidden, c->treep, c->pp, c->ws,
                                     c->ws_bytes, c->tok, c->path, c->nem, c->lp, c->st)
                    : fs_verify_tree_logits(c->ctx, c->logits, c->dt, c->vocab, c->treep, c->pp,
                                            c->ws, c->ws_bytes, c->tok, c->path, c->nem, c->lp,
                                            c->st);
}

enum { POISON = 0x5A };

typedef struct bufs {
    int32_t tok[MAXR * S], path[MAXR * MAXD], nem[MAXR], st[MAXR];
    float lp[MAXR * S];
} bufs;

static void expect_refused(call c, bufs *b, fs_status want, const char *what)
{
    memset(b, POISON, sizeof *b);
    fs_status s = do_call(&c);
    if (s != want)
        fail_msg("%s: %s, expected %s", what, fs_status_string(s), fs_status_string(want));
    if (c.ctx && strlen(fs_context_last_error(c.ctx)) == 0)
        fail_msg("%s: no message", what);
    const unsigned char *p = (const unsigned char *)b;
    for (size_t i = 0; i < sizeof *b; ++i)
        if (p[i] != POISON)
            fail_msg("%s: an output was written (byte %zu)", what, i);
}

static void test_validation(void **state)
{
    (void)state;
    tprob pb;
    tprob_init(&pb, 90);
    tflat f;
    flatten(&pb, -1, &f);
    fs_context *ctx = fst_cpu_ctx();
    float *w = calloc(V * 4, sizeof(float)), *h = calloc((size_t)(f.nodes + f.R) * 4, sizeof(float));
    size_t need = 0;
    assert_int_equal(fs_verify_tree_workspace_size(ctx, f.R, f.nodes, V, &need), FS_OK);
    void *ws = malloc(need);
    bufs b;
    for (int fused = 0; fused < 2; ++fused) {
        call c;
        memset(&c, 0, sizeof c);
        c.ctx = ctx;
        c.fused = fused;
        c.logits = f.logits;
        c.dt = FS_DTYPE_F32;
        c.vocab = V;
        fs_lm_head hd = {w, V, 4, FS_DTYPE_F32};
        c.head = hd;
        c.headp = &c.head;
        c.hidden = h;
        c.tree = f.tree;
        c.treep = &c.tree;
        c.p = f.p;
        c.pp = &c.p;
        c.ws = ws;
        c.ws_bytes = need;
        c.tok = b.tok;
        c.path = b.path;
        c.nem = b.nem;
        c.st = b.st;
        c.lp = b.lp;
        /* the good call works */
        memset(&b, POISON, sizeof b);
        assert_int_equal(do_call(&c), FS_OK);
        call x;
#define REFUSE(field, value, want)                               \
    do {                                                         \
        x = c;                                                   \
        x.field = value;                                         \
        if (x.treep == &c.tree)                                  \
            x.treep = &x.tree;                                   \
        if (x.pp == &c.p)                                        \
            x.pp = &x.p;                                         \
        if (x.headp == &c.head)                                  \
            x.headp = &x.head;                                   \
        expect_refused(x, &b, want, #field " = " #value);        \
    } while (0)
        REFUSE(ctx, NULL, FS_ERR_NULL_POINTER);
        REFUSE(treep, NULL, FS_ERR_NULL_POINTER);
        REFUSE(pp, NULL, FS_ERR_NULL_POINTER);
        REFUSE(p.temperature, NULL, FS_ERR_NULL_POINTER);
        REFUSE(p.seed, NULL, FS_ERR_NULL_POINTER);
        REFUSE(tree.node_offsets, NULL, FS_ERR_NULL_POINTER);
        REFUSE(tree.tokens, NULL, FS_ERR_NULL_POINTER);
        REFUSE(tree.parents, NULL, FS_ERR_NULL_POINTER);
        REFUSE(tree.num_requests, 0, FS_ERR_INVALID_SIZE);
        REFUSE(tree.num_requests, -1, FS_ERR_INVALID_SIZE);
        REFUSE(tree.num_nodes, -1, FS_ERR_INVALID_SIZE);
        REFUSE(tree.num_nodes, (int64_t)INT32_MAX, FS_ERR_INVALID_SIZE);
        REFUSE(tree.max_depth, -1, FS_ERR_INVALID_SIZE);
        REFUSE(tree.max_depth, (int64_t)1 << 24, FS_ERR_INVALID_SIZE);
        REFUSE(tree.max_children, -1, FS_ERR_INVALID_SIZE);
        REFUSE(tree.max_children, FS_TREE_MAX_CHILDREN + 1, FS_ERR_INVALID_SIZE);
        REFUSE(tok, NULL, FS_ERR_NULL_POINTER);
        REFUSE(nem, NULL, FS_ERR_NULL_POINTER);
        REFUSE(st, NULL, FS_ERR_NULL_POINTER);
        REFUSE(ws, NULL, FS_ERR_NULL_POINTER);
        REFUSE(ws_bytes, need - 1, FS_ERR_WORKSPACE_TOO_SMALL);
        if (fused) {
            REFUSE(headp, NULL, FS_ERR_NULL_POINTER);
            REFUSE(head.weight, NULL, FS_ERR_NULL_POINTER);
            REFUSE(hidden, NULL, FS_ERR_NULL_POINTER);
            REFUSE(head.dtype, (fs_dtype)9, FS_ERR_INVALID_ARGUMENT);
            REFUSE(head.hidden_dim, 0, FS_ERR_INVALID_SIZE);
            REFUSE(head.vocab_size, 0, FS_ERR_INVALID_SIZE);
        } else {
            REFUSE(logits, NULL, FS_ERR_NULL_POINTER);
            REFUSE(dt, (fs_dtype)-1, FS_ERR_INVALID_ARGUMENT);
            REFUSE(vocab, 0, FS_ERR_INVALID_SIZE);
            REFUSE(vocab, (int64_t)INT32_MAX + 1, FS_ERR_INVALID_SIZE);
        }
#undef REFUSE
    }
    free(ws);
    free(w);
    free(h);
    fs_context_destroy(ctx);
}

static void test_workspace_query(void **state)
{
    (void)state;
    fs_context *ctx = fst_cpu_ctx();
    size_t n = 12345, a = 0, b = 0;
    assert_int_equal(fs_verify_tree_workspace_size(NULL, 2, 3, 10, &n), FS_ERR_NULL_POINTER);
    assert_int_equal(fs_verify_tree_workspace_size(ctx, 2, 3, 10, NULL), FS_ERR_NULL_POINTER);
    const int64_t bad[][3] = {{0, 3, 10}, {-1, 3, 10}, {2, -1, 10}, {2, 3, 0},
                              {2, 3, (int64_t)INT32_MAX + 1}, {2, INT32_MAX, 10}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
        n = 12345;
        assert_int_equal(fs_verify_tree_workspace_size(ctx, bad[i][0], bad[i][1], bad[i][2], &n),
                         FS_ERR_INVALID_SIZE);
        assert_int_equal(n, 12345);
        assert_true(strlen(fs_context_last_error(ctx)) > 0);
    }
    /* grows with the nodes; zero nodes is allowed */
    assert_int_equal(fs_verify_tree_workspace_size(ctx, 3, 0, 100, &a), FS_OK);
    assert_int_equal(fs_verify_tree_workspace_size(ctx, 3, 30, 100, &b), FS_OK);
    assert_true(a > 0 && b > a);
    fs_context_destroy(ctx);
}

/* out_path_nodes, out_logprobs, offset, bias and mask are optional; the
 * tokens do not change. */
static void test_optional_pointers(void **state)
{
    (void)state;
    tprob pb;
    tprob_init(&pb, 92);
    tflat f;
    flatten(&pb, -1, &f);
    fs_context *ctx = fst_cpu_ctx();
    trun full, bare;
    memset(&full, 0, sizeof full);
    memset(&bare, 0, sizeof bare);
    assert_int_equal(fstt_verify_tree_logits(ctx, f.logits, FS_DTYPE_F32, V, &f.tree, &f.p,
                                             full.tok, full.path, full.nem, full.lp, full.st),
                     FS_OK);
    assert_int_equal(fstt_verify_tree_logits(ctx, f.logits, FS_DTYPE_F32, V, &f.tree, &f.p,
                                             bare.tok, NULL, bare.nem, NULL, bare.st),
                     FS_OK);
    assert_memory_equal(full.tok, bare.tok, sizeof full.tok);
    assert_memory_equal(full.nem, bare.nem, sizeof full.nem);
    /* offset NULL = all 0; an empty tree needs no token or parent arrays */
    fs_sampling p0 = f.p;
    p0.offset = NULL;
    assert_int_equal(fstt_verify_tree_logits(ctx, f.logits, FS_DTYPE_F32, V, &f.tree, &p0,
                                             bare.tok, NULL, bare.nem, NULL, bare.st),
                     FS_OK);
    int32_t zero_offsets[3] = {0, 0, 0};
    fs_draft_tree empty = {2, 0, 0, 0, NULL, NULL, zero_offsets};
    int32_t tk[2], nem[2], st[2];
    assert_int_equal(fstt_verify_tree_logits(ctx, f.logits, FS_DTYPE_F32, V, &empty, &f.p, tk,
                                             NULL, nem, NULL, st),
                     FS_OK);
    assert_int_equal(nem[0], 1);
    assert_int_equal(nem[1], 1);
    fs_context_destroy(ctx);
}

static void test_row_status_string(void **state)
{
    (void)state;
    const char *m = fs_row_status_string(FS_ROW_BAD_TREE);
    assert_non_null(strstr(m, "tree"));
    for (int s = FS_ROW_OK; s < FS_ROW_BAD_TREE; ++s)
        assert_string_not_equal(fs_row_status_string(s), m);
    assert_string_not_equal(fs_row_status_string(FS_ROW_BAD_TREE + 1), m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_bad_trees, fst_reset_hooks),
        cmocka_unit_test_setup(test_bad_filters, fst_reset_hooks),
        cmocka_unit_test_setup(test_bad_offsets, fst_reset_hooks),
        cmocka_unit_test_setup(test_validation, fst_reset_hooks),
        cmocka_unit_test_setup(test_workspace_query, fst_reset_hooks),
        cmocka_unit_test_setup(test_optional_pointers, fst_reset_hooks),
        cmocka_unit_test_setup(test_row_status_string, fst_reset_hooks),
    };
    return cmocka_run_group_tests_name("tree_api", tests, NULL, NULL);
}
