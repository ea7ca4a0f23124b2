/* The filters' candidates across vocabulary shards (tensor parallelism): each
 * rank exports an fs_filter_summary of a row -- its best n tokens, its count,
 * and lo, a bound on every token it holds but did not export -- and every
 * rank merges the summaries with fs_filter_summary_merge, the rule the CUDA
 * ranks and the CPU emulation share.  The summaries here are built as a CUDA
 * scan builds them: the top of an exact prefix of the shard's sorted scores
 * (the tokens above the lists' largest dropped score D), which may be far
 * shorter than the cap and incomplete.
 *
 * Checked: the merged candidates are sorted and distinct, their count is the
 * row's, every token outside them scores <= their last one and every token
 * above their last one is among them (the invariant fs_filter_resolve needs);
 * and a row resolved in one pass from them keeps exactly the kept set of the
 * materialised oracle (filter_ref.h).  A hand-made case: rank 0 exports a
 * short prefix (5 tokens, incomplete: its lo lies above most of rank 1's
 * entries), rank 1 its complete top 64 -- merging without the floor L ranks
 * rank 1's entries above rank 0's unexported tokens. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "filter_finalize.h"
#include "filter_record.h"
#include "filter_ref.h"
#include "fs_test.h"

enum { MAXV = 1200, MAXR = 4, CAP = FS_FILTER_CANDIDATES };

typedef struct row {
    int64_t V;
    float s[MAXV]; /* -inf: not allowed */
} row;

/* (score desc, id asc) over the shard [a, b) of x: its finite tokens sorted. */
static int sorted_shard(const row *x, int64_t a, int64_t b, float *s, int32_t *id)
{
    int n = 0;
    for (int64_t v = a; v < b; ++v) {
        if (!(x->s[v] > -INFINITY))
            continue;
        int j = n++;
        while (j > 0 && fs_beats(x->s[v], (int32_t)v, s[j - 1], id[j - 1])) {
            s[j] = s[j - 1];
            id[j] = id[j - 1];
            --j;
        }
        s[j] = x->s[v];
        id[j] = (int32_t)v;
    }
    return n;
}

/* A CUDA-like summary of shard [a, b): the tokens scoring above D (the exact
 * prefix; D = the score of the shard's sorted token `cut`, or -inf when cut
 * is past the end), of which the best CAP; lo = D, or the last exported
 * score when the prefix is longer than CAP. */
static void summarize(const row *x, int64_t a, int64_t b, int cut, fs_filter_summary *m)
{
    float s[MAXV];
    int32_t id[MAXV];
    const int n = sorted_shard(x, a, b, s, id);
    const float D = cut < n ? s[cut] : -INFINITY;
    int g = 0;
    while (g < n && s[g] > D)
        ++g;
    m->count = n;
    m->n = g < CAP ? g : CAP;
    m->lo = g > CAP ? s[CAP - 1] : D;
    m->reserved = 0;
    for (int i = 0; i < m->n; ++i) {
        m->s[i] = s[i];
        m->id[i] = id[i];
    }
}

/* The invariants of a merged record f of row x. */
static void check_merged(const row *x, const fs_filter_record *f)
{
    int count = 0;
    for (int64_t v = 0; v < x->V; ++v)
        count += x->s[v] > -INFINITY;
    assert_int_equal(f->count, count);
    assert_true(f->n <= CAP && f->n <= count);
    unsigned char in[MAXV] = {0};
    for (int i = 0; i < f->n; ++i) {
        assert_true(f->id[i] >= 0 && f->id[i] < x->V);
        assert_true(x->s[f->id[i]] == f->s[i]);
        assert_false(in[f->id[i]]);
        in[f->id[i]] = 1;
        if (i > 0)
            assert_true(fs_beats(f->s[i - 1], f->id[i - 1], f->s[i], f->id[i]));
    }
    if (f->n == 0)
        return;
    const float last = f->s[f->n - 1];
    for (int64_t v = 0; v < x->V; ++v) {
        if (!(x->s[v] > -INFINITY))
            continue;
        if (!in[v])
            assert_true(x->s[v] <= last);  /* outside: at most the last candidate */
        if (x->s[v] > last)
            assert_true(in[v]);            /* above it: a candidate */
    }
}

/* Resolve x's merged record f under filter rf; when decided, the kept set
 * must be the oracle's (rows whose oracle sets under +-rounding slack differ
 * are skipped).  Returns 1 when the one pass decided. */
static int check_resolve(const row *x, const fs_filter_record *f, const ref_filter *rf)
{
    fs_record rec;
    fs_record_init(&rec);
    float m = -INFINITY;
    for (int64_t v = 0; v < x->V; ++v)
        m = x->s[v] > m ? x->s[v] : m;
    float z = 0.0f;
    for (int64_t v = 0; v < x->V; ++v)
        if (x->s[v] > -INFINITY)
            z += fs_exp(x->s[v] - m);
    rec.max_s = m;
    rec.sum_exp = z;
    fs_filter_desc fd;
    fd.top_k = rf->top_k;
    fd.top_p = (float)rf->top_p;
    fd.log_min_p = rf->min_p > 0.0 ? logf((float)rf->min_p) : -INFINITY;
    fd.active = 1;
    fs_filter_cut cut;
    if (fs_filter_resolve(&rec, f, &fd, &cut) != FS_FILTER_ONE_PASS)
        return 0;
    double sd[MAXV];
    for (int64_t v = 0; v < x->V; ++v)
        sd[v] = x->s[v];
    unsigned char wide[MAXV], narrow[MAXV];
    ref_filter_keep(sd, x->V, rf, 1.0, wide);
    ref_filter_keep(sd, x->V, rf, -1.0, narrow);
    if (memcmp(wide, narrow, (size_t)x->V) != 0)
        return 1;
    for (int64_t v = 0; v < x->V; ++v)
        assert_int_equal(fs_filter_keeps(&cut, x->s[v]) ? 1 : 0, wide[v]);
    return 1;
}

/* Random rows on a 1/16 grid (ties common), split into 2-4 ranks of whole
 * noise blocks, each rank's prefix cut at a random depth (often short). */
static void test_random_shards(void **state)
{
    (void)state;
    fst_rng rng;
    fst_rng_seed(&rng, 20261124);
    static const ref_filter filters[] = {
        {50, 1.0, 0.0}, {0, 0.9, 0.0}, {0, 1.0, 0.05}, {50, 0.9, 0.05},
        {1, 1.0, 0.0},  {0, 1e-6, 0.0}, {10, 0.5, 0.0}, {0, 0.3, 0.2},
    };
    int decided = 0, short_prefix = 0;
    for (int trial = 0; trial < 400; ++trial) {
        row x;
        x.V = 200 + fst_randint(&rng, MAXV - 200);
        const double scale = trial % 3 == 0 ? 0.25 : trial % 3 == 1 ? 1.0 : 3.0;
        for (int64_t v = 0; v < x.V; ++v)
            x.s[v] = fst_randint(&rng, 10) == 0
                         ? -INFINITY
                         : (float)(round(16.0 * scale * fst_normal(&rng)) / 16.0);
        const int ranks = 2 + (int)fst_randint(&rng, MAXR - 1);
        int64_t cuts[MAXR + 1];
        cuts[0] = 0;
        cuts[ranks] = x.V;
        for (int k = 1; k < ranks; ++k) {
            int64_t blocks = x.V / FS_NOISE_BLOCK;
            int64_t c = (1 + fst_randint(&rng, blocks - 1)) * FS_NOISE_BLOCK;
            cuts[k] = c > cuts[k - 1] ? c : cuts[k - 1];
        }
        fs_filter_summary sums[MAXR];
        for (int k = 0; k < ranks; ++k) {
            /* prefix depth: short (1-40), around the cap, or the whole shard */
            const int pick = (int)fst_randint(&rng, 3);
            const int cut = pick == 0 ? 1 + (int)fst_randint(&rng, 40)
                            : pick == 1 ? 50 + (int)fst_randint(&rng, 40)
                                        : MAXV;
            summarize(&x, cuts[k], cuts[k + 1], cut, &sums[k]);
            short_prefix += sums[k].n < CAP && sums[k].n < sums[k].count;
        }
        fs_filter_record f;
        fs_filter_summary_merge(sums, 1, ranks, CAP, &f);
        check_merged(&x, &f);
        for (size_t i = 0; i < sizeof filters / sizeof filters[0]; ++i)
            decided += check_resolve(&x, &f, &filters[i]);
    }
    /* the cases that matter occur, and the one pass still settles rows */
    assert_true(short_prefix > 100);
    assert_true(decided > 400);
}

/* Rank 0 (ids 0..15) exports 5 tokens of 16 with lo = 9.0 (its tokens 6..15
 * score 9.0 and below); rank 1 (ids 16..) exports its complete top 64, all
 * below 9.5.  Merged: only entries >= L = 9.0 may stay, so rank 1's 8.x
 * entries must not be ranked above rank 0's unexported 9.0 token. */
static void test_short_prefix_floor(void **state)
{
    (void)state;
    row x;
    x.V = 16 + 64;
    for (int v = 0; v < 16; ++v)
        x.s[v] = v < 5 ? 14.0f - 0.5f * (float)v : 9.0f - 0.25f * (float)(v - 5);
    for (int v = 16; v < x.V; ++v)
        x.s[v] = 9.25f - 0.0625f * (float)(v - 16);
    fs_filter_summary sums[2];
    summarize(&x, 0, 16, 5, &sums[0]); /* D = its 6th score, 9.0 */
    summarize(&x, 16, x.V, MAXV, &sums[1]);
    assert_int_equal(sums[0].n, 5);
    assert_true(sums[0].lo == 9.0f);
    assert_int_equal(sums[1].n, 64);
    assert_true(sums[1].lo == -INFINITY);
    fs_filter_record f;
    fs_filter_summary_merge(sums, 1, 2, CAP, &f);
    check_merged(&x, &f);
    /* 5 from rank 0, rank 1's 9.25 .. 9.0 (5 tokens) */
    assert_int_equal(f.n, 10);
    assert_true(f.s[f.n - 1] == 9.0f);
    assert_int_equal(f.count, 80);
    /* top-k 8 is decided inside; top-k 10 ends on the 9.0 group, which may
       continue past the candidates (rank 0's token 5 scores 9.0 too) */
    ref_filter k8 = {8, 1.0, 0.0}, k10 = {10, 1.0, 0.0};
    assert_int_equal(check_resolve(&x, &f, &k8), 1);
    assert_int_equal(check_resolve(&x, &f, &k10), 0);
}

/* The CPU's own summaries (exact top n) merge to the exact top of the
 * union: the floor never cuts there. */
static void test_exact_records(void **state)
{
    (void)state;
    fst_rng rng;
    fst_rng_seed(&rng, 7);
    for (int trial = 0; trial < 100; ++trial) {
        row x;
        x.V = 64 + fst_randint(&rng, 600);
        for (int64_t v = 0; v < x.V; ++v)
            x.s[v] = (float)(round(8.0 * fst_normal(&rng)) / 8.0);
        const int ranks = 2 + (int)fst_randint(&rng, MAXR - 1);
        const int cap = 1 + (int)fst_randint(&rng, CAP);
        fs_filter_summary sums[MAXR];
        fs_filter_record whole;
        fs_filter_record_init(&whole);
        for (int k = 0; k < ranks; ++k) {
            fs_filter_record part;
            fs_filter_record_init(&part);
            for (int64_t v = x.V * k / ranks; v < x.V * (k + 1) / ranks; ++v) {
                fs_filter_push(&part, (int32_t)v, x.s[v], cap);
                fs_filter_push(&whole, (int32_t)v, x.s[v], cap);
            }
            fs_filter_summary_of(&part, &sums[k]);
        }
        fs_filter_record f;
        fs_filter_summary_merge(sums, 1, ranks, cap, &f);
        assert_int_equal(f.count, whole.count);
        assert_int_equal(f.n, whole.n);
        for (int i = 0; i < f.n; ++i) {
            assert_int_equal(f.id[i], whole.id[i]);
            assert_true(f.s[i] == whole.s[i]);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_shards),
        cmocka_unit_test(test_short_prefix_floor),
        cmocka_unit_test(test_exact_records),
    };
    return cmocka_run_group_tests_name("filter_summary", tests, NULL, NULL);
}
