/* Every op over a vocabulary split into shards as tensor-parallel ranks hold
 * it, on the CPU backend: fs_cpu_set_vocab_shards makes the backend scan each
 * shard on its own (its slice of the LM head or of the logits) and merge the
 * records in rank order, as the ranks' record exchange does; the filters'
 * second pass sums the shards' histograms.  Token ids, statuses, emitted
 * counts and fallback counts must equal the unsharded call's; logprobs agree
 * to float rounding (the log-sum-exp is summed in another order).
 *
 * Splits: 2, 3 and 4 shards with offsets multiples of 16 and uneven sizes
 * (one of 16 tokens), a vocabulary that is not a multiple of 16, a shard
 * whose tokens are all masked and one whose logits are all -inf.  Ops:
 * sample, draft argmax and verify, fused and over logits, with bias, masks,
 * ragged drafts, temperatures 0 to 1.5 and the top-k / top-p / min-p filters
 * (some rows taking the second pass).  Tree verify has its own shard test
 * (test_tree_shard.c). */
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
#include "oracle_inputs.h"

enum { V = 613, D = 40, ROWS = 24, R = 8, K = 3 };

typedef struct split {
    int n;
    int64_t cuts[5];
} split;

static const split SPLITS[] = {
    {2, {0, 304, V}},
    {3, {0, 16, 400, V}},
    {4, {0, 160, 320, 336, V}},
};

typedef struct inputs {
    void *weight, *hidden; /* fused */
    void *logits;          /* stored, [ROWS, V] */
    fs_dtype dt;
    fst_params pp; /* ROWS requests, the filter arrays in pp.p only with filters */
} inputs;

/* Shard [cuts[1], cuts[2]) masked out in row 1, its logits -inf in row 2:
 * a rank then holds nothing of those rows. */
static void make_inputs(inputs *in, fs_dtype dt, int filters, uint64_t seed)
{
    memset(in, 0, sizeof *in);
    in->dt = dt;
    fst_gen_head(seed, V, D, ROWS, 3.0, dt, &in->weight, &in->hidden);
    float *l = fst_gen_logits(seed + 1, ROWS, V, 3.0);
    for (int64_t v = 160; v < 320; ++v)
        l[2 * V + v] = -INFINITY;
    in->logits = fst_pack(l, (size_t)ROWS * V, dt);
    free(l);
    fst_params *pp = &in->pp;
    fst_params_alloc(pp, ROWS, 1);
    pp->bias = fst_gen_bias(seed + 2, ROWS, V);
    pp->allowed = fst_gen_allowed(seed + 3, ROWS, V, 0.9);
    for (int64_t v = 160; v < 320; ++v)
        fst_set_allowed(&pp->allowed[1 * fst_mask_words(V)], v, 0);
    static const float temps[5] = {1.0f, 0.0f, 0.05f, 0.7f, 1.5f};
    static const int32_t ks[4] = {0, 1, 5, 200};
    static const float ps[4] = {1.0f, 0.9f, 0.5f, 0.999f};
    static const float mps[4] = {0.0f, 0.05f, 0.0f, 0.001f};
    for (int r = 0; r < ROWS; ++r) {
        pp->T[r] = temps[r % 5];
        pp->seed[r] = seed * 131 + (uint64_t)r;
        pp->off[r] = (uint64_t)r * 7;
        pp->top_k[r] = ks[r % 4];
        pp->top_p[r] = ps[(r / 4) % 4];
        pp->min_p[r] = mps[(r / 2) % 4];
    }
    fst_params_wire(pp);
    if (filters) {
        pp->p.top_k = pp->top_k;
        pp->p.top_p = pp->top_p;
        pp->p.min_p = pp->min_p;
        pp->p.out_filter_fallback = pp->fallback;
    }
}

static void free_inputs(inputs *in)
{
    free(in->weight);
    free(in->hidden);
    free(in->logits);
    fst_free_params(&in->pp);
}

typedef struct outputs {
    int32_t tok[ROWS * (K + 1)], nem[ROWS], st[ROWS], fallback[ROWS];
    float lp[ROWS * (K + 1)];
    fs_status ret;
} outputs;

enum op { SAMPLE, ARGMAX, VERIFY };

/* Verify: R requests of 0..K drafts (target argmax or random tokens) over
 * the first num_drafts + R rows. */
static fs_drafts drafts_of(int32_t *tokens, int32_t *offsets, uint64_t seed)
{
    fst_rng g;
    fst_rng_seed(&g, seed);
    offsets[0] = 0;
    for (int r = 0; r < R; ++r)
        offsets[r + 1] = offsets[r] + (int32_t)(r % (K + 1));
    for (int i = 0; i < offsets[R]; ++i)
        tokens[i] = (int32_t)fst_randint(&g, V);
    return (fs_drafts){R, offsets[R], K, tokens, offsets};
}

static void run(enum op op, int fused, inputs *in, const fs_drafts *d, outputs *o)
{
    fs_context *ctx = fst_cpu_ctx();
    fs_lm_head head = {in->weight, V, D, in->dt};
    const fs_sampling *p = &in->pp.p;
    memset(o, 0xff, sizeof *o);
    memset(in->pp.fallback, 0xff, sizeof(int32_t) * ROWS);
    if (op == SAMPLE)
        o->ret = fused ? fst_sample(ctx, &head, in->hidden, ROWS, p, o->tok, o->lp, o->st)
                       : fst_sample_logits(ctx, in->logits, in->dt, ROWS, V, p, o->tok, o->lp,
                                           o->st);
    else if (op == ARGMAX)
        o->ret = fused ? fst_argmax(ctx, &head, in->hidden, ROWS, o->tok, o->lp, o->st)
                       : fst_argmax_logits(ctx, in->logits, in->dt, ROWS, V, o->tok, o->lp,
                                           o->st);
    else
        o->ret = fused ? fst_verify(ctx, &head, in->hidden, d, p, o->tok, o->nem, o->lp, o->st)
                       : fst_verify_logits(ctx, in->logits, in->dt, V, d, p, o->tok, o->nem,
                                           o->lp, o->st);
    memcpy(o->fallback, in->pp.fallback, sizeof o->fallback);
    fs_context_destroy(ctx);
}

/* Returns the number of fields that differ; logprobs within 1e-4 (both NaN
 * for sentinels). */
static int compare(enum op op, const outputs *a, const outputs *b, int filters, const char *what)
{
    int n = op == VERIFY ? R : ROWS, width = op == VERIFY ? K + 1 : 1, bad = 0;
    if (a->ret != b->ret)
        ++bad;
    for (int r = 0; r < n; ++r) {
        bad += a->st[r] != b->st[r];
        if (op == VERIFY)
            bad += a->nem[r] != b->nem[r];
        if (filters && op != ARGMAX)
            bad += a->fallback[r] != b->fallback[r];
        for (int k = 0; k < width; ++k) {
            int i = r * width + k;
            int diff = a->tok[i] != b->tok[i] ||
                       (isnan(a->lp[i]) != isnan(b->lp[i])) ||
                       (!isnan(a->lp[i]) && fabsf(a->lp[i] - b->lp[i]) > 1e-4f);
            if (diff && bad < 8)
                print_message("  %s: row %d slot %d: token %d lp %g, unsharded %d lp %g\n",
                              what, r, k, b->tok[i], b->lp[i], a->tok[i], a->lp[i]);
            bad += diff;
        }
    }
    return bad;
}

static void test_every_op_sharded(void **state)
{
    (void)state;
    static const fs_dtype dts[2] = {FS_DTYPE_F32, FS_DTYPE_BF16};
    int32_t dtok[R * K], doff[R + 1];
    int cases = 0, fallbacks = 0;
    for (int filters = 0; filters <= 1; ++filters)
        for (int di = 0; di < 2; ++di)
            for (int op = SAMPLE; op <= VERIFY; ++op) {
                if (op == ARGMAX && filters)
                    continue;
                for (int fused = 0; fused <= 1; ++fused) {
                    inputs in;
                    make_inputs(&in, dts[di], filters, 40 + (uint64_t)(di * 8 + op * 2 + fused));
                    fs_drafts d = drafts_of(dtok, doff, 99 + (uint64_t)op);
                    outputs ref, got;
                    fs_cpu_set_vocab_shards(0, NULL);
                    run(op, fused, &in, &d, &ref);
                    for (int n = 0; n < ROWS; ++n)
                        fallbacks += filters && op == SAMPLE && ref.fallback[n] > 0;
                    for (size_t s = 0; s < sizeof SPLITS / sizeof SPLITS[0]; ++s) {
                        assert_int_equal(fs_cpu_set_vocab_shards(SPLITS[s].n, SPLITS[s].cuts), 0);
                        run(op, fused, &in, &d, &got);
                        fs_cpu_set_vocab_shards(0, NULL);
                        char what[96];
                        snprintf(what, sizeof what, "%s %s %s%s, %d shards",
                                 op == SAMPLE ? "sample" : op == ARGMAX ? "argmax" : "verify",
                                 fused ? "fused" : "logits", fst_dtype_name(dts[di]),
                                 filters ? " +filters" : "", SPLITS[s].n);
                        if (compare(op, &ref, &got, filters, what) != 0)
                            fail_msg("%s differs from the unsharded call", what);
                        ++cases;
                    }
                    free_inputs(&in);
                }
            }
    /* the filtered cases must reach the second pass, or its sharded
       histograms go untested */
    assert_true(fallbacks > 0);
    print_message("%d sharded cases equal to the unsharded call (%d filtered sample rows took "
                  "the second pass)\n", cases, fallbacks);
}

/* Splits a rank layout could not have are refused and change nothing. */
static void test_bad_splits(void **state)
{
    (void)state;
    const int64_t not16[3] = {0, 100, V}, descending[3] = {0, 320, 160},
                  offset[3] = {16, 320, V};
    assert_int_equal(fs_cpu_set_vocab_shards(2, not16), -1);
    assert_int_equal(fs_cpu_set_vocab_shards(2, descending), -1);
    assert_int_equal(fs_cpu_set_vocab_shards(2, offset), -1);
    assert_int_equal(fs_cpu_set_vocab_shards(FS_CPU_MAX_SHARDS + 1, not16), -1);
    assert_int_equal(fs_cpu_set_vocab_shards(0, NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_every_op_sharded, fst_reset_hooks, fst_reset_hooks),
        cmocka_unit_test_setup_teardown(test_bad_splits, fst_reset_hooks, fst_reset_hooks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
