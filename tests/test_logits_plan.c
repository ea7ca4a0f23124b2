/* The logits scan's chunking (kernels/scan_logits.cu, logits_plan.h) over
 * vocabularies, row counts and SM counts: chunks that keep the workspace's
 * records-per-row bound, at most 4096 tokens when the op has filters (their
 * candidate lists), and the longest that still fill the GPU.  No GPU
 * needed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdint.h>

#if FS_HAVE_CUDA
#include "../kernels/logits_plan.h"

static int64_t ctas(int64_t rows, int64_t V, int64_t chunk)
{
    return rows * ((V + chunk - 1) / chunk);
}

static void test_invariants(void **state)
{
    (void)state;
    static const int64_t vs[] = {1, 151, 1000, 4096, 20011, 32000, 151936, 262144, 1 << 20};
    static const int64_t rs[] = {1, 2, 4, 16, 64, 100, 256, 320, 1024, 5000};
    static const int sms[] = {0, 8, 108, 132};
    for (size_t a = 0; a < sizeof vs / sizeof vs[0]; ++a)
        for (size_t b = 0; b < sizeof rs / sizeof rs[0]; ++b)
            for (size_t c = 0; c < sizeof sms / sizeof sms[0]; ++c)
                for (int f = 0; f <= 1; ++f) {
                    const int64_t V = vs[a], R = rs[b];
                    const int64_t k = fs_logits_chunk(R, V, sms[c], f);
                    const int64_t cap = f ? FS_LOGITS_CHUNK_MAX_FILTERED : FS_LOGITS_CHUNK_MAX;
                    const int64_t target = 4 * (int64_t)(sms[c] > 0 ? sms[c] : 100);
                    /* a power of two in [MIN, cap]: a multiple of MIN */
                    assert_true(k >= FS_LOGITS_CHUNK_MIN && k <= cap);
                    assert_int_equal(k & (k - 1), 0);
                    /* enough CTAs, unless the chunk cannot shrink */
                    assert_true(ctas(R, V, k) >= target || k == FS_LOGITS_CHUNK_MIN);
                    /* the longest such chunk */
                    assert_true(k == cap || ctas(R, V, 2 * k) < target);
                }
}

/* The chunks that test_gpu_filter's law cases rely on: 8 rows of 20011 and
 * 4 rows of 40009 tokens take 256-token chunks on 132 SMs (79 and 157
 * candidate lists a row), and thousands of filtered rows 4096. */
static void test_filtered_cases(void **state)
{
    (void)state;
    assert_int_equal(fs_logits_chunk(8, 20011, 132, 1), 256);
    assert_int_equal(fs_logits_chunk(4, 40009, 132, 1), 256);
    assert_int_equal(fs_logits_chunk(2000, 151936, 132, 1), 4096);
    assert_int_equal(fs_logits_chunk(2000, 151936, 132, 0), 262144);
    /* 1024 rows of 151936: a CTA a row; 256 rows: three 65536-token chunks */
    assert_int_equal(fs_logits_chunk(1024, 151936, 132, 0), 262144);
    assert_int_equal(fs_logits_chunk(256, 151936, 132, 0), 65536);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_invariants),
        cmocka_unit_test(test_filtered_cases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#else
int main(void)
{
    return 77; /* the plan is the CUDA backend's */
}
#endif
