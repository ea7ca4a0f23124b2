/* The shared tree-verify pieces, unit by unit (src/tree_record.h,
 * src/tree_finalize.h):
 *  - with one child, a tree record is bit for bit the verify record whose
 *    excluded token is that child (this is what makes a chain tree equal
 *    fs_verify);
 *  - with several children, the candidate never is one of them, the
 *    children's scores are kept (repeats, masked ones), and merging records
 *    in any order picks the same tokens;
 *  - the acceptance uniforms: child 0 is the chain's, all 16 are distinct
 *    words of the documented draws;
 *  - the walk's guards: a repeated token or a zero-probability child is never
 *    accepted, and with no token outside the children the walk still ends on
 *    a real token;
 *  - the request's descriptors: depths, child lists, bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fs_test.h"
#include "tree_finalize.h"

enum { NB = 12, V = NB * FS_NOISE_BLOCK - 5 };

static void random_scores(fst_rng *g, float *s, int64_t n)
{
    for (int64_t v = 0; v < n; ++v) {
        double u = fst_unif(g);
        s[v] = u < 0.1 ? -INFINITY : (float)(fst_normal(g) * 2.0);
    }
}

static fs_tree_row tree_row(float T, uint64_t seed, uint64_t off, uint32_t depth, int m,
                            const int32_t *children)
{
    fs_tree_row d;
    memset(&d, 0, sizeof d);
    d.base = fs_row_desc_make(T, seed, off, depth, -1, -1, 0);
    d.num_children = m;
    for (int k = 0; k < m; ++k) {
        d.children[k] = children[k];
        d.excluded_mask |= 1u << k;
    }
    return d;
}

static void push_all(fs_tree_record *r, const fs_tree_row *d, const float *s)
{
    for (int64_t v = 0; v < V; v += FS_NOISE_BLOCK)
        fs_tree_record_push_block(r, d, (int32_t)v,
                                  (int)(V - v < FS_NOISE_BLOCK ? V - v : FS_NOISE_BLOCK), s + v);
}

static void test_one_child_is_verify_record(void **state)
{
    (void)state;
    fst_rng g;
    fst_rng_seed(&g, 1);
    float s[V];
    for (int trial = 0; trial < 400; ++trial) {
        random_scores(&g, s, V);
        if (trial % 7 == 0)
            s[fst_randint(&g, V)] = trial % 2 ? NAN : INFINITY;
        int32_t x = (int32_t)fst_randint(&g, V + 3) - 2; /* sometimes none (-2, -1) */
        float T = trial % 5 == 0 ? 0.0f : 0.8f;
        uint64_t seed = fst_next(&g), off = fst_next(&g);
        uint32_t pos = (uint32_t)fst_randint(&g, 9);
        fs_tree_row d = tree_row(T, seed, off, pos, x >= 0, &x);
        fs_row_desc dv = fs_row_desc_make(T, seed, off, pos, x >= 0 ? x : -1, x >= 0 ? x : -1, 0);
        fs_tree_record rt;
        fs_record rv;
        fs_tree_record_init(&rt);
        fs_record_init(&rv);
        push_all(&rt, &d, s);
        for (int64_t v = 0; v < V; v += FS_NOISE_BLOCK)
            fs_record_push_block(&rv, &dv, (int32_t)v,
                                 (int)(V - v < FS_NOISE_BLOCK ? V - v : FS_NOISE_BLOCK), s + v);
        /* everything but sel_s, which the tree keeps as child_s[0]; of a
           record flagged non-finite only the flag is read (the row's
           status), and a block push may stop at the flag */
        float sel = rv.sel_s;
        rv.sel_s = rt.base.sel_s;
        if ((rv.flags | rt.base.flags) & FS_REC_NONFINITE) {
            if (rv.flags != rt.base.flags)
                fail_msg("trial %d: flags %u, verify's %u", trial, rt.base.flags, rv.flags);
        } else if (memcmp(&rv, &rt.base, sizeof rv) != 0) {
            fail_msg("trial %d: the tree record differs from the verify record", trial);
        }
        if (x >= 0 && !(rv.flags & FS_REC_NONFINITE) && memcmp(&sel, &rt.child_s[0], sizeof sel))
            fail_msg("trial %d: child score %g, verify's selected score %g", trial,
                     rt.child_s[0], sel);
    }
}

static void test_children_excluded_and_kept(void **state)
{
    (void)state;
    fst_rng g;
    fst_rng_seed(&g, 2);
    float s[V];
    random_scores(&g, s, V);
    /* five children in two blocks, one repeated, one masked, one in the tail block */
    int32_t kids[6] = {17, 20, 17, 31, 5, V - 1};
    s[5] = -INFINITY;
    for (int k = 0; k < 6; ++k)
        if (k != 4)
            s[kids[k]] = 3.0f; /* likely: a candidate that ignored the set would pick them */
    fs_tree_row d = tree_row(1.0f, 0, 0, 0, 6, kids);
    double all = 0.0;
    for (int64_t v = 0; v < V; ++v)
        if (s[v] > -INFINITY)
            all += exp((double)s[v]);
    for (uint64_t seed = 0; seed < 2000; ++seed) {
        d.base.seed = seed;
        fs_tree_record r;
        fs_tree_record_init(&r);
        push_all(&r, &d, s);
        for (int k = 0; k < 6; ++k)
            if (r.base.best_id == kids[k])
                fail_msg("seed %llu: the candidate is child %d's token %d",
                         (unsigned long long)seed, k, kids[k]);
        assert_true(r.base.best_id >= 0);
        for (int k = 0; k < 6; ++k)
            assert_true(k == 4 ? r.child_s[k] == -INFINITY : r.child_s[k] == 3.0f);
        /* the children still count in the log-sum-exp */
        assert_true(fabs(fs_record_lse(&r.base) - log(all)) < 1e-5);
    }
}

/* Records of any partition into blocks, merged in any order, pick the same. */
static void test_merge_order(void **state)
{
    (void)state;
    fst_rng g;
    fst_rng_seed(&g, 3);
    float s[V];
    int32_t kids[4] = {3, 40, 41, 150};
    for (int trial = 0; trial < 200; ++trial) {
        random_scores(&g, s, V);
        fs_tree_row d = tree_row(1.0f, fst_next(&g), trial, 2, 4, kids);
        fs_tree_record whole, parts[NB], merged;
        fs_tree_record_init(&whole);
        push_all(&whole, &d, s);
        for (int b = 0; b < NB; ++b) {
            fs_tree_record_init(&parts[b]);
            int64_t v = (int64_t)b * FS_NOISE_BLOCK;
            fs_tree_record_push_block(&parts[b], &d, (int32_t)v,
                                      (int)(V - v < FS_NOISE_BLOCK ? V - v : FS_NOISE_BLOCK),
                                      s + v);
        }
        int64_t perm[NB];
        fst_shuffle(&g, perm, NB);
        fs_tree_record_init(&merged);
        for (int b = 0; b < NB; ++b)
            fs_tree_record_merge(&merged, &parts[perm[b]]);
        assert_int_equal(merged.base.best_id, whole.base.best_id);
        assert_int_equal(merged.base.max_id, whole.base.max_id);
        assert_memory_equal(merged.child_s, whole.child_s, sizeof whole.child_s);
        assert_true(fabsf(fs_record_lse(&merged.base) - fs_record_lse(&whole.base)) < 1e-5f);
    }
}

static void test_accept_uniforms(void **state)
{
    (void)state;
    for (uint64_t seed = 0; seed < 50; ++seed)
        for (uint32_t pos = 0; pos < 6; ++pos) {
            float u[FS_TREE_MAX_CHILDREN];
            for (uint32_t k = 0; k < FS_TREE_MAX_CHILDREN; ++k) {
                u[k] = fs_tree_accept_uniform(seed * 7919, seed, pos, k);
                fs_u32x4 w = fs_philox_draw(seed * 7919, seed, pos, FS_PURPOSE_ACCEPT, k / 4);
                assert_true(u[k] == fs_uniform(w.v[k % 4]));
                assert_true(u[k] > 0.0f && u[k] < 1.0f);
                for (uint32_t j = 0; j < k; ++j)
                    assert_true(u[j] != u[k]);
            }
            assert_true(u[0] == fs_accept_uniform(seed * 7919, seed, pos));
        }
}

/* A record by hand: log-sum-exp lse, argmax `top`, candidate cand (-1:
 * none), children scores. */
static fs_tree_record made_record(float lse, int32_t top, int32_t cand, int m, const float *cs)
{
    fs_tree_record r;
    fs_tree_record_init(&r);
    r.base.max_s = lse;
    r.base.max_id = top;
    r.base.sum_exp = 1.0f;
    r.base.best_id = cand;
    r.base.best_key = cand >= 0 ? 0.0f : -INFINITY;
    r.base.best_s = cand >= 0 ? lse - 5.0f : -INFINITY;
    for (int k = 0; k < m; ++k)
        r.child_s[k] = cs[k];
    return r;
}

static void test_accept_guards(void **state)
{
    (void)state;
    /* repeated token: children {7, 7}; the first has p = 0.3.  The second copy
       is never accepted, whatever the uniforms */
    int32_t rep[2] = {7, 7};
    float rs[2] = {logf(0.3f), logf(0.3f)};
    fs_tree_record r = made_record(0.0f, 2, 9, 2, rs);
    long first = 0;
    for (uint64_t seed = 0; seed < 4000; ++seed) {
        fs_tree_row d = tree_row(1.0f, seed, 0, 1, 2, rep);
        int k = fs_tree_accept(&r, &d);
        assert_true(k == 0 || k == -1);
        first += k == 0;
    }
    assert_true(first > 1000 && first < 1400); /* ~0.3 of 4000 */
    /* a zero-probability (masked) child is never accepted */
    int32_t z[3] = {1, 2, 3};
    float zs[3] = {logf(0.3f), -INFINITY, logf(0.3f)};
    r = made_record(0.0f, 1, 9, 3, zs);
    for (uint64_t seed = 0; seed < 4000; ++seed) {
        fs_tree_row d = tree_row(1.0f, seed, 0, 0, 3, z);
        assert_true(fs_tree_accept(&r, &d) != 1);
    }
    /* no candidate: the children hold all the mass.  Stand-in for rounding:
       a record whose children's p sum to 0.9 though nothing else is
       eligible -- the walk must still accept a child, the last one of
       positive p when every test fails (never the masked one after it), and
       never fall through to the missing candidate */
    int32_t c4[4] = {4, 5, 6, 7};
    float cs4[4] = {logf(0.4f), logf(0.3f), logf(0.2f), -INFINITY};
    r = made_record(0.0f, 4, -1, 4, cs4);
    long last = 0;
    for (uint64_t seed = 0; seed < 4000; ++seed) {
        fs_tree_row d = tree_row(1.0f, seed, 0, 3, 4, c4);
        int k = fs_tree_accept(&r, &d);
        assert_true(k >= 0 && k <= 2);
        last += k == 2;
    }
    assert_true(last > 4000 * 0.25); /* 0.2 by its test + 0.1 when all fail */
    /* greedy: the first child carrying the argmax, or none */
    int32_t gk[4] = {8, 3, 8, 3};
    r = made_record(0.0f, 3, 9, 4, cs4);
    fs_tree_row d = tree_row(0.0f, 1, 0, 0, 4, gk);
    assert_int_equal(fs_tree_accept(&r, &d), 1);
    r.base.max_id = 11;
    assert_int_equal(fs_tree_accept(&r, &d), -1);
}

static void test_request_rows(void **state)
{
    (void)state;
    /* root -> {0, 1}; 0 -> {2, 3, 4}; 3 -> {5}; 5 -> {6} */
    const int32_t par[7] = {-1, -1, 0, 0, 0, 3, 5}, tok[7] = {10, 11, 12, 13, 12, 15, 16};
    fs_tree_row rows[8];
    assert_int_equal(fs_tree_request_rows(tok, par, 7, 4, 3, 100, 1.0f, 5, 6, 2, rows),
                     FS_ROW_OK);
    const uint32_t depth[8] = {0, 1, 1, 2, 2, 2, 3, 4};
    const int32_t nkids[8] = {2, 3, 0, 0, 1, 0, 1, 0};
    for (int j = 0; j < 8; ++j) {
        assert_int_equal(rows[j].base.position, depth[j]);
        assert_int_equal(rows[j].num_children, nkids[j]);
        assert_int_equal(rows[j].excluded_mask, (1u << nkids[j]) - 1u);
        assert_true(rows[j].base.flags & FS_ROWF_VALID);
        assert_int_equal(rows[j].base.request, 2);
    }
    assert_int_equal(rows[1].children[0], 12);
    assert_int_equal(rows[1].children[1], 13);
    assert_int_equal(rows[1].children[2], 12);
    /* the children's node indices, in try order: the walk steps by them */
    assert_int_equal(rows[0].child_nodes[0], 0);
    assert_int_equal(rows[0].child_nodes[1], 1);
    assert_int_equal(rows[1].child_nodes[0], 2);
    assert_int_equal(rows[1].child_nodes[1], 3);
    assert_int_equal(rows[1].child_nodes[2], 4);
    assert_int_equal(rows[4].child_nodes[0], 5);
    assert_int_equal(rows[6].child_nodes[0], 6);
    /* exactly at the bounds is fine; one past is not, and the rows are skipped */
    assert_int_equal(fs_tree_request_rows(tok, par, 7, 4, 2, 100, 1.0f, 5, 6, 2, rows),
                     FS_ROW_BAD_TREE);
    for (int j = 0; j < 8; ++j)
        assert_false(rows[j].base.flags & FS_ROWF_VALID);
    assert_int_equal(fs_tree_request_rows(tok, par, 7, 3, 3, 100, 1.0f, 5, 6, 2, rows),
                     FS_ROW_BAD_TREE);
    assert_int_equal(fs_tree_request_rows(tok, par, 7, 4, 3, 16, 1.0f, 5, 6, 2, rows),
                     FS_ROW_BAD_DRAFT);
    assert_int_equal(fs_tree_request_rows(tok, par, 7, 4, 3, 100, -1.0f, 5, 6, 2, rows),
                     FS_ROW_BAD_TEMPERATURE);
    assert_int_equal(fs_tree_request_rows(tok, par, 0, 0, 0, 100, 0.0f, 5, 6, 2, rows),
                     FS_ROW_OK);
    assert_true(rows[0].base.flags & FS_ROWF_GREEDY);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_child_is_verify_record),
        cmocka_unit_test(test_children_excluded_and_kept),
        cmocka_unit_test(test_merge_order),
        cmocka_unit_test(test_accept_uniforms),
        cmocka_unit_test(test_accept_guards),
        cmocka_unit_test(test_request_rows),
    };
    return cmocka_run_group_tests_name("tree_record", tests, NULL, NULL);
}
