/* Tree verify over a vocabulary split into shards, as tensor-parallel ranks
 * would run it: each shard's rows are scanned with the CPU tree scan over its
 * own slice of the logits (or of the LM head), the shards' records are merged
 * row by row with fs_tree_record_merge (in rank order, and in reverse), and
 * the shared finalizer walks the merged records.  Token ids, accepted node
 * indices, counts and statuses must equal the unsharded call's, and
 * logprobs agree to float rounding.  Shard offsets are multiples of 16 (a
 * noise block never spans two shards); 2 to 4 shards, one of them tiny.
 *
 * With top-k / top-p / min-p the shards' candidate records merge beside
 * their tree records, and the filters' stage runs over the shards in rank
 * order (the second pass sums their histograms and merges their draw
 * records as ranks would), in the one pass, with the candidate cap lowered
 * and with the second pass forced; the library's own emulation
 * (fs_cpu_set_vocab_shards) gives the same outputs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_backend.h"
#include "cpu_tree.h"
#include "fs_test.h"
#include "naive_ref.h"
#include "oracle_inputs.h"
#include "tree_test.h"

enum { MAXSHARDS = 4 };

typedef struct split {
    int count;
    int64_t cut[MAXSHARDS + 1]; /* shard s holds [cut[s], cut[s+1]) */
} split;

enum { PASS_ONE = 0, PASS_CAP = 1, PASS_SECOND = 2 };

static void set_pass(int mode)
{
    fs_cpu_set_filter_candidates(mode == PASS_CAP ? 4 : 0);
    fs_cpu_set_filter_second_pass(mode == PASS_SECOND);
}

/* Returns the number of requests that differ from the unsharded call when
 * shard `lose` (>= 0) is left out of the merge; with lose < 0 every request
 * must agree.  filters: random filters on every request, in pass mode
 * `pass`. */
static int64_t shard_case(int fused, fs_dtype dt, const split *sp, uint64_t seed, int lose,
                          int filters, int pass)
{
    const int64_t V = sp->cut[sp->count], D = 24, R = 40;
    fs_context *ctx = fst_cpu_ctx();
    fstt_tree tr;
    const int64_t rows = fstt_make_shapes(&tr, R, 10, 4, 4, seed);
    const fs_draft_tree *t = &tr.t;
    const int64_t S = t->max_depth + 1, P = t->max_depth;
    /* inputs */
    void *logits = NULL, *weight = NULL, *hidden = NULL;
    double *ref;
    if (fused) {
        fst_gen_head(seed, V, D, rows, 3.0, dt, &weight, &hidden);
        ref = ref_logits_fused(weight, hidden, dt, rows, V, D);
    } else {
        float *l = fst_gen_logits(seed, rows, V, 3.0);
        logits = fst_pack(l, (size_t)(rows * V), dt);
        free(l);
        ref = ref_logits_stored(logits, dt, rows, V);
    }
    float *T = malloc(sizeof(float) * R);
    uint64_t *sd = malloc(sizeof(uint64_t) * R), *of = malloc(sizeof(uint64_t) * R);
    fst_rng g;
    fst_rng_seed(&g, seed);
    for (int64_t r = 0; r < R; ++r) {
        static const float temps[4] = {1.0f, 0.0f, 0.6f, 1.8f};
        T[r] = temps[r % 4];
        sd[r] = fst_next(&g);
        of[r] = fst_next(&g) >> 20;
    }
    float *bias = fst_gen_bias(seed, rows, V);
    uint32_t *allowed = fst_gen_allowed(seed, rows, V, 0.7);
    fs_sampling p = {T, sd, of, bias, allowed};
    fst_params fp;
    memset(&fp, 0, sizeof fp);
    if (filters) {
        fst_params_add_filters(&fp, R, V, seed, FST_ARR_ALL);
        p.top_k = fp.p.top_k;
        p.top_p = fp.p.top_p;
        p.min_p = fp.p.min_p;
        p.out_filter_fallback = fp.p.out_filter_fallback;
    }
    int32_t fb[40] = {0};
    set_pass(pass);
    fstt_choose_tokens(&tr, ref, V, &p, seed);

    /* the unsharded call */
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)(R * S)), *path = malloc(sizeof(int32_t) * (size_t)(R * P));
    int32_t nem[40], st[40];
    float *lp = malloc(sizeof(float) * (size_t)(R * S));
    fs_lm_head head = {weight, V, D, dt};
    fs_status s = fused ? fstt_verify_tree(ctx, &head, hidden, t, &p, tok, path, nem, lp, st)
                        : fstt_verify_tree_logits(ctx, logits, dt, V, t, &p, tok, path, nem, lp, st);
    if (s != FS_OK)
        fail_msg("unsharded: %s (%s)", fs_status_string(s), fs_context_last_error(ctx));
    if (filters)
        memcpy(fb, fp.fallback, sizeof fb);
    long second = 0;
    for (int64_t r = 0; filters && r < R; ++r)
        second += fb[r];

    /* the library's emulation of the shards */
    int32_t *htok = malloc(sizeof(int32_t) * (size_t)(R * S)), *hpath = malloc(sizeof(int32_t) * (size_t)(R * P));
    int32_t hnem[40], hst[40];
    float *hlp = malloc(sizeof(float) * (size_t)(R * S));
    assert_int_equal(fs_cpu_set_vocab_shards(sp->count, sp->cut), 0);
    s = fused ? fstt_verify_tree(ctx, &head, hidden, t, &p, htok, hpath, hnem, hlp, hst)
              : fstt_verify_tree_logits(ctx, logits, dt, V, t, &p, htok, hpath, hnem, hlp, hst);
    fs_cpu_set_vocab_shards(0, NULL);
    assert_int_equal(s, FS_OK);
    if (lose < 0) {
        assert_memory_equal(htok, tok, sizeof(int32_t) * (size_t)(R * S));
        assert_memory_equal(hpath, path, sizeof(int32_t) * (size_t)(R * P));
        assert_memory_equal(hnem, nem, sizeof hnem);
        assert_memory_equal(hst, st, sizeof hst);
        if (filters)
            assert_memory_equal(fp.fallback, fb, sizeof fb);
        for (int64_t k = 0; k < R * S; ++k)
            assert_true(tok[k] < 0 ? isnan(hlp[k]) : fabsf(hlp[k] - lp[k]) < 1e-5f);
    }
    free(htok);
    free(hpath);
    free(hlp);

    /* the same, shard by shard */
    int32_t *stok = malloc(sizeof(int32_t) * (size_t)(R * S)), *spath = malloc(sizeof(int32_t) * (size_t)(R * P));
    int32_t snem[40], sst[40];
    float *slp = malloc(sizeof(float) * (size_t)(R * S));
    fs_tree_args a;
    memset(&a, 0, sizeof a);
    a.base.op = FS_OP_VERIFY_TREE;
    a.base.vocab_size = V;
    a.base.vocab_offset = 0;
    a.base.global_vocab = V;
    a.base.rows = rows;
    a.base.params = &p;
    a.base.out_tokens = stok;
    a.base.out_values = slp;
    a.base.out_num_emitted = snem;
    a.base.out_row_status = sst;
    a.tree = t;
    a.out_path_nodes = spath;
    const size_t es = fst_dtype_size(dt);
    void *mem[MAXSHARDS + 1];
    fs_cpu_tree_ws w[MAXSHARDS + 1];
    for (int k = 0; k <= sp->count; ++k) {
        mem[k] = malloc(fs_cpu_tree_carve(NULL, rows, R, NULL));
        fs_cpu_tree_carve(mem[k], rows, R, &w[k]);
    }
    fs_cpu_tree_prepare(&a, &w[sp->count]); /* descriptors for every rank */
    fs_lm_head shead[MAXSHARDS];
    void *slices[MAXSHARDS] = {NULL};
    fs_tree_args as[MAXSHARDS];
    const fs_op_args *parts[MAXSHARDS];
    for (int k = 0; k < sp->count; ++k) {
        const int64_t v0 = sp->cut[k], Vs = sp->cut[k + 1] - v0;
        fs_tree_args ak = a;
        ak.base.vocab_offset = v0;
        ak.base.vocab_size = Vs;
        if (fused) {
            fs_lm_head h = {(const char *)weight + es * (size_t)(v0 * D), Vs, D, dt};
            shead[k] = h;
            ak.base.head = &shead[k];
            ak.base.hidden = hidden;
        } else {
            slices[k] = malloc(es * (size_t)(rows * Vs));
            for (int64_t r = 0; r < rows; ++r)
                memcpy((char *)slices[k] + es * (size_t)(r * Vs),
                       (const char *)logits + es * (size_t)(r * V + v0), es * (size_t)Vs);
            ak.base.logits = slices[k];
            ak.base.logits_dtype = dt;
        }
        /* each rank's scan reads the common descriptors */
        fs_cpu_tree_ws wk = w[k];
        wk.rows = w[sp->count].rows;
        wk.filter.fdescs = w[sp->count].filter.fdescs;
        wk.filter.recs.fdescs = w[sp->count].filter.fdescs;
        fs_cpu_tree_scan(&ak, &wk);
        as[k] = ak;
        parts[k] = &as[k].base;
    }
    int64_t differences = 0;
    for (int order = 0; order < 2; ++order) {
        fs_cpu_tree_ws *m = &w[sp->count];
        for (int64_t r = 0; r < rows; ++r) {
            /* rank order, then reversed */
            const int active = m->filter.fdescs[r].active;
            fs_tree_record_init(&m->row_recs[r]);
            if (active)
                fs_filter_record_init(&m->filter.recs.row[r]);
            for (int j = 0; j < sp->count; ++j) {
                int k = order ? sp->count - 1 - j : j;
                if (k == lose)
                    continue;
                fs_tree_record_merge(&m->row_recs[r], &w[k].row_recs[r]);
                if (active)
                    fs_filter_merge(&m->filter.recs.row[r], &w[k].filter.recs.row[r],
                                    m->filter.recs.cap);
            }
        }
        /* the filters' stage over the ranks' shards, in rank order */
        fs_cpu_tree_filter(parts, sp->count, &a, m);
        fs_cpu_tree_finalize(&a, m);
        if (filters && lose < 0 && memcmp(fp.fallback, fb, sizeof fb))
            fail_msg("%d shards (order %d): out_filter_fallback differs", sp->count, order);
        for (int64_t r = 0; r < R; ++r) {
            int differ = sst[r] != st[r] || snem[r] != nem[r] ||
                         memcmp(stok + r * S, tok + r * S, sizeof(int32_t) * (size_t)S) ||
                         memcmp(spath + r * P, path + r * P, sizeof(int32_t) * (size_t)P);
            if (lose >= 0) {
                differences += differ;
                continue;
            }
            if (differ)
                fail_msg("%s %s, %d shards (order %d): request %lld differs: status %d/%d, "
                         "emitted %d/%d, first token %d/%d",
                         fused ? "fused" : "logits", fst_dtype_name(dt), sp->count, order,
                         (long long)r, sst[r], st[r], snem[r], nem[r], stok[r * S], tok[r * S]);
            for (int64_t k = 0; k < nem[r]; ++k)
                assert_true(fabsf(slp[r * S + k] - lp[r * S + k]) < 1e-5f);
        }
    }
    int64_t accepted = 0;
    for (int64_t r = 0; r < R; ++r)
        accepted += nem[r] - 1;
    if (lose < 0) {
        print_message("%s %s, %d shards%s: %lld requests, %lld accepted nodes agree%s",
                      fused ? "fused" : "logits", fst_dtype_name(dt), sp->count,
                      filters ? (pass == PASS_ONE ? ", filters" : pass == PASS_CAP ? ", filters cap 4" : ", filters second pass") : "",
                      (long long)R, (long long)accepted, filters ? "" : "\n");
        if (filters)
            print_message(" (%ld rows took the second pass)\n", second);
        assert_true(accepted > 0);
    }
    for (int k = 0; k <= sp->count; ++k)
        free(mem[k]);
    for (int k = 0; k < sp->count; ++k)
        free(slices[k]);
    free(stok);
    free(spath);
    free(slp);
    free(tok);
    free(path);
    free(lp);
    free(T);
    free(sd);
    free(of);
    free(bias);
    free(allowed);
    free(logits);
    free(weight);
    free(hidden);
    free(ref);
    fst_free_params(&fp);
    set_pass(PASS_ONE);
    fstt_free(&tr);
    fs_context_destroy(ctx);
    return differences;
}

/* 2-4 uneven shards of V = 1013 (one of 16 tokens), and the dtypes the
 * cases cycle through */
static const split splits[] = {
    {2, {0, 512, 1013}},
    {3, {0, 256, 512, 1013}},
    {4, {0, 16, 480, 1008, 1013}},
};
static const fs_dtype dts[3] = {FS_DTYPE_F32, FS_DTYPE_BF16, FS_DTYPE_F16};

static void test_shards(void **state)
{
    (void)state;
    uint64_t seed = 7000;
    for (size_t i = 0; i < sizeof splits / sizeof splits[0]; ++i)
        for (int fused = 0; fused < 2; ++fused)
            shard_case(fused, dts[(i + (size_t)fused) % 3], &splits[i], ++seed, -1, 0, PASS_ONE);
}

static void test_shards_with_filters(void **state)
{
    (void)state;
    uint64_t seed = 7200;
    for (size_t i = 0; i < sizeof splits / sizeof splits[0]; ++i)
        for (int fused = 0; fused < 2; ++fused)
            for (int pass = 0; pass < 3; ++pass)
                shard_case(fused, dts[(i + (size_t)pass) % 3], &splits[i], ++seed, -1, 1, pass);
}

/* The comparison has teeth: a shard left out of the merge (its records
 * lost, as if one rank's all-gather slot were never written) changes most
 * requests' outputs. */
static void test_shards_detect_a_lost_shard(void **state)
{
    (void)state;
    const split sp = {3, {0, 256, 512, 1013}};
    for (int lose = 0; lose < 3; ++lose) {
        int64_t d = shard_case(0, FS_DTYPE_F32, &sp, 7100 + (uint64_t)lose, lose, 0, PASS_ONE);
        print_message("shard %d lost: %lld of 2 x 40 requests differ\n", lose, (long long)d);
        assert_true(d >= 20);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_shards, fst_reset_hooks),
        cmocka_unit_test_setup(test_shards_with_filters, fst_reset_hooks),
        cmocka_unit_test_setup(test_shards_detect_a_lost_shard, fst_reset_hooks),
    };
    return cmocka_run_group_tests_name("tree_shard", tests, NULL, NULL);
}
