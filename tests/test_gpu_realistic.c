/* Realistic LM-head shapes, bf16: V = 151936, D = 4096 (Qwen-like) and
 * V = 128256, D = 8192 (Llama-70B-like), 64 rows on the GPU, hidden ~ N(0, 1),
 * W ~ N(0, 9 / D) so the logits have a standard deviation of about 3.  The
 * CPU context (slow) checks the first CPU_ROWS rows of fused sample and draft
 * argmax; every disagreement must be a near-tie, and the agreement rate is
 * printed, with the GPU time of the fused sample.
 * FS_GPU_TEST_SMALL=1 shrinks the shapes (for the sanitizer runs). */
#include "gpu_util.h"

#ifdef FS_HAVE_CUDA

enum { GPU_ROWS = 64 };

/* Fast approximate N(0, 1): sum of four 16-bit uniforms (Irwin-Hall),
 * standardised.  Plenty for test data, ~20x faster than Box-Muller. */
static inline float fast_normal(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    x *= 0x2545F4914F6CDD1Dull;
    double u = (double)(x & 0xffff) + (double)((x >> 16) & 0xffff) + (double)((x >> 32) & 0xffff) +
               (double)(x >> 48);
    /* mean 2 * 65535, variance 4 * (65536^2 - 1) / 12 */
    return (float)((u - 131070.0) * (1.0 / 37837.23));
}

static void realistic_case(int64_t V, int64_t D, int cpu_rows)
{
    printf("realistic: V=%lld D=%lld bf16, %d GPU rows, %d checked on the CPU\n", (long long)V,
           (long long)D, GPU_ROWS, cpu_rows);
    fflush(stdout);
    double t0 = fst_now();
    uint16_t *w = malloc(sizeof(uint16_t) * (size_t)(V * D));
    uint16_t *h = malloc(sizeof(uint16_t) * (size_t)(GPU_ROWS * D));
    assert_non_null(w);
    assert_non_null(h);
    uint64_t s = 0x9E3779B97F4A7C15ull ^ (uint64_t)V;
    const float ws = (float)(3.0 / sqrt((double)D));
    for (int64_t i = 0; i < V * D; ++i)
        w[i] = fst_f32_to_bf16(fast_normal(&s) * ws);
    fst_rng rng;
    fst_rng_seed(&rng, (uint64_t)D);
    for (int64_t i = 0; i < GPU_ROWS * D; ++i)
        h[i] = fst_f32_to_bf16((float)fst_normal(&rng));
    float temp[GPU_ROWS];
    uint64_t seed[GPU_ROWS], off[GPU_ROWS];
    for (int r = 0; r < GPU_ROWS; ++r) {
        temp[r] = r % 4 == 0 ? 0.0f : (r % 4 == 1 ? 0.7f : 1.0f);
        seed[r] = 0xC0FFEEull + (uint64_t)r * 1315423911ull;
        off[r] = 1000 + (uint64_t)r;
    }
    printf("  inputs generated in %.1fs\n", fst_now() - t0);

    /* GPU: all rows */
    fs_context *gpu = gt_gpu_ctx();
    gt_in in = {GT_SAMPLE, 1, FS_DTYPE_BF16, V, D, GPU_ROWS, GPU_ROWS, w, h, NULL,
                {temp, seed, off, NULL, NULL}, {0, 0, 0, NULL, NULL}};
    gt_out gs, ga;
    gt_out_alloc(&in, &gs);
    gt_run(gpu, &in, &gs);
    in.op = GT_ARGMAX;
    gt_out_alloc(&in, &ga);
    gt_run(gpu, &in, &ga);
    in.op = GT_SAMPLE;

    /* GPU timing of the fused sample (warm L2 is not flushed: indicative only) */
    {
        gt_dev_in g;
        gt_upload(&in, &g);
        size_t wsb = gt_workspace_bytes(gpu, &in);
        void *wsp = gt_dmalloc(wsb);
        int32_t *tok = gt_dmalloc(sizeof(int32_t) * GPU_ROWS), *st = gt_dmalloc(sizeof(int32_t) * GPU_ROWS);
        float *lp = gt_dmalloc(sizeof(float) * GPU_ROWS);
        fs_lm_head head = {g.w, V, D, FS_DTYPE_BF16};
        cudaEvent_t e0, e1;
        GT_CUDA(cudaEventCreate(&e0));
        GT_CUDA(cudaEventCreate(&e1));
        for (int rows = 1; rows <= GPU_ROWS; rows *= 4) {
            GT_FS(gpu, fs_sample(gpu, &head, g.h, rows, &g.p, wsp, wsb, tok, lp, st));
            GT_CUDA(cudaEventRecord(e0, NULL));
            const int reps = 10;
            for (int i = 0; i < reps; ++i)
                GT_FS(gpu, fs_sample(gpu, &head, g.h, rows, &g.p, wsp, wsb, tok, lp, st));
            GT_CUDA(cudaEventRecord(e1, NULL));
            GT_CUDA(cudaEventSynchronize(e1));
            float ms = 0;
            GT_CUDA(cudaEventElapsedTime(&ms, e0, e1));
            ms /= reps;
            printf("  GPU fused sample, %2d rows: %.3f ms (%.0f GB/s of LM head)\n", rows, ms,
                   (double)V * (double)D * 2.0 / (ms * 1e-3) / 1e9);
        }
        GT_CUDA(cudaEventDestroy(e0));
        GT_CUDA(cudaEventDestroy(e1));
        gt_dfree(wsp);
        gt_dfree(tok);
        gt_dfree(st);
        gt_dfree(lp);
        gt_free_dev(&g);
    }

    /* CPU: the first cpu_rows rows (rows are independent of the batch) */
    fs_context *cpu = fst_cpu_ctx();
    gt_in sub = in;
    sub.rows = sub.requests = cpu_rows;
    gt_out cs, ca;
    gt_out_alloc(&sub, &cs);
    gt_out_alloc(&sub, &ca);
    t0 = fst_now();
    gt_run(cpu, &sub, &cs);
    sub.op = GT_ARGMAX;
    gt_run(cpu, &sub, &ca);
    sub.op = GT_SAMPLE;
    printf("  CPU reference: %.1fs\n", fst_now() - t0);
    assert_int_equal(cs.ret, FS_OK);
    assert_int_equal(ca.ret, FS_OK);

    /* compare the first cpu_rows GPU rows with the CPU */
    gt_out gsub = gs, gasub = ga;
    gsub.ntok = gsub.nreq = gasub.ntok = gasub.nreq = cpu_rows;
    char label[96];
    snprintf(label, sizeof label, "realistic V=%lld D=%lld", (long long)V, (long long)D);
    gt_agree a1 = gt_compare(&sub, &cs, &gsub, label);
    sub.op = GT_ARGMAX;
    gt_agree a2 = gt_compare(&sub, &ca, &gasub, label);
    printf("  %s: sample agree %lld/%lld, argmax agree %lld/%lld (near-ties: %lld, %lld)\n",
           label, (long long)(a1.units - a1.differ), (long long)a1.units,
           (long long)(a2.units - a2.differ), (long long)a2.units, (long long)a1.differ,
           (long long)a2.differ);
    fflush(stdout);
    assert_int_equal(a1.value_bad, 0);
    assert_int_equal(a2.value_bad, 0);
    assert_true(a1.differ <= 2);
    assert_true(a2.differ <= 2);
    for (int r = 0; r < GPU_ROWS; ++r) {
        assert_int_equal(gs.st[r], FS_ROW_OK);
        assert_true(gs.tok[r] >= 0 && gs.tok[r] < V);
        assert_int_equal(ga.st[r], FS_ROW_OK);
        if (temp[r] == 0.0f)
            assert_int_equal(gs.tok[r], ga.tok[r]); /* same scan, same arithmetic */
    }

    gt_out_free(&gs);
    gt_out_free(&ga);
    gt_out_free(&cs);
    gt_out_free(&ca);
    fs_context_destroy(cpu);
    fs_context_destroy(gpu);
    free(w);
    free(h);
}

static void test_qwen_like(void **state)
{
    (void)state;
    if (gt_small_mode())
        realistic_case(32003, 1024, 8);
    else
        realistic_case(151936, 4096, 16);
}

static void test_llama70b_like(void **state)
{
    (void)state;
    if (gt_small_mode())
        realistic_case(12345, 2048, 8);
    else
        realistic_case(128256, 8192, 16);
}

int main(void)
{
    GT_SKIP_WITHOUT_GPU("test_gpu_realistic");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qwen_like),
        cmocka_unit_test(test_llama70b_like),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else
GT_MAIN_WITHOUT_CUDA("test_gpu_realistic")
#endif
