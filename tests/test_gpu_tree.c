/* Tree verify on a CUDA context: until its GPU port lands, the workspace
 * query and both ops return FS_ERR_UNSUPPORTED with a message naming tree
 * verify, before any work -- the (poisoned) device outputs stay untouched,
 * and the context keeps working for the other ops.  Skipped without a GPU. */
#include "gpu_util.h"

#ifdef FS_HAVE_CUDA

enum { V = 301, D = 32, R = 3, NODES = 5, MAXD = 3, S = MAXD + 1 };

static void test_tree_unsupported(void **state)
{
    (void)state;
    fs_context *ctx = gt_gpu_ctx();
    size_t bytes = 4242;
    assert_int_equal(fs_verify_tree_workspace_size(ctx, R, NODES, V, &bytes), FS_ERR_UNSUPPORTED);
    assert_int_equal(bytes, 4242);
    assert_non_null(strstr(fs_context_last_error(ctx), "tree verify"));

    const int32_t tok[NODES] = {1, 2, 3, 4, 5}, par[NODES] = {-1, -1, 0, -1, 0};
    const int32_t offs[R + 1] = {0, 2, 3, 5};
    const float T[R] = {1.0f, 0.0f, 0.7f};
    const uint64_t seed[R] = {1, 2, 3};
    float *logits = fst_gen_logits(77, NODES + R, V, 2.0);
    void *w = NULL, *h = NULL;
    fst_gen_head(78, V, D, NODES + R, 2.0, FS_DTYPE_BF16, &w, &h);
    fs_draft_tree tree = {R, NODES, MAXD, 4, gt_dup(tok, sizeof tok), gt_dup(par, sizeof par),
                          gt_dup(offs, sizeof offs)};
    fs_sampling p = {gt_dup(T, sizeof T), gt_dup(seed, sizeof seed), NULL, NULL, NULL};
    void *dl = gt_dup(logits, sizeof(float) * (NODES + R) * V);
    void *dw = gt_dup(w, 2 * (size_t)(V * D)), *dh = gt_dup(h, 2 * (size_t)((NODES + R) * D));
    fs_lm_head head = {dw, V, D, FS_DTYPE_BF16};
    void *ws = gt_dmalloc(1 << 20);
    int32_t *dtok = gt_dmalloc(sizeof(int32_t) * R * S), *dpath = gt_dmalloc(sizeof(int32_t) * R * MAXD);
    int32_t *dnem = gt_dmalloc(sizeof(int32_t) * R), *dst = gt_dmalloc(sizeof(int32_t) * R);
    float *dlp = gt_dmalloc(sizeof(float) * R * S);
    for (int fused = 0; fused < 2; ++fused) {
        GT_CUDA(cudaMemset(dtok, 0x5A, sizeof(int32_t) * R * S));
        GT_CUDA(cudaMemset(dpath, 0x5A, sizeof(int32_t) * R * MAXD));
        GT_CUDA(cudaMemset(dnem, 0x5A, sizeof(int32_t) * R));
        GT_CUDA(cudaMemset(dst, 0x5A, sizeof(int32_t) * R));
        GT_CUDA(cudaMemset(dlp, 0x5A, sizeof(float) * R * S));
        fs_status s = fused ? fs_verify_tree(ctx, &head, dh, &tree, &p, ws, 1 << 20, dtok, dpath,
                                             dnem, dlp, dst)
                            : fs_verify_tree_logits(ctx, dl, FS_DTYPE_F32, V, &tree, &p, ws,
                                                    1 << 20, dtok, dpath, dnem, dlp, dst);
        assert_int_equal(s, FS_ERR_UNSUPPORTED);
        assert_non_null(strstr(fs_context_last_error(ctx), "tree verify"));
        GT_CUDA(cudaDeviceSynchronize());
        unsigned char back[sizeof(int32_t) * R * S];
        gt_down(back, dtok, sizeof back);
        for (size_t i = 0; i < sizeof back; ++i)
            assert_int_equal(back[i], 0x5A);
        gt_down(back, dst, sizeof(int32_t) * R);
        for (size_t i = 0; i < sizeof(int32_t) * R; ++i)
            assert_int_equal(back[i], 0x5A);
    }
    /* the context still samples */
    size_t sb = 0;
    GT_FS(ctx, fs_sample_workspace_size(ctx, R, V, &sb));
    assert_true(sb <= (1 << 20));
    GT_FS(ctx, fs_sample_logits(ctx, dl, FS_DTYPE_F32, R, V, &p, ws, 1 << 20, dtok, NULL, dst));
    GT_CUDA(cudaDeviceSynchronize());
    gt_dfree(tree.tokens);
    gt_dfree(tree.parents);
    gt_dfree(tree.node_offsets);
    gt_dfree(p.temperature);
    gt_dfree(p.seed);
    gt_dfree(dl);
    gt_dfree(dw);
    gt_dfree(dh);
    gt_dfree(ws);
    gt_dfree(dtok);
    gt_dfree(dpath);
    gt_dfree(dnem);
    gt_dfree(dst);
    gt_dfree(dlp);
    free(logits);
    free(w);
    free(h);
    fs_context_destroy(ctx);
}

int main(void)
{
    GT_SKIP_WITHOUT_GPU("test_gpu_tree");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tree_unsupported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

#else
GT_MAIN_WITHOUT_CUDA("test_gpu_tree")
#endif
