/* The GPU scans' candidate lists (src/cand_list.h, the code the kernels run),
 * against their definition: after any blocks pushed into any number of
 * lists merged in any order, the list holds the best FS_CAND_LIST finite
 * tokens seen by (score desc, id asc), drop is the largest score of the
 * other finite tokens (-inf if none) and count the number of finite tokens.
 * Scores come from a few values so that ties -- inside a block, across
 * blocks, with the list's last entry -- are common; blocks arrive in random
 * order, so a later block's tokens may precede an entry on id. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cand_list.h"
#include "fs_test.h"

enum { MAX_BLOCKS = 64, MAX_TOK = MAX_BLOCKS * FS_NOISE_BLOCK };

/* The list that FS_CAND_LIST-best-of-everything defines, from the finite
 * tokens of blocks[0 .. nb) (block b holds ids 16 * ids[b] ..). */
static fs_cand_list list_ref(const float (*blocks)[FS_NOISE_BLOCK], const int32_t *ids, int nb)
{
    static fst_tok all[MAX_TOK];
    int n = 0;
    for (int b = 0; b < nb; ++b)
        for (int i = 0; i < FS_NOISE_BLOCK; ++i)
            if (blocks[b][i] > -INFINITY)
                all[n++] = (fst_tok){blocks[b][i], FS_NOISE_BLOCK * ids[b] + i};
    qsort(all, (size_t)n, sizeof(fst_tok), fst_tok_before);
    fs_cand_list r;
    fs_cand_init(&r);
    for (int k = 0; k < n && k < FS_CAND_LIST; ++k) {
        r.s[k] = all[k].s;
        r.id[k] = all[k].id;
    }
    r.drop = n > FS_CAND_LIST ? all[FS_CAND_LIST].s : -INFINITY;
    r.count = n;
    return r;
}

static void assert_list_eq(const fs_cand_list *got, const fs_cand_list *want)
{
    for (int k = 0; k < FS_CAND_LIST; ++k) {
        assert_int_equal(got->id[k], want->id[k]);
        if (want->id[k] >= 0)
            assert_true(got->s[k] == want->s[k]);
        else
            assert_true(got->s[k] == -INFINITY);
    }
    assert_true(got->drop == want->drop);
    assert_int_equal(got->count, want->count);
}

/* A block of scores from `levels` values (ties), -inf with probability
 * p_inf (disallowed), or all -inf. */
static void gen_block(fst_rng *r, float *s, int levels, double p_inf)
{
    const int empty = fst_randint(r, 20) == 0;
    for (int i = 0; i < FS_NOISE_BLOCK; ++i) {
        if (empty || fst_unif(r) < p_inf)
            s[i] = -INFINITY;
        else
            s[i] = (float)fst_randint(r, levels) * 0.25f - 3.0f;
    }
}

/* One list, blocks in random order (ids distinct, not increasing). */
static void test_push_matches_definition(void **state)
{
    (void)state;
    static float blocks[MAX_BLOCKS][FS_NOISE_BLOCK];
    int32_t ids[MAX_BLOCKS];
    int64_t perm[4 * MAX_BLOCKS];
    fst_rng r;
    fst_rng_seed(&r, 11);
    for (int trial = 0; trial < 4000; ++trial) {
        const int nb = 1 + (int)fst_randint(&r, MAX_BLOCKS);
        const int levels = 1 + (int)fst_randint(&r, trial % 2 ? 6 : 400);
        const double p_inf = fst_randint(&r, 3) * 0.3;
        fst_shuffle(&r, perm, 4 * MAX_BLOCKS);
        for (int b = 0; b < nb; ++b) {
            gen_block(&r, blocks[b], levels, p_inf);
            ids[b] = (int32_t)perm[b];
        }
        fs_cand_list c;
        fs_cand_init(&c);
        for (int b = 0; b < nb; ++b) {
            fs_cand_push_block(&c, FS_NOISE_BLOCK * ids[b], blocks[b]);
            const fs_cand_list want = list_ref((const float(*)[FS_NOISE_BLOCK])blocks, ids, b + 1);
            assert_list_eq(&c, &want);
        }
    }
}

/* Blocks spread over several lists, merged in random order: the same list. */
static void test_merge_matches_definition(void **state)
{
    (void)state;
    static float blocks[MAX_BLOCKS][FS_NOISE_BLOCK];
    int32_t ids[MAX_BLOCKS];
    int64_t perm[MAX_BLOCKS];
    enum { LISTS = 7 };
    fst_rng r;
    fst_rng_seed(&r, 12);
    for (int trial = 0; trial < 2000; ++trial) {
        const int nb = 1 + (int)fst_randint(&r, MAX_BLOCKS);
        fst_shuffle(&r, perm, MAX_BLOCKS);
        fs_cand_list part[LISTS];
        for (int k = 0; k < LISTS; ++k)
            fs_cand_init(&part[k]);
        for (int b = 0; b < nb; ++b) {
            gen_block(&r, blocks[b], 1 + (int)fst_randint(&r, 8), 0.2);
            ids[b] = (int32_t)perm[b];
            fs_cand_push_block(&part[fst_randint(&r, LISTS)], FS_NOISE_BLOCK * ids[b], blocks[b]);
        }
        int64_t order[LISTS];
        fst_shuffle(&r, order, LISTS);
        fs_cand_list c = part[order[0]];
        for (int k = 1; k < LISTS; ++k)
            fs_cand_merge(&c, &part[order[k]]);
        const fs_cand_list want = list_ref((const float(*)[FS_NOISE_BLOCK])blocks, ids, nb);
        assert_list_eq(&c, &want);
    }
}

/* Hand-made blocks: a block whose 16 tokens tie, which must enter by id; a
 * later block (lower ids) tying the whole list; one whose best four are its
 * last tokens in reverse order. */
static void test_push_ties_and_order(void **state)
{
    (void)state;
    float a[FS_NOISE_BLOCK], b[FS_NOISE_BLOCK], c[FS_NOISE_BLOCK];
    for (int i = 0; i < FS_NOISE_BLOCK; ++i) {
        a[i] = 1.0f;
        b[i] = i < 8 ? 1.0f : -INFINITY;
        c[i] = i < 12 ? -1.0f : (float)(i - 10);
    }
    fs_cand_list l;
    fs_cand_init(&l);
    fs_cand_push_block(&l, 160, a);
    for (int k = 0; k < FS_CAND_LIST; ++k) {
        assert_int_equal(l.id[k], 160 + k);
        assert_true(l.s[k] == 1.0f);
    }
    assert_true(l.drop == 1.0f);
    fs_cand_push_block(&l, 16, b); /* ids 16..23 tie and precede 160.. */
    for (int k = 0; k < FS_CAND_LIST; ++k)
        assert_int_equal(l.id[k], 16 + k);
    assert_int_equal(l.count, 24);
    fs_cand_push_block(&l, 32, c); /* 2, 3, 4, 5 at ids 44 .. 47: best last */
    const int32_t want_id[FS_CAND_LIST] = {47, 46, 45, 44};
    for (int k = 0; k < FS_CAND_LIST; ++k) {
        assert_int_equal(l.id[k], want_id[k]);
        assert_true(l.s[k] == (float)(FS_CAND_LIST - k + 1));
    }
    assert_true(l.drop == 1.0f);
}

/* NaN is not counted and a block holding NaN ends (its list is not read:
 * the row fails through its record). */
static void test_push_nan(void **state)
{
    (void)state;
    float s[FS_NOISE_BLOCK];
    for (int i = 0; i < FS_NOISE_BLOCK; ++i)
        s[i] = (float)i;
    s[1] = NAN;
    s[6] = NAN;
    fs_cand_list l;
    fs_cand_init(&l);
    fs_cand_push_block(&l, 0, s);
    fs_cand_push_block(&l, 16, s);
    assert_int_equal(l.count, 2 * (FS_NOISE_BLOCK - 2));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_push_matches_definition),
        cmocka_unit_test(test_merge_matches_definition),
        cmocka_unit_test(test_push_ties_and_order),
        cmocka_unit_test(test_push_nan),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
