/* The rows kernel's launch plan (kernels/scan_hopper_rows.cu, rows_plan),
 * walked on the host as the kernel walks it: every (row block, unit) of the
 * vocabulary scanned exactly once, clusters whose two CTAs run the same slots,
 * and several jobs a CTA only where they shorten the longest CTA.  No GPU
 * needed (multicast off keeps the plan from asking the device how many
 * clusters fit; with a GPU the multicast cases ask it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>

#if FS_HAVE_CUDA
#include "../kernels/rows_plan.h"

typedef struct {
    int64_t slots, grid, max_tiles;
} plan_t;

static plan_t plan_ok(int64_t V, int64_t rows, int sms, int multicast, int row_block, int jobs)
{
    plan_t p = {0, 0, 0};
    const int rc = fs_hopper_rows_plan_check(V, rows, sms, multicast, row_block, jobs, &p.slots,
                                             &p.grid, &p.max_tiles);
    if (rc != 0)
        fprintf(stderr, "plan fails: V %lld rows %lld sms %d multicast %d block %d jobs %d\n",
                (long long)V, (long long)rows, sms, multicast, row_block, jobs);
    assert_int_equal(rc, 0);
    return p;
}

/* Every plan covers the vocabulary exactly once: vocabularies with a half
 * last tile and with fewer units than CTAs, row blocks of 128 and 192,
 * clustered or not, one job a CTA or forced several. */
static void test_coverage(void **state)
{
    (void)state;
    static const int64_t vs[] = {1, 128, 1000, 32000, 50257, 128256, 151936, 262144};
    static const int64_t rows[] = {1, 97, 160, 192, 200, 257, 320, 513, 777, 1000, 1024, 2112};
    static const int sms[] = {1, 78, 114, 132};
    static const int blocks[] = {0, 128, 192};
    static const int jobs[] = {0, 1, 2, 3, 8};
    for (size_t v = 0; v < sizeof vs / sizeof vs[0]; ++v)
        for (size_t r = 0; r < sizeof rows / sizeof rows[0]; ++r)
            for (size_t s = 0; s < sizeof sms / sizeof sms[0]; ++s)
                for (int mc = 0; mc < 3; ++mc)
                    for (size_t b = 0; b < sizeof blocks / sizeof blocks[0]; ++b)
                        for (size_t j = 0; j < sizeof jobs / sizeof jobs[0]; ++j)
                            (void)plan_ok(vs[v], rows[r], sms[s], mc, blocks[b], jobs[j]);
}

/* 1024 rows of 151936 tokens on 132 SMs: 8 row blocks.  One job a CTA gives
 * 16 slots on 128 CTAs, the longest 38 tiles (75 units); two jobs a CTA give
 * 33 slots on all 132 CTAs and 36 tiles, and the automatic plan takes them. */
static void test_jobs_where_they_pay(void **state)
{
    (void)state;
    const plan_t one = plan_ok(151936, 1024, 132, 0, 0, 1);
    assert_int_equal(one.slots, 16);
    assert_int_equal(one.grid, 128);
    assert_int_equal(one.max_tiles, 38);
    const plan_t two = plan_ok(151936, 1024, 132, 0, 0, 2);
    assert_int_equal(two.slots, 33);
    assert_int_equal(two.grid, 132);
    assert_int_equal(two.max_tiles, 36);
    const plan_t aut = plan_ok(151936, 1024, 132, 0, 0, 0);
    assert_int_equal(aut.slots, two.slots);
    assert_int_equal(aut.grid, two.grid);
    /* 2112 rows (64 trees of 32 nodes) in 128-row blocks (the automatic
       choice is 11 blocks of 192): 17 row blocks, 7 on 132 SMs a slot */
    const plan_t t1 = plan_ok(128256, 2112, 132, 0, 128, 1);
    const plan_t ta = plan_ok(128256, 2112, 132, 0, 128, 0);
    assert_true(ta.max_tiles < t1.max_tiles);
    assert_int_equal(ta.grid, 132);
}

/* An odd count of row blocks in 2-CTA clusters (multicast 2): one job a
 * CTA, an even number of slots (their last row blocks pair across slots),
 * and the plan check walks the layout (pairs of a slot, then the last
 * blocks).  A single row block pairs slots only in 192-row blocks (they
 * share H; on 99 SMs 98 slots), a single 128-row block and counts where
 * fewer than 2 slots fit run unclustered. */
static void test_odd_pairs(void **state)
{
    (void)state;
    static const struct {
        int64_t rows;
        int block, sms;
        int64_t slots, grid;
    } cs[] = {
        {320, 128, 132, 44, 132}, {640, 128, 132, 26, 130}, {896, 128, 132, 18, 126},
        {528, 192, 132, 44, 132}, {960, 192, 132, 26, 130}, {320, 128, 114, 38, 114},
        {640, 128, 114, 22, 110}, {640, 128, 78, 14, 70},   {320, 128, 99, 32, 96},
        {320, 128, 4, 1, 3},      {160, 192, 132, 132, 132}, {160, 192, 99, 98, 98},
        {128, 128, 99, 99, 99},   {160, 192, 1, 1, 1},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; ++i) {
        const plan_t p = plan_ok(151936, cs[i].rows, cs[i].sms, 2, cs[i].block, 0);
        if (p.slots != cs[i].slots || p.grid != cs[i].grid)
            fprintf(stderr, "rows %lld block %d sms %d: %lld slots %lld CTAs\n",
                    (long long)cs[i].rows, cs[i].block, cs[i].sms, (long long)p.slots,
                    (long long)p.grid);
        assert_int_equal(p.slots, cs[i].slots);
        assert_int_equal(p.grid, cs[i].grid);
        /* several jobs forced: no odd layout, unclustered */
        (void)plan_ok(151936, cs[i].rows, cs[i].sms, 2, cs[i].block, 2);
    }
}

/* Where one job a CTA already fills the SMs evenly, or below four row
 * blocks (the W stream, not the tensor pipe, can bind there), the automatic
 * plan is one job a CTA. */
static void test_one_job_elsewhere(void **state)
{
    (void)state;
    static const int64_t rows[] = {1, 160, 256, 320, 512, 768};
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; ++r) {
        const plan_t one = plan_ok(151936, rows[r], 132, 0, 0, 1);
        const plan_t aut = plan_ok(151936, rows[r], 132, 0, 0, 0);
        assert_int_equal(aut.slots, one.slots);
        assert_int_equal(aut.grid, one.grid);
    }
}

/* The automatic row block: 192 rows where it pads fewer rows, or as many
 * in an even count where 128-row blocks leave one unpaired (draft argmax
 * not at 257-384 rows); a request for 128 or 192 is kept. */
static void test_row_block_choice(void **state)
{
    (void)state;
    static const struct {
        int64_t rows;
        int sample, argmax; /* the expected block for sampling / draft argmax */
    } cs[] = {
        {1, 128, 128},      {128, 128, 128},    {129, 192, 192},   {192, 192, 192},
        {193, 128, 128},    {256, 128, 128},    {257, 192, 128},   {320, 192, 128},
        {384, 192, 128},    {385, 128, 128},    {512, 128, 128},   {513, 192, 192},
        {576, 192, 192},    {577, 128, 128},    {704, 128, 128},   {768, 128, 128},
        {897, 192, 192},    {960, 192, 192},    {961, 128, 128},   {1024, 128, 128},
        {1025, 192, 192},   {1152, 192, 192},   {1153, 128, 128},  {1700, 128, 128},
        {2112, 192, 192},   {4160, 192, 192},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; ++i) {
        if (fs_hopper_rows_block(cs[i].rows, 0, 0, NULL) != cs[i].sample ||
            fs_hopper_rows_block(cs[i].rows, 0, 1, NULL) != cs[i].argmax)
            fprintf(stderr, "rows %lld: %d / %d, expected %d / %d\n", (long long)cs[i].rows,
                    fs_hopper_rows_block(cs[i].rows, 0, 0, NULL),
                    fs_hopper_rows_block(cs[i].rows, 0, 1, NULL), cs[i].sample, cs[i].argmax);
        assert_int_equal(fs_hopper_rows_block(cs[i].rows, 0, 0, NULL), cs[i].sample);
        assert_int_equal(fs_hopper_rows_block(cs[i].rows, 0, 1, NULL), cs[i].argmax);
        assert_int_equal(fs_hopper_rows_block(cs[i].rows, 128, 0, NULL), 128);
        assert_int_equal(fs_hopper_rows_block(cs[i].rows, 192, 1, NULL), 192);
    }
}

/* An H200's tie-break (fs_rows_tie): where 128- and 192-row blocks pad as
 * many rows, the sampling ops take the block whose longest CTA has fewer
 * rows x units -- 192 when even; draft argmax, and every op elsewhere, the
 * rule above (draft argmax at a tie: 128 for 257-384 rows, 192 past 1024).
 * 132 SMs, odd pairs (multicast 2). */
static void test_row_block_tie(void **state)
{
    (void)state;
    static const struct {
        int64_t V, rows;
        int sample, argmax;
    } cs[] = {
        /* 1187 units: 44 x 27 x 128 = 66 x 18 x 192 at 257-384 rows; at
           1025-1152, 14 slots of 85 x 128 against 22 of 54 x 192 */
        {151936, 320, 192, 128},  {151936, 384, 192, 128},  {151936, 1100, 192, 192},
        /* 1002 units: 23 x 128 against 16 x 192 */
        {128256, 264, 128, 128},  {128256, 320, 128, 128},  {128256, 1152, 192, 192},
        /* 2048 units: 47 x 128 against 32 x 192 */
        {262144, 320, 128, 128},
        /* no tie: the rule above */
        {151936, 160, 192, 192},  {128256, 544, 192, 192},  {128256, 704, 128, 128},
        {151936, 2112, 192, 192},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; ++i) {
        const fs_rows_tie tie = {cs[i].V, 132, 2};
        const int s = fs_hopper_rows_block(cs[i].rows, 0, 0, &tie);
        const int a = fs_hopper_rows_block(cs[i].rows, 0, 1, &tie);
        if (s != cs[i].sample || a != cs[i].argmax)
            fprintf(stderr, "V %lld rows %lld: %d / %d, expected %d / %d\n", (long long)cs[i].V,
                    (long long)cs[i].rows, s, a, cs[i].sample, cs[i].argmax);
        assert_int_equal(s, cs[i].sample);
        assert_int_equal(a, cs[i].argmax);
        assert_int_equal(fs_hopper_rows_block(cs[i].rows, 192, 1, &tie), 192);
    }
}

/* Arguments the plan cannot serve are refused, not planned. */
static void test_refusals(void **state)
{
    (void)state;
    int64_t s, g, t;
    assert_int_equal(fs_hopper_rows_plan_check(0, 64, 132, 0, 0, 0, &s, &g, &t), -1);
    assert_int_equal(fs_hopper_rows_plan_check(151936, 0, 132, 0, 0, 0, &s, &g, &t), -1);
    assert_int_equal(fs_hopper_rows_plan_check(151936, 64, 0, 0, 0, 0, &s, &g, &t), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_coverage),
        cmocka_unit_test(test_jobs_where_they_pay),
        cmocka_unit_test(test_odd_pairs),
        cmocka_unit_test(test_one_job_elsewhere),
        cmocka_unit_test(test_row_block_choice),
        cmocka_unit_test(test_row_block_tie),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void)
{
    return 77; /* the plan is the CUDA backend's */
}
#endif
