/* Philox4x32-10 and the noise built on it: known-answer vectors, the
 * documented coordinate -> counter mapping, uniforms strictly inside (0, 1),
 * and noise that is a pure function of (seed, offset, position, token,
 * purpose) in which every coordinate matters. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fs_test.h"
#include "philox.h"
#include "record.h" /* FS_NOISE_BLOCK */

#ifndef FS_KAT_FILE
#error "FS_KAT_FILE must name tests/data/philox_kat.txt"
#endif

static void test_known_answers(void **state)
{
    (void)state;
    FILE *f = fopen(FS_KAT_FILE, "r");
    if (!f)
        fail_msg("cannot open %s", FS_KAT_FILE);
    char line[512];
    int vectors = 0;
    while (fgets(line, sizeof line, f)) {
        const char *s = line;
        while (*s == ' ' || *s == '\t')
            ++s;
        if (*s == '#' || *s == '\n' || *s == '\0')
            continue;
        unsigned c[4], k[2], o[4];
        int n = sscanf(s, "%x %x %x %x %x %x %x %x %x %x", &c[0], &c[1], &c[2], &c[3], &k[0],
                       &k[1], &o[0], &o[1], &o[2], &o[3]);
        if (n != 10)
            fail_msg("malformed KAT line: %s", line);
        fs_u32x4 ctr = {{c[0], c[1], c[2], c[3]}};
        fs_u32x4 got = fs_philox4x32_10(ctr, k[0], k[1]);
        for (int i = 0; i < 4; ++i)
            if (got.v[i] != o[i])
                fail_msg("KAT %d word %d: got %08x, expected %08x", vectors, i, got.v[i], o[i]);
        ++vectors;
    }
    fclose(f);
    assert_true(vectors >= 3);
}

/* The Gumbel noise of noise block `blk`. */
static float block_gumbel(uint64_t seed, uint64_t offset, uint32_t pos, uint32_t blk)
{
    uint32_t wg, wu;
    fs_block_words(seed, offset, pos, blk, &wg, &wu);
    return fs_gumbel(wg);
}

static float block_uniform(uint64_t seed, uint64_t offset, uint32_t pos, uint32_t blk)
{
    uint32_t wg, wu;
    fs_block_words(seed, offset, pos, blk, &wg, &wu);
    return fs_uniform(wu);
}

/* The coordinate mapping documented in philox.h, pinned: the GPU kernels and
 * any other backend must reproduce exactly these numbers. */
static void test_counter_mapping(void **state)
{
    (void)state;
    fst_rng r;
    fst_rng_seed(&r, 7);
    for (int it = 0; it < 2000; ++it) {
        uint64_t seed = fst_next(&r), offset = fst_next(&r);
        uint32_t pos = (uint32_t)fst_randint(&r, 1 << 24);
        uint32_t blk = (uint32_t)fst_randint(&r, INT32_MAX) / FS_NOISE_BLOCK;
        fs_u32x4 c = {{blk >> 1, pos, (uint32_t)offset, (uint32_t)(offset >> 32)}};
        fs_u32x4 w = fs_philox4x32_10(c, (uint32_t)seed, (uint32_t)(seed >> 32));
        fs_u32x4 w2 = fs_philox_draw(seed, offset, pos, FS_PURPOSE_GUMBEL, blk >> 1);
        assert_memory_equal(&w, &w2, sizeof w);
        uint32_t wg, wu;
        fs_block_words(seed, offset, pos, blk, &wg, &wu);
        assert_int_equal(wg, w.v[2 * (blk & 1)]);
        assert_int_equal(wu, w.v[2 * (blk & 1) + 1]);
        float u = ((float)(wg >> 9) + 0.5f) / 8388608.0f;
        float g = -logf(-logf(u));
        float got = block_gumbel(seed, offset, pos, blk);
        if (memcmp(&g, &got, sizeof g) != 0)
            fail_msg("gumbel(seed %llx, offset %llx, pos %u, block %u) = %.9g, expected %.9g",
                     (unsigned long long)seed, (unsigned long long)offset, pos, blk, got, g);
        fs_u32x4 ca = {{0u, pos | (1u << 24), (uint32_t)offset, (uint32_t)(offset >> 32)}};
        fs_u32x4 wa = fs_philox4x32_10(ca, (uint32_t)seed, (uint32_t)(seed >> 32));
        float ua = ((float)(wa.v[0] >> 9) + 0.5f) / 8388608.0f;
        assert_true(ua == fs_accept_uniform(seed, offset, pos));
    }
}

static void test_uniform_strictly_inside(void **state)
{
    (void)state;
    assert_true(fs_uniform(0u) > 0.0f);
    assert_true(fs_uniform(0u) == ldexpf(1.0f, -24));
    assert_true(fs_uniform(0xFFFFFFFFu) < 1.0f);
    assert_true(fs_uniform(0xFFFFFFFFu) == 1.0f - ldexpf(1.0f, -24));
    assert_true(isfinite(fs_gumbel(0u)));
    assert_true(isfinite(fs_gumbel(0xFFFFFFFFu)));
    assert_true(fs_gumbel(0u) < fs_gumbel(0xFFFFFFFFu));
    /* every one of the 2^23 uniform levels (with arbitrary low bits) */
    float prev = 0.0f, prevg = -INFINITY;
    for (uint32_t k = 0; k < (1u << 23); ++k) {
        uint32_t x = (k << 9) | (k * 2654435761u >> 23);
        float u = fs_uniform(x);
        if (!(u > 0.0f && u < 1.0f) || !(u > prev))
            fail_msg("fs_uniform(%08x) = %.9g not in (0,1) or not increasing", x, u);
        float g = fs_gumbel(x);
        if (!isfinite(g) || !(g > prevg))
            fail_msg("fs_gumbel(%08x) = %.9g not finite or not increasing", x, g);
        prev = u;
        prevg = g;
    }
    /* Gumbel noise at the extremes stays well inside float range */
    assert_true(fs_gumbel(0u) > -4.0f);
    assert_true(fs_gumbel(0xFFFFFFFFu) < 18.0f);
}

/* Uniforms and Gumbels from the block stream have the right law (loose:
 * this only catches a broken mapping, e.g. words reused across blocks). */
static void test_noise_distribution(void **state)
{
    (void)state;
    enum { N = 400000, BINS = 64 };
    uint64_t counts[BINS] = {0};
    double prob[BINS];
    double gsum = 0.0, gsq = 0.0;
    for (int i = 0; i < BINS; ++i)
        prob[i] = 1.0 / BINS;
    for (int i = 0; i < N; ++i) {
        /* tokens, positions, offsets and seeds all vary */
        uint64_t seed = 1000 + (uint64_t)(i / 10000);
        float g = block_gumbel(seed, (uint64_t)(i % 7), (uint32_t)(i % 3), (uint32_t)(i % 10000));
        double u = exp(-exp(-(double)g));
        int b = (int)(u * BINS);
        counts[b < BINS ? b : BINS - 1]++;
        gsum += g;
        gsq += (double)g * g;
    }
    fst_chi2 res;
    double p = fst_chi2_test(counts, prob, BINS, &res);
    if (p < 1e-6)
        fail_msg("uniforms not uniform: chi2 %.1f df %d p %.3g", res.stat, res.df, p);
    double mean = gsum / N, var = gsq / N - mean * mean;
    /* Gumbel(0,1): mean = Euler gamma, variance = pi^2/6 */
    assert_true(fabs(mean - 0.5772156649) < 6.0 * sqrt(1.6449 / N));
    assert_true(fabs(var - 1.6449340668) < 0.03);
    /* the in-block uniforms, independent of the block's Gumbel */
    double vsum = 0.0, cross = 0.0;
    for (int i = 0; i < N; ++i) {
        uint64_t seed = 2000 + (uint64_t)(i / 10000);
        uint32_t blk = (uint32_t)(i % 10000);
        double v = block_uniform(seed, 3, 1, blk);
        double u = exp(-exp(-(double)block_gumbel(seed, 3, 1, blk)));
        vsum += v;
        cross += (v - 0.5) * (u - 0.5);
    }
    assert_true(fabs(vsum / N - 0.5) < 6.0 * sqrt(1.0 / 12.0 / N));
    assert_true(fabs(cross / N) < 6.0 / 12.0 / sqrt((double)N));
    /* the acceptance uniforms too */
    double asum = 0.0;
    for (int i = 0; i < N; ++i)
        asum += fs_accept_uniform(77 + (uint64_t)i, (uint64_t)i * 3, (uint32_t)(i % 5));
    assert_true(fabs(asum / N - 0.5) < 6.0 * sqrt(1.0 / 12.0 / N));
}

/* Noise is a pure function of its coordinates, and each coordinate matters. */
static void test_noise_coordinates(void **state)
{
    (void)state;
    fst_rng r;
    fst_rng_seed(&r, 99);
    int same_as_changed = 0;
    for (int it = 0; it < 500; ++it) {
        uint64_t seed = fst_next(&r), off = fst_next(&r);
        uint32_t pos = (uint32_t)fst_randint(&r, 1 << 20);
        uint32_t blk = (uint32_t)(fst_randint(&r, 1 << 24) * 2);
        float g = block_gumbel(seed, off, pos, blk);
        /* pure: same coordinates, same value, in any order of calls */
        float again = block_gumbel(seed, off, pos, blk);
        assert_memory_equal(&g, &again, sizeof g);
        float changed[] = {
            block_gumbel(seed ^ 1u, off, pos, blk),
            block_gumbel(seed ^ (1ull << 32), off, pos, blk),
            block_gumbel(seed ^ (1ull << 63), off, pos, blk),
            block_gumbel(seed, off ^ 1u, pos, blk),
            block_gumbel(seed, off ^ (1ull << 32), pos, blk),
            block_gumbel(seed, off ^ (1ull << 63), pos, blk),
            block_gumbel(seed, off, pos ^ 1u, blk),
            block_gumbel(seed, off, pos ^ (1u << 23), blk),
            block_gumbel(seed, off, pos, blk + 2),
            block_gumbel(seed, off, pos, blk ^ (1u << 23)),
        };
        for (size_t i = 0; i < sizeof changed / sizeof changed[0]; ++i)
            same_as_changed += changed[i] == g;
        /* blocks 2k and 2k+1 share one Philox call but take different words,
           and a block's two words differ */
        uint32_t wd[4];
        fs_block_words(seed, off, pos, blk, &wd[0], &wd[1]);
        fs_block_words(seed, off, pos, blk + 1, &wd[2], &wd[3]);
        for (int a = 0; a < 4; ++a)
            for (int b = a + 1; b < 4; ++b)
                if (wd[a] == wd[b])
                    fail_msg("words %d and %d of blocks %u, %u coincide", a, b, blk, blk + 1);
        /* purposes are separate streams */
        float ua = fs_accept_uniform(seed, off, pos);
        float ug = fs_uniform(fs_philox_draw(seed, off, pos, FS_PURPOSE_GUMBEL, 0).v[0]);
        same_as_changed += ua == ug;
        assert_true(ua == fs_accept_uniform(seed, off, pos));
        assert_true(ua != fs_accept_uniform(seed, off, pos + 1));
    }
    /* floats have 23 bits of entropy here: a handful of collisions would be
       chance, a systematic one (a coordinate ignored) gives 500 */
    if (same_as_changed > 2)
        fail_msg("%d noise values did not change with their coordinates", same_as_changed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_answers),
        cmocka_unit_test(test_counter_mapping),
        cmocka_unit_test(test_uniform_strictly_inside),
        cmocka_unit_test(test_noise_distribution),
        cmocka_unit_test(test_noise_coordinates),
    };
    return cmocka_run_group_tests_name("philox", tests, NULL, NULL);
}
