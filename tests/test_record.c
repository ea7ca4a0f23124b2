/* The scan's summary record: push and merge.  Whatever the partition of the
 * vocabulary into tiles (of whole noise blocks) and whatever the merge order
 * or tree, the merged record picks the same tokens as one sequential pass;
 * the sampling candidate is the two-level block draw of record.h; ties go to
 * the lowest id; -inf scores are probability zero; NaN/+inf raise the flag. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "finalize.h"
#include "fs_test.h"
#include "record.h"

enum { MAXV = 600 };

typedef struct row_data {
    int64_t V;
    float s[MAXV];
    fs_row_desc d;
} row_data;

/* Tokens [a, b) (a a multiple of FS_NOISE_BLOCK, b one or V), block by block. */
static void push_range(fs_record *rec, const row_data *x, int64_t a, int64_t b)
{
    for (int64_t v = a; v < b; v += FS_NOISE_BLOCK) {
        int n = (int)(b - v < FS_NOISE_BLOCK ? b - v : FS_NOISE_BLOCK);
        fs_record_push_block(rec, &x->d, (int32_t)v, n, &x->s[v]);
    }
}

/* The block draw written out from its definition (record.h), materialised:
 * every block's key, the best one, the inverse CDF inside it. */
static int32_t block_draw_ref(const row_data *x)
{
    float best = -INFINITY;
    int64_t bb = -1;
    for (int64_t b0 = 0; b0 < x->V; b0 += FS_NOISE_BLOCK) {
        int64_t b1 = b0 + FS_NOISE_BLOCK < x->V ? b0 + FS_NOISE_BLOCK : x->V;
        float m = -INFINITY, S = 0.0f;
        for (int64_t v = b0; v < b1; ++v)
            if (v != x->d.excluded && x->s[v] > m)
                m = x->s[v];
        if (m == -INFINITY)
            continue;
        for (int64_t v = b0; v < b1; ++v)
            if (v != x->d.excluded && x->s[v] > -INFINITY)
                S += expf(x->s[v] - m);
        uint32_t wg, wu;
        fs_block_words(x->d.seed, x->d.offset, x->d.position, (uint32_t)(b0 / FS_NOISE_BLOCK), &wg,
                       &wu);
        float key = m + logf(S) + fs_gumbel(wg);
        if (bb < 0 || key > best) {
            best = key;
            bb = b0;
        }
    }
    if (bb < 0)
        return -1;
    int64_t b1 = bb + FS_NOISE_BLOCK < x->V ? bb + FS_NOISE_BLOCK : x->V;
    float m = -INFINITY, S = 0.0f, c = 0.0f;
    for (int64_t v = bb; v < b1; ++v)
        if (v != x->d.excluded && x->s[v] > m)
            m = x->s[v];
    for (int64_t v = bb; v < b1; ++v)
        if (v != x->d.excluded && x->s[v] > -INFINITY)
            S += expf(x->s[v] - m);
    uint32_t wg, wu;
    fs_block_words(x->d.seed, x->d.offset, x->d.position, (uint32_t)(bb / FS_NOISE_BLOCK), &wg, &wu);
    float target = fs_uniform(wu) * S;
    int32_t last = -1;
    for (int64_t v = bb; v < b1; ++v) {
        if (v == x->d.excluded || x->s[v] == -INFINITY)
            continue;
        float e = expf(x->s[v] - m);
        if (e > 0.0f) {
            c += e;
            last = (int32_t)v;
            if (target < c)
                return (int32_t)v;
        }
    }
    return last;
}

static void sequential(fs_record *rec, const row_data *x)
{
    fs_record_init(rec);
    push_range(rec, x, 0, x->V);
}

/* Everything that selects a token must be bit-identical; sum_exp only close. */
static void assert_same_choice(const fs_record *a, const fs_record *b, const char *what)
{
    if (a->max_id != b->max_id || a->best_id != b->best_id || a->flags != b->flags ||
        memcmp(&a->max_s, &b->max_s, 4) || memcmp(&a->best_key, &b->best_key, 4) ||
        memcmp(&a->best_s, &b->best_s, 4) || memcmp(&a->sel_s, &b->sel_s, 4))
        fail_msg("%s: max %d/%g best %d/%g/%g sel %g flags %u  vs  max %d/%g best %d/%g/%g "
                 "sel %g flags %u",
                 what, a->max_id, a->max_s, a->best_id, a->best_key, a->best_s, a->sel_s,
                 a->flags, b->max_id, b->max_s, b->best_id, b->best_key, b->best_s, b->sel_s,
                 b->flags);
    if (a->max_id >= 0 && fabsf(a->sum_exp - b->sum_exp) > 1e-5f * b->sum_exp)
        fail_msg("%s: sum_exp %.9g vs %.9g", what, a->sum_exp, b->sum_exp);
}

static void make_row(fst_rng *r, row_data *x, int ties, int greedy)
{
    x->V = 1 + fst_randint(r, MAXV);
    for (int64_t v = 0; v < x->V; ++v) {
        double u = fst_unif(r);
        x->s[v] = ties ? (float)fst_randint(r, 4) : (float)(fst_normal(r) * 3.0);
        if (u < 0.05)
            x->s[v] = -INFINITY; /* probability zero */
    }
    int32_t ex = fst_unif(r) < 0.7 ? (int32_t)fst_randint(r, x->V) : -1;
    /* verify selects its excluded draft; the record also keeps a selected
       token of its own, which the block push finds by its place */
    const double w = fst_unif(r);
    int32_t sel = w < 0.6 ? ex : w < 0.9 ? (int32_t)fst_randint(r, x->V) : -1;
    x->d = fs_row_desc_make(greedy ? 0.0f : 1.0f, 5, 6, 0, ex, sel, 0);
}

/* Build tile records over a random partition into whole noise blocks. */
static int64_t tile_records(fst_rng *r, const row_data *x, fs_record *tiles)
{
    int64_t n = 0, a = 0;
    while (a < x->V) {
        int64_t len = FS_NOISE_BLOCK * (1 + fst_randint(r, fst_unif(r) < 0.5 ? 2 : 8));
        int64_t b = a + len < x->V ? a + len : x->V;
        fs_record_init(&tiles[n]);
        push_range(&tiles[n], x, a, b);
        ++n;
        a = b;
    }
    /* empty tiles (e.g. a fully masked tile) anywhere must be neutral */
    for (int k = 0; k < 2; ++k)
        fs_record_init(&tiles[n++]);
    return n;
}

static void merge_orders(int ties, int greedy, uint64_t seed)
{
    static fs_record tiles[MAXV + 4], work[MAXV + 4];
    static row_data x;
    int64_t perm[MAXV + 4];
    fst_rng r;
    fst_rng_seed(&r, seed);
    for (int it = 0; it < 300; ++it) {
        make_row(&r, &x, ties, greedy);
        fs_record ref;
        sequential(&ref, &x);
        int64_t n = tile_records(&r, &x, tiles);
        /* 1: left fold in a random order */
        fst_shuffle(&r, perm, n);
        fs_record acc;
        fs_record_init(&acc);
        for (int64_t i = 0; i < n; ++i)
            fs_record_merge(&acc, &tiles[perm[i]]);
        assert_same_choice(&acc, &ref, "random-order fold");
        /* 2: reverse fold */
        fs_record_init(&acc);
        for (int64_t i = n - 1; i >= 0; --i)
            fs_record_merge(&acc, &tiles[i]);
        assert_same_choice(&acc, &ref, "reverse fold");
        /* 3: random binary tree (pairwise reduction of shuffled records, as a
           GPU would reduce across tiles or ranks), merging into either side */
        fst_shuffle(&r, perm, n);
        for (int64_t i = 0; i < n; ++i)
            work[i] = tiles[perm[i]];
        int64_t m = n;
        while (m > 1) {
            int64_t k = 0;
            for (int64_t i = 0; i + 1 < m; i += 2) {
                if (fst_unif(&r) < 0.5) {
                    fs_record_merge(&work[i], &work[i + 1]);
                    work[k++] = work[i];
                } else {
                    fs_record_merge(&work[i + 1], &work[i]);
                    work[k++] = work[i + 1];
                }
            }
            if (m & 1)
                work[k++] = work[m - 1];
            m = k;
        }
        assert_same_choice(&work[0], &ref, "tree");
        /* the sequential record itself is right: max and lse in double */
        double best = -INFINITY, z = 0.0;
        int32_t bid = -1;
        for (int64_t v = 0; v < x.V; ++v)
            if (x.s[v] > best) {
                best = x.s[v];
                bid = (int32_t)v;
            }
        /* greedy rows: the argmax; others: an id of its noise block */
        if (greedy)
            assert_int_equal(ref.max_id, bid);
        else
            assert_int_equal(ref.max_id < 0 ? -1 : ref.max_id / FS_NOISE_BLOCK,
                             bid < 0 ? -1 : bid / FS_NOISE_BLOCK);
        if (bid >= 0) {
            for (int64_t v = 0; v < x.V; ++v)
                z += exp((double)x.s[v] - best);
            assert_true(fabs(fs_record_lse(&ref) - (best + log(z))) < 1e-5 * (1 + fabs(best)));
        }
        if (greedy)
            assert_int_equal(ref.best_id, -1);
        else if (bid >= 0) {
            assert_int_equal(ref.best_id, block_draw_ref(&x));
            assert_true(ref.best_id != x.d.excluded || ref.best_id < 0);
            if (ref.best_id >= 0)
                assert_true(ref.best_s == x.s[ref.best_id]);
        }
        if (x.d.selected >= 0)
            assert_true(ref.sel_s == x.s[x.d.selected] ||
                        (x.s[x.d.selected] == -INFINITY && ref.sel_s == -INFINITY));
    }
}

static void test_merge_any_order(void **state)
{
    (void)state;
    merge_orders(0, 0, 1);
}

static void test_merge_any_order_greedy(void **state)
{
    (void)state;
    merge_orders(0, 1, 2);
}

static void test_merge_any_order_ties(void **state)
{
    (void)state;
    merge_orders(1, 0, 3);
    merge_orders(1, 1, 4);
}

/* Ties: the lowest id wins, whatever order the tokens or tiles come in. */
static void test_tie_lowest_id(void **state)
{
    (void)state;
    fs_row_desc d = fs_row_desc_make(1.0f, 1, 2, 0, -1, -1, 0);
    fs_record a, b;
    /* pushed in descending id order within one record */
    fs_record_init(&a);
    for (int32_t v = 9; v >= 3; --v)
        fs_record_push(&a, &d, v, 1.5f);
    assert_int_equal(a.max_id, 3);
    assert_true(fabsf(a.sum_exp - 7.0f) < 1e-6f);
    /* a higher tile merged first, then a lower one, and the reverse */
    fs_record hi, lo;
    fs_record_init(&hi);
    fs_record_init(&lo);
    fs_record_push(&hi, &d, 100, 2.0f);
    fs_record_push(&lo, &d, 7, 2.0f);
    a = hi;
    fs_record_merge(&a, &lo);
    b = lo;
    fs_record_merge(&b, &hi);
    assert_int_equal(a.max_id, 7);
    assert_int_equal(b.max_id, 7);
    assert_true(a.sum_exp == 2.0f && b.sum_exp == 2.0f);
    /* best_key tie with different scores: lowest id, its own score kept */
    fs_record_init(&hi);
    fs_record_init(&lo);
    hi.best_key = lo.best_key = 2.0f;
    hi.best_id = 50;
    hi.best_s = 1.0f;
    lo.best_id = 40;
    lo.best_s = 1.5f;
    fs_record c = hi;
    fs_record_merge(&c, &lo);
    assert_int_equal(c.best_id, 40);
    assert_true(c.best_s == 1.5f);
    c = lo;
    fs_record_merge(&c, &hi);
    assert_int_equal(c.best_id, 40);
    /* excluded token never becomes the candidate, but counts in the LSE */
    fs_row_desc dx = fs_row_desc_make(1.0f, 1, 2, 0, 3, 3, 0);
    float s[FS_NOISE_BLOCK];
    for (int i = 0; i < FS_NOISE_BLOCK; ++i)
        s[i] = -INFINITY;
    s[3] = 10.0f;
    s[4] = 0.0f;
    fs_record_init(&a);
    fs_record_push_block(&a, &dx, 0, FS_NOISE_BLOCK, s);
    assert_int_equal(a.max_id, 3);
    assert_int_equal(a.best_id, 4);
    assert_true(a.best_s == 0.0f);
    assert_true(a.sel_s == 10.0f);
    assert_true(fabsf(fs_record_lse(&a) - (10.0f + log1pf(expf(-10.0f)))) < 1e-6f);
    /* a block of only the excluded token has no candidate, but a max */
    s[4] = -INFINITY;
    fs_record_init(&a);
    fs_record_push_block(&a, &dx, 0, FS_NOISE_BLOCK, s);
    assert_int_equal(a.best_id, -1);
    assert_int_equal(a.max_id, 3);
    /* the excluded token dominating by far does not starve the others: the
       block's noise sum is relative to their own max */
    s[4] = -5.0f;
    s[3] = 500.0f;
    fs_record_init(&a);
    fs_record_push_block(&a, &dx, 0, FS_NOISE_BLOCK, s);
    assert_int_equal(a.best_id, 4);
    assert_true(isfinite(a.best_key));
}

/* Inside a block the token is the inverse CDF of exp(s - m) at the block's
 * uniform: over many seeds its frequencies follow the in-block softmax, and
 * a token of zero weight (exp underflow) is never drawn. */
static void test_block_inverse_cdf(void **state)
{
    (void)state;
    enum { N = 200000 };
    float s[FS_NOISE_BLOCK];
    double p[FS_NOISE_BLOCK], z = 0.0;
    for (int i = 0; i < FS_NOISE_BLOCK; ++i)
        s[i] = 0.4f * (float)((i * 7) % 11) - 1.0f;
    s[5] = -INFINITY; /* probability zero */
    s[9] = -200.0f;   /* finite, but exp(-200 - m) is 0 in float */
    for (int i = 0; i < FS_NOISE_BLOCK; ++i) {
        p[i] = i == 5 || i == 9 ? 0.0 : exp((double)s[i]);
        z += p[i];
    }
    for (int i = 0; i < FS_NOISE_BLOCK; ++i)
        p[i] /= z;
    uint64_t counts[FS_NOISE_BLOCK] = {0};
    for (int k = 0; k < N; ++k) {
        fs_row_desc d = fs_row_desc_make(1.0f, 1000 + (uint64_t)k, 3, 0, -1, -1, 0);
        fs_record a;
        fs_record_init(&a);
        fs_record_push_block(&a, &d, 32, FS_NOISE_BLOCK, s);
        assert_true(a.best_id >= 32 && a.best_id < 32 + FS_NOISE_BLOCK);
        counts[a.best_id - 32]++;
    }
    assert_int_equal(counts[5], 0);
    assert_int_equal(counts[9], 0);
    fst_chi2 r;
    double pv = fst_chi2_test(counts, p, FS_NOISE_BLOCK, &r);
    if (pv < 1e-6)
        fail_msg("in-block draw: chi2 %.1f df %d p %.3g", r.stat, r.df, pv);
}

/* A block whose best possible key is below the record's best is skipped
 * without drawing (fs_block_hopeless); the bound never skips a block that
 * could win. */
static void test_block_pruning_exact(void **state)
{
    (void)state;
    fst_rng r;
    fst_rng_seed(&r, 77);
    for (int it = 0; it < 20000; ++it) {
        float s[FS_NOISE_BLOCK];
        for (int i = 0; i < FS_NOISE_BLOCK; ++i)
            s[i] = (float)(fst_normal(&r) * 0.1);
        fs_row_desc d = fs_row_desc_make(1.0f, fst_next(&r), 0, 0, -1, -1, 0);
        float m = -INFINITY, S = 0.0f;
        for (int i = 0; i < FS_NOISE_BLOCK; ++i)
            m = s[i] > m ? s[i] : m;
        for (int i = 0; i < FS_NOISE_BLOCK; ++i)
            S += expf(s[i] - m);
        uint32_t wg, wu;
        fs_block_words(d.seed, d.offset, d.position, 0, &wg, &wu);
        float key = m + logf(S) + fs_gumbel(wg);
        /* a bar just below the key: never pruned, always beaten */
        assert_false(fs_block_hopeless(m, key - 1e-3f));
        fs_record a;
        fs_record_init(&a);
        a.best_key = key - 1e-3f;
        a.best_id = 1000;
        fs_record_push_block(&a, &d, 0, FS_NOISE_BLOCK, s);
        assert_true(a.best_id < FS_NOISE_BLOCK);
    }
    /* the largest possible key: every score equal, the largest Gumbel */
    assert_false(fs_block_hopeless(0.0f, logf(16.0f) + fs_gumbel(0xFFFFFFFFu)));
    assert_true(fs_block_hopeless(0.0f, 20.0f));
}

/* -inf is probability zero: ignored, no flag; a row of only -inf (or of no
 * pushed tokens at all) is all-masked. */
static void test_neg_inf(void **state)
{
    (void)state;
    fs_row_desc d = fs_row_desc_make(1.0f, 1, 2, 0, -1, 2, 0);
    fs_record a, init;
    fs_record_init(&init);
    fs_record_init(&a);
    for (int32_t v = 0; v < 5; ++v)
        fs_record_push(&a, &d, v, -INFINITY);
    assert_memory_equal(&a, &init, sizeof a);
    assert_int_equal(fs_record_status(&a), FS_ROW_ALL_MASKED);
    int32_t tok = 123, st = FS_ROW_OK;
    float lp = 0.0f;
    fs_finalize_sample(&a, &d, &tok, &lp, &st);
    assert_int_equal(tok, -1);
    assert_int_equal(st, FS_ROW_ALL_MASKED);
    assert_true(isnan(lp));
    /* one finite token among -inf ones */
    float s[FS_NOISE_BLOCK];
    for (int i = 0; i < FS_NOISE_BLOCK; ++i)
        s[i] = -INFINITY;
    fs_record_push_block(&a, &d, 0, FS_NOISE_BLOCK, s);
    assert_memory_equal(&a, &init, sizeof a);
    s[4] = -3.0f;
    fs_record_push_block(&a, &d, 0, FS_NOISE_BLOCK, s);
    assert_int_equal(a.max_id / FS_NOISE_BLOCK, 0); /* not greedy: an id of the block */
    assert_int_equal(a.best_id, 4);
    assert_true(a.sum_exp == 1.0f);
    assert_int_equal(fs_record_status(&a), FS_ROW_OK);
    /* merging an empty (all -inf) record either way is the identity */
    fs_record b = a, c = init;
    fs_record_merge(&b, &init);
    assert_memory_equal(&b, &a, sizeof a);
    fs_record_merge(&c, &a);
    assert_memory_equal(&c, &a, sizeof a);
    /* finite scores far below the max do not disturb anything */
    const int32_t max_id = a.max_id;
    fs_record_push(&a, &d, 0, -1e30f);
    assert_int_equal(a.max_id, max_id);
    assert_true(a.sum_exp == 1.0f);
}

static void test_nonfinite_flag(void **state)
{
    (void)state;
    fs_row_desc d = fs_row_desc_make(1.0f, 1, 2, 0, -1, -1, 0);
    float bad[] = {NAN, INFINITY, -NAN};
    for (int k = 0; k < 3; ++k) {
        fs_record a, b;
        fs_record_init(&a);
        fs_record_init(&b);
        fs_record_push(&a, &d, 0, 1.0f);
        fs_record_push(&b, &d, 1, bad[k]);
        assert_true(b.flags & FS_REC_NONFINITE);
        assert_int_equal(b.max_id, -1); /* the bad token is not a candidate */
        assert_int_equal(b.best_id, -1);
        assert_int_equal(fs_record_status(&b), FS_ROW_NONFINITE);
        fs_record c = a;
        fs_record_merge(&c, &b); /* the flag survives merging, either way */
        assert_true(c.flags & FS_REC_NONFINITE);
        assert_int_equal(fs_record_status(&c), FS_ROW_NONFINITE);
        fs_record_merge(&b, &a);
        assert_true(b.flags & FS_REC_NONFINITE);
        assert_int_equal(b.max_id, 0);
        /* and the finalizers turn it into sentinels */
        int32_t tok = 5, st = 0;
        float lp = 0.0f;
        fs_finalize_sample(&c, &d, &tok, &lp, &st);
        assert_int_equal(tok, -1);
        assert_int_equal(st, FS_ROW_NONFINITE);
        assert_true(isnan(lp));
        float val = 0.0f;
        fs_finalize_argmax(&c, &tok, &val, &st);
        assert_int_equal(tok, -1);
        assert_int_equal(st, FS_ROW_NONFINITE);
        assert_true(isnan(val));
    }
    /* NaN after valid tokens (merge direction irrelevant) and before */
    fs_record a;
    fs_record_init(&a);
    fs_record_push(&a, &d, 0, NAN);
    fs_record_push(&a, &d, 1, 2.0f);
    assert_true(a.flags & FS_REC_NONFINITE);
    assert_int_equal(a.max_id, 1);
}

/* A block push tests finiteness per block: a NaN or +inf score anywhere in
 * the block's first n places flags the record -- among finite scores, among
 * -inf ones, alone -- in the blocks with and without the excluded or
 * selected token; scores past n are never read. */
static void test_block_nonfinite(void **state)
{
    (void)state;
    const float bad[] = {NAN, -NAN, INFINITY};
    for (int greedy = 0; greedy < 2; ++greedy)
        for (int sel = 0; sel < 2; ++sel)
            for (int k = 0; k < 3; ++k)
                for (int at = 0; at < FS_NOISE_BLOCK; at += 5)
                    for (int fill = 0; fill < 3; ++fill) {
                        /* fill 0: finite scores, 1: -inf, 2: finite and -inf */
                        fs_row_desc d = fs_row_desc_make(greedy ? 0.0f : 1.0f, 1, 2, 0, -1,
                                                         sel ? 39 : -1, 0);
                        float s[FS_NOISE_BLOCK];
                        for (int i = 0; i < FS_NOISE_BLOCK; ++i)
                            s[i] = fill == 1 || (fill == 2 && i % 2) ? -INFINITY
                                                                     : 0.25f * (float)i;
                        s[at] = bad[k];
                        fs_record a;
                        fs_record_init(&a);
                        fs_record_push_block(&a, &d, 32, FS_NOISE_BLOCK, s);
                        if (!(a.flags & FS_REC_NONFINITE))
                            fail_msg("greedy %d sel %d bad %g at %d fill %d: not flagged",
                                     greedy, sel, bad[k], at, fill);
                        assert_int_equal(fs_record_status(&a), FS_ROW_NONFINITE);
                        /* the same place past n: not read, no flag */
                        fs_record_init(&a);
                        fs_record_push_block(&a, &d, 32, at, s);
                        assert_false(a.flags & FS_REC_NONFINITE);
                    }
}

/* Large score ranges: the online LSE stays accurate and finite. */
static void test_lse_range(void **state)
{
    (void)state;
    fs_row_desc d = fs_row_desc_make(1.0f, 1, 2, 0, -1, -1, 0);
    float s[] = {-80.0f, 85.0f, 84.0f, -1e4f, 60.0f, 85.0f, 3e4f, -3e4f};
    fs_record a, t1, t2;
    fs_record_init(&a);
    fs_record_init(&t1);
    fs_record_init(&t2);
    double m = -INFINITY, z = 0.0;
    for (int i = 0; i < 8; ++i) {
        fs_record_push(&a, &d, i, s[i]);
        fs_record_push(i < 4 ? &t1 : &t2, &d, i, s[i]);
        if (s[i] > m)
            m = s[i];
    }
    for (int i = 0; i < 8; ++i)
        z += exp(s[i] - m);
    fs_record_merge(&t2, &t1);
    assert_int_equal(a.max_id, 6);
    assert_int_equal(t2.max_id, 6);
    assert_true(isfinite(fs_record_lse(&a)));
    assert_true(fabs(fs_record_lse(&a) - (m + log(z))) < 1e-2);
    assert_true(fabs(fs_record_lse(&t2) - (m + log(z))) < 1e-2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_merge_any_order),
        cmocka_unit_test(test_merge_any_order_greedy),
        cmocka_unit_test(test_merge_any_order_ties),
        cmocka_unit_test(test_tie_lowest_id),
        cmocka_unit_test(test_block_inverse_cdf),
        cmocka_unit_test(test_block_pruning_exact),
        cmocka_unit_test(test_neg_inf),
        cmocka_unit_test(test_nonfinite_flag),
        cmocka_unit_test(test_block_nonfinite),
        cmocka_unit_test(test_lse_range),
    };
    return cmocka_run_group_tests_name("record", tests, NULL, NULL);
}
