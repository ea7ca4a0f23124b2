/* Which Hopper kernel each op takes by chip and row count, as the context's
 * knobs and hopper_opts_for (cuda_ops.cu) resolve them (kernels/hopper_policy.h): the
 * measured rules of scan_hopper.cu written out as a table, so that a change
 * of a default -- or a knob that overwrites one, as the unset
 * FLASHSPEC_TILE_EW_MIN_ROWS once overwrote an H200's 80-row epilogue
 * warps with 128 -- fails here and not only in a benchmark.  No GPU needed:
 * the chip is given as its memory's class (fast_hbm), the knobs come from
 * the environment this test sets. */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if FS_HAVE_CUDA
#include "../kernels/hopper_policy.h"

enum { TILE = 1, ROWS = 2 };

/* Every knob fs_cuda_context_knobs reads that moves a kernel choice. */
static const char *const knobs[] = {
    "FLASHSPEC_HOPPER_ROWS_EARLY", "FLASHSPEC_HOPPER_ROWS_MIN", "FLASHSPEC_TILE_EPI_WG",
    "FLASHSPEC_TILE_EW_MIN_ROWS", "FLASHSPEC_TILE_PAIRS_MIN", "FLASHSPEC_TILE_PAIRS_128",
    "FLASHSPEC_TILE_GROUPS_MAX", "FLASHSPEC_TILE_BN_STEP",
    "FLASHSPEC_HOPPER_ROWS_TIE128",
    "FLASHSPEC_HOPPER_NO_MULTICAST", "FLASHSPEC_HOPPER_ODD_PAIRS", "FLASHSPEC_HOPPER_ROW_BLOCK",
    "FLASHSPEC_HOPPER_ROWS_JOBS", "FLASHSPEC_W_STREAM", "FLASHSPEC_W_HINT"};

/* A context as fs_cuda_context_init leaves it on a chip of this class, with
 * the environment's knobs: "NAME=VALUE;NAME=VALUE" (NULL: none). */
static fs_context ctx_for(int fast_hbm, const char *env)
{
    for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; ++i)
        unsetenv(knobs[i]);
    char buf[256];
    if (env) {
        snprintf(buf, sizeof buf, "%s", env);
        for (char *kv = strtok(buf, ";"); kv; kv = strtok(NULL, ";")) {
            char *eq = strchr(kv, '=');
            assert_non_null(eq);
            *eq = '\0';
            setenv(kv, eq + 1, 1);
        }
    }
    fs_context ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.kind = FS_DEVICE_CUDA;
    ctx.hopper = 1;
    ctx.sm_count = 132;
    fs_cuda_context_knobs(&ctx, fast_hbm);
    return ctx;
}

static const char *op_name(fs_op op)
{
    return op == FS_OP_SAMPLE   ? "sample"
           : op == FS_OP_ARGMAX ? "argmax"
           : op == FS_OP_VERIFY ? "verify"
                                : "tree";
}

/* The pick for rows lo..hi must be kernel / bn / ew / pair (bn 0: any). */
static void expect(const fs_context *ctx, fs_op op, int64_t D, int64_t lo, int64_t hi,
                   int kernel, int bn, int ew, int pair)
{
    for (int64_t rows = lo; rows <= hi; ++rows) {
        const fs_hopper_pick p = fs_hopper_pick_for(ctx, op, rows, D);
        const int ok = p.kernel == kernel &&
                       (kernel == ROWS || ((bn == 0 || p.bn == bn) && p.ew == ew && p.pair == pair));
        if (!ok) {
            fprintf(stderr,
                    "%s, D %lld, %lld rows: kernel %d bn %d ew %d pair %d; expected kernel %d "
                    "bn %d ew %d pair %d\n",
                    op_name(op), (long long)D, (long long)rows, p.kernel, p.bn, p.ew, p.pair,
                    kernel, bn, ew, pair);
            fail();
        }
    }
}

static const fs_op all_ops[] = {FS_OP_SAMPLE, FS_OP_ARGMAX, FS_OP_VERIFY, FS_OP_VERIFY_TREE};
#define N_OPS (sizeof all_ops / sizeof all_ops[0])

/* An H200 by default: the epilogue warps from the 48-row block where
 * D <= 5120, from the 80-row one where larger, the tile kernel up to 160
 * rows for every op but 104-128 rows where D > 5120 (trees there too), the
 * rows kernel at 161-192 rows, the pairs at 193-240 in 104-120-row halves,
 * at 241-256 in 128-row halves for sample and
 * verify where D <= 5120 and for trees (else the rows kernel), the pairs
 * at 257-320 in halves that step by 8 rows, past them the pairs in two or
 * three row groups up to 960 rows where they pad fewer rows than the rows
 * kernel and in four at 1025-1088 rows but for trees, else the rows
 * kernel (fs_hopper_ew_min_fast_hbm, fs_hopper_rows_span_ew80,
 * fs_hopper_pairs_min, fs_hopper_pairs_128, fs_hopper_groups_max). */
static void test_h200_defaults(void **state)
{
    (void)state;
    const fs_context ctx = ctx_for(1, NULL);
    static const int64_t dims[] = {3072, 4096, 5120, 8192};
    for (size_t i = 0; i < N_OPS; ++i)
        for (size_t d = 0; d < sizeof dims / sizeof dims[0]; ++d) {
            const fs_op op = all_ops[i];
            const int64_t D = dims[d];
            expect(&ctx, op, D, 1, 16, TILE, 16, 0, 0);
            expect(&ctx, op, D, 17, 32, TILE, 32, 0, 0);
            expect(&ctx, op, D, 33, 48, TILE, 48, D <= 5120, 0);
            expect(&ctx, op, D, 49, 64, TILE, 64, D <= 5120, 0);
            expect(&ctx, op, D, 65, 80, TILE, 80, 1, 0);
            expect(&ctx, op, D, 81, 96, TILE, 96, 1, 0);
            expect(&ctx, op, D, 97, 103, TILE, 128, 1, 0);
            if (D > 5120 && op != FS_OP_VERIFY_TREE)
                expect(&ctx, op, D, 104, 128, ROWS, 0, 0, 0);
            else
                expect(&ctx, op, D, 104, 128, TILE, 128, 1, 0);
            expect(&ctx, op, D, 129, 136, TILE, 136, 1, 0);
            expect(&ctx, op, D, 137, 144, TILE, 144, 1, 0);
            expect(&ctx, op, D, 145, 152, TILE, 152, 1, 0);
            expect(&ctx, op, D, 153, 160, TILE, 160, 1, 0);
            expect(&ctx, op, D, 161, 192, ROWS, 0, 0, 0);
            expect(&ctx, op, D, 193, 208, TILE, 104, 1, 1);
            expect(&ctx, op, D, 209, 224, TILE, 112, 1, 1);
            expect(&ctx, op, D, 225, 240, TILE, 120, 1, 1);
            if (((op == FS_OP_SAMPLE || op == FS_OP_VERIFY) && D <= 5120) ||
                op == FS_OP_VERIFY_TREE)
                expect(&ctx, op, D, 241, 256, TILE, 128, 1, 1);
            else
                expect(&ctx, op, D, 241, 256, ROWS, 0, 0, 0);
            expect(&ctx, op, D, 257, 272, TILE, 136, 1, 1);
            expect(&ctx, op, D, 273, 288, TILE, 144, 1, 1);
            expect(&ctx, op, D, 289, 304, TILE, 152, 1, 1);
            expect(&ctx, op, D, 305, 320, TILE, 160, 1, 1);
            /* pairs in two and three row groups where they pad fewer rows */
            expect(&ctx, op, D, 321, 384, ROWS, 0, 0, 0);
            expect(&ctx, op, D, 385, 416, TILE, 104, 1, 1);
            expect(&ctx, op, D, 417, 448, TILE, 112, 1, 1);
            expect(&ctx, op, D, 449, 480, TILE, 120, 1, 1);
            expect(&ctx, op, D, 481, 512, ROWS, 0, 0, 0);
            expect(&ctx, op, D, 513, 544, TILE, 136, 1, 1);
            expect(&ctx, op, D, 545, 576, ROWS, 0, 0, 0);
            expect(&ctx, op, D, 577, 608, TILE, 152, 1, 1);
            expect(&ctx, op, D, 609, 640, ROWS, 0, 0, 0);
            expect(&ctx, op, D, 641, 672, TILE, 112, 1, 1);
            expect(&ctx, op, D, 673, 720, TILE, 120, 1, 1);
            expect(&ctx, op, D, 721, 768, ROWS, 0, 0, 0);
            expect(&ctx, op, D, 769, 816, TILE, 136, 1, 1);
            expect(&ctx, op, D, 817, 864, TILE, 144, 1, 1);
            expect(&ctx, op, D, 865, 896, ROWS, 0, 0, 0);
            expect(&ctx, op, D, 897, 912, TILE, 152, 1, 1);
            expect(&ctx, op, D, 913, 1024, ROWS, 0, 0, 0);
            /* four groups (1025-1088 rows) but for trees */
            if (op == FS_OP_VERIFY_TREE)
                expect(&ctx, op, D, 1025, 1088, ROWS, 0, 0, 0);
            else
                expect(&ctx, op, D, 1025, 1088, TILE, 136, 1, 1);
            expect(&ctx, op, D, 1089, 1152, ROWS, 0, 0, 0);
        }
}

/* An H100 by default: the tile kernel up to 96 rows with its plain blocks
 * (the epilogue warps from 128 rows, which it never takes there), the rows
 * kernel from 97 (FS_HOPPER_ROWS_MIN_DEFAULT), no pairs. */
static void test_h100_defaults(void **state)
{
    (void)state;
    const fs_context ctx = ctx_for(0, NULL);
    for (size_t i = 0; i < N_OPS; ++i)
        for (int64_t D = 3072; D <= 8192; D += 1024) {
            const fs_op op = all_ops[i];
            expect(&ctx, op, D, 1, 16, TILE, 16, 0, 0);
            expect(&ctx, op, D, 65, 80, TILE, 80, 0, 0);
            expect(&ctx, op, D, 81, 96, TILE, 96, 0, 0);
            expect(&ctx, op, D, 97, 1024, ROWS, 0, 0, 0);
        }
}

/* An H200 with the epilogue warps only from the 128-row block
 * (FLASHSPEC_TILE_EW_MIN_ROWS=128): the earlier rules, by op and hidden
 * size (fs_hopper_rows_min_fast_hbm, fs_hopper_rows_max_fast_hbm). */
static void test_h200_ew128(void **state)
{
    (void)state;
    const fs_context ctx = ctx_for(1, "FLASHSPEC_TILE_EW_MIN_ROWS=128");
    /* sample and verify, D <= 3072: the rows kernel 65-96, the tile kernel's
       EW blocks 97-160 */
    expect(&ctx, FS_OP_SAMPLE, 3072, 49, 64, TILE, 64, 0, 0);
    expect(&ctx, FS_OP_SAMPLE, 3072, 65, 96, ROWS, 0, 0, 0);
    expect(&ctx, FS_OP_SAMPLE, 3072, 97, 128, TILE, 128, 1, 0);
    expect(&ctx, FS_OP_VERIFY, 3072, 129, 160, TILE, 0, 1, 0);
    /* D = 4096: the plain 80-row block, the rows kernel 81-96 */
    expect(&ctx, FS_OP_VERIFY, 4096, 65, 80, TILE, 80, 0, 0);
    expect(&ctx, FS_OP_VERIFY, 4096, 81, 96, ROWS, 0, 0, 0);
    expect(&ctx, FS_OP_VERIFY, 4096, 97, 160, TILE, 0, 1, 0);
    /* draft argmax: the tile kernel up to 160 rows where D > 3072 */
    expect(&ctx, FS_OP_ARGMAX, 4096, 65, 96, TILE, 0, 0, 0);
    expect(&ctx, FS_OP_ARGMAX, 4096, 97, 160, TILE, 0, 1, 0);
    expect(&ctx, FS_OP_ARGMAX, 3072, 81, 96, ROWS, 0, 0, 0);
    /* trees: the rows kernel from 81 rows up to 192 where D <= 5120 (the
       pairs from 193) */
    expect(&ctx, FS_OP_VERIFY_TREE, 4096, 81, 192, ROWS, 0, 0, 0);
    expect(&ctx, FS_OP_VERIFY_TREE, 4096, 193, 240, TILE, 0, 1, 1);
    expect(&ctx, FS_OP_VERIFY_TREE, 8192, 97, 128, ROWS, 0, 0, 0);
    expect(&ctx, FS_OP_VERIFY_TREE, 8192, 129, 160, TILE, 0, 1, 0);
    /* the pairs are the chip's, whatever the EW blocks */
    expect(&ctx, FS_OP_SAMPLE, 4096, 257, 320, TILE, 0, 1, 1);
}

/* Knobs the tests and A/B runs set: the rows kernel for every count
 * (FLASHSPEC_HOPPER_ROWS_MIN=1, no pairs), the pairs from 161 rows
 * (FLASHSPEC_TILE_PAIRS_MIN, also on an H100), no epilogue warps
 * (FLASHSPEC_TILE_EPI_WG=0: no pairs either), the early rows kernel off on
 * an H200 (FLASHSPEC_HOPPER_ROWS_EARLY=0: an H100's rules). */
static void test_knobs(void **state)
{
    (void)state;
    for (int fast = 0; fast < 2; ++fast) {
        const fs_context all_rows = ctx_for(fast, "FLASHSPEC_HOPPER_ROWS_MIN=1");
        expect(&all_rows, FS_OP_SAMPLE, 4096, 1, 1024, ROWS, 0, 0, 0);
        expect(&all_rows, FS_OP_VERIFY_TREE, 8192, 1, 400, ROWS, 0, 0, 0);
        const fs_context pairs = ctx_for(fast, "FLASHSPEC_TILE_PAIRS_MIN=161");
        expect(&pairs, FS_OP_ARGMAX, 4096, 161, 208, TILE, 104, 1, 1);
        expect(&pairs, FS_OP_ARGMAX, 4096, 233, 240, TILE, 120, 1, 1);
        expect(&pairs, FS_OP_ARGMAX, 4096, 241, 256, ROWS, 0, 0, 0);
        expect(&pairs, FS_OP_SAMPLE, 4096, 241, 256, fast ? TILE : ROWS, fast ? 128 : 0, fast,
               fast);
        expect(&pairs, FS_OP_VERIFY, 4096, 289, 304, TILE, 152, 1, 1);
        expect(&pairs, FS_OP_VERIFY, 4096, 305, 320, TILE, 160, 1, 1);
        expect(&pairs, FS_OP_VERIFY, 4096, 321, 384, ROWS, 0, 0, 0);
        /* 241-256 rows in the pairs for every op, or for none (where the
           chip takes pairs at all) */
        const fs_context p128_on = ctx_for(fast, "FLASHSPEC_TILE_PAIRS_128=1");
        expect(&p128_on, FS_OP_SAMPLE, 8192, 241, 256, fast ? TILE : ROWS, fast ? 128 : 0, fast,
               fast);
        expect(&p128_on, FS_OP_ARGMAX, 4096, 241, 256, fast ? TILE : ROWS, fast ? 128 : 0, fast,
               fast);
        const fs_context p128_off = ctx_for(fast, "FLASHSPEC_TILE_PAIRS_128=0");
        expect(&p128_off, FS_OP_SAMPLE, 4096, 241, 256, ROWS, 0, 0, 0);
        expect(&p128_off, FS_OP_VERIFY_TREE, 3072, 241, 256, ROWS, 0, 0, 0);
        expect(&p128_off, FS_OP_VERIFY_TREE, 3072, 225, 240, fast ? TILE : ROWS, fast ? 120 : 0,
               fast, fast);
        const fs_context no_pairs = ctx_for(fast, "FLASHSPEC_TILE_PAIRS_MIN=0");
        expect(&no_pairs, FS_OP_SAMPLE, 3072, 161, 400, ROWS, 0, 0, 0);
        /* pairs in row groups of up to 320 rows, where they pad fewer rows
           than the rows kernel's 128- or 192-row blocks */
        const fs_context groups = ctx_for(fast, "FLASHSPEC_TILE_GROUPS_MAX=2560");
        expect(&groups, FS_OP_SAMPLE, 4096, 321, 384, ROWS, 0, 0, 0);
        expect(&groups, FS_OP_SAMPLE, 4096, 385, 416, TILE, 104, 1, 1);
        expect(&groups, FS_OP_VERIFY, 3072, 449, 480, TILE, 120, 1, 1);
        expect(&groups, FS_OP_ARGMAX, 4096, 481, 512, ROWS, 0, 0, 0);
        expect(&groups, FS_OP_ARGMAX, 4096, 513, 544, TILE, 136, 1, 1);
        expect(&groups, FS_OP_ARGMAX, 4096, 545, 576, ROWS, 0, 0, 0);
        expect(&groups, FS_OP_VERIFY, 4096, 577, 608, TILE, 152, 1, 1);
        expect(&groups, FS_OP_VERIFY, 4096, 609, 640, ROWS, 0, 0, 0);
        expect(&groups, FS_OP_VERIFY_TREE, 8192, 641, 672, TILE, 112, 1, 1);
        expect(&groups, FS_OP_VERIFY_TREE, 8192, 673, 720, TILE, 120, 1, 1);
        expect(&groups, FS_OP_SAMPLE, 4096, 721, 768, ROWS, 0, 0, 0);
        expect(&groups, FS_OP_SAMPLE, 4096, 769, 816, TILE, 136, 1, 1);
        expect(&groups, FS_OP_SAMPLE, 4096, 817, 864, TILE, 144, 1, 1);
        expect(&groups, FS_OP_SAMPLE, 4096, 961, 1024, ROWS, 0, 0, 0);
        expect(&groups, FS_OP_SAMPLE, 4096, 1025, 1088, TILE, 136, 1, 1);
        expect(&groups, FS_OP_SAMPLE, 4096, 1089, 1152, ROWS, 0, 0, 0);
        const fs_context groups_700 = ctx_for(fast, "FLASHSPEC_TILE_GROUPS_MAX=700");
        expect(&groups_700, FS_OP_SAMPLE, 4096, 449, 480, TILE, 120, 1, 1);
        expect(&groups_700, FS_OP_SAMPLE, 4096, 701, 720, ROWS, 0, 0, 0);
    }
    /* the single CTAs' row blocks past 128 rows in steps of 16 */
    const fs_context step16 = ctx_for(1, "FLASHSPEC_TILE_BN_STEP=16");
    expect(&step16, FS_OP_VERIFY_TREE, 4096, 129, 144, TILE, 144, 1, 0);
    expect(&step16, FS_OP_SAMPLE, 4096, 145, 160, TILE, 160, 1, 0);
    expect(&step16, FS_OP_SAMPLE, 4096, 257, 272, TILE, 136, 1, 1); /* pairs' halves keep theirs */
    const fs_context step7 = ctx_for(1, "FLASHSPEC_TILE_BN_STEP=7");
    expect(&step7, FS_OP_ARGMAX, 4096, 129, 136, TILE, 136, 1, 0);
    const fs_context no_ew = ctx_for(1, "FLASHSPEC_TILE_EPI_WG=0");
    expect(&no_ew, FS_OP_SAMPLE, 4096, 65, 80, TILE, 80, 0, 0);
    expect(&no_ew, FS_OP_SAMPLE, 4096, 81, 1024, ROWS, 0, 0, 0);
    expect(&no_ew, FS_OP_ARGMAX, 4096, 97, 160, ROWS, 0, 0, 0);
    const fs_context no_ew_groups = ctx_for(1, "FLASHSPEC_TILE_EPI_WG=0;FLASHSPEC_TILE_GROUPS_MAX=2560");
    expect(&no_ew_groups, FS_OP_SAMPLE, 4096, 385, 480, ROWS, 0, 0, 0);
    const fs_context h100_rules = ctx_for(1, "FLASHSPEC_HOPPER_ROWS_EARLY=0");
    expect(&h100_rules, FS_OP_SAMPLE, 4096, 81, 96, TILE, 96, 0, 0);
    expect(&h100_rules, FS_OP_SAMPLE, 4096, 97, 320, ROWS, 0, 0, 0);
    const fs_context ew80_h100 = ctx_for(0, "FLASHSPEC_TILE_EW_MIN_ROWS=80");
    expect(&ew80_h100, FS_OP_VERIFY, 4096, 65, 80, TILE, 80, 1, 0);
    expect(&ew80_h100, FS_OP_VERIFY, 4096, 97, 320, ROWS, 0, 0, 0);
    /* values the knob does not take fall back to the chip's default */
    const fs_context odd = ctx_for(1, "FLASHSPEC_TILE_EW_MIN_ROWS=100");
    expect(&odd, FS_OP_SAMPLE, 4096, 33, 48, TILE, 48, 1, 0);
    expect(&odd, FS_OP_SAMPLE, 8192, 49, 64, TILE, 64, 0, 0);
    expect(&odd, FS_OP_SAMPLE, 8192, 65, 80, TILE, 80, 1, 0);
    /* the 48- and 64-row EW blocks as set, on either chip */
    const fs_context ew64 = ctx_for(1, "FLASHSPEC_TILE_EW_MIN_ROWS=64");
    expect(&ew64, FS_OP_VERIFY, 8192, 33, 48, TILE, 48, 0, 0);
    expect(&ew64, FS_OP_VERIFY, 8192, 49, 64, TILE, 64, 1, 0);
    expect(&ew64, FS_OP_VERIFY, 8192, 97, 103, TILE, 128, 1, 0);
    expect(&ew64, FS_OP_VERIFY, 8192, 104, 128, ROWS, 0, 0, 0);
    const fs_context ew48_h100 = ctx_for(0, "FLASHSPEC_TILE_EW_MIN_ROWS=48");
    expect(&ew48_h100, FS_OP_SAMPLE, 4096, 33, 48, TILE, 48, 1, 0);
    expect(&ew48_h100, FS_OP_SAMPLE, 4096, 97, 128, ROWS, 0, 0, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_h200_defaults),
        cmocka_unit_test(test_h100_defaults),
        cmocka_unit_test(test_h200_ew128),
        cmocka_unit_test(test_knobs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void)
{
    return 77; /* the Hopper kernels are the CUDA backend's */
}
#endif
