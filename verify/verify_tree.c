/* Public tree verify ops: one-pass speculative verify/resample of a tree of
 * greedy drafts (EAGLE-2/3, Medusa), fused with the LM head or over
 * materialised logits. */
#include "tree_backend.h"
#include "validate.h"

fs_status fs_verify_tree_workspace_size(const fs_context *ctx, int64_t num_requests,
                                        int64_t num_nodes, int64_t vocab_size, size_t *out_bytes)
{
    /* the counts are checked before they are added (their sum could
       overflow int64), then the sum as any op's row count */
    if (ctx && out_bytes &&
        (num_requests <= 0 || num_requests > INT32_MAX || num_nodes < 0 || num_nodes > INT32_MAX))
        return fs_fail_const(ctx, FS_ERR_INVALID_SIZE,
                             "fs_verify_tree_workspace_size: num_requests %lld must be in "
                             "[1, INT32_MAX] and num_nodes %lld in [0, INT32_MAX]",
                             (long long)num_requests, (long long)num_nodes);
    int64_t rows = num_nodes + num_requests;
    fs_status st = fs_check_workspace_query(ctx, rows, vocab_size, out_bytes);
    if (st != FS_OK)
        return st;
    *out_bytes = fs_tree_workspace_bytes(ctx, rows, num_requests, vocab_size);
    return FS_OK;
}

static fs_status run_tree(fs_context *ctx, const char *fn, fs_tree_args *a,
                          const fs_draft_tree *tree, const fs_sampling *params, void *workspace,
                          size_t workspace_bytes, int32_t *out_tokens, int32_t *out_path_nodes,
                          int32_t *out_num_emitted, float *out_logprobs, int32_t *out_row_status)
{
    fs_status st = fs_check_tree(ctx, fn, tree, a);
    if (st != FS_OK)
        return st;
    return fs_run_tree_op(ctx, fn, a, params, workspace, workspace_bytes, out_tokens,
                          out_path_nodes, out_num_emitted, out_logprobs, out_row_status);
}

fs_status fs_verify_tree(fs_context *ctx, const fs_lm_head *head, const void *target_hidden,
                         const fs_draft_tree *tree, const fs_sampling *params, void *workspace,
                         size_t workspace_bytes, int32_t *out_tokens, int32_t *out_path_nodes,
                         int32_t *out_num_emitted, float *out_logprobs, int32_t *out_row_status)
{
    if (!ctx)
        return FS_ERR_NULL_POINTER;
    fs_tree_args a = {0};
    /* the row count comes from the tree; 1 is a placeholder that
       fs_check_tree replaces before anything uses it */
    fs_status st = fs_prepare_fused(ctx, "fs_verify_tree", head, target_hidden, 1, &a.base);
    if (st != FS_OK)
        return st;
    return run_tree(ctx, "fs_verify_tree", &a, tree, params, workspace, workspace_bytes,
                    out_tokens, out_path_nodes, out_num_emitted, out_logprobs, out_row_status);
}

fs_status fs_verify_tree_logits(fs_context *ctx, const void *target_logits, fs_dtype dtype,
                                int64_t vocab_size, const fs_draft_tree *tree,
                                const fs_sampling *params, void *workspace,
                                size_t workspace_bytes, int32_t *out_tokens,
                                int32_t *out_path_nodes, int32_t *out_num_emitted,
                                float *out_logprobs, int32_t *out_row_status)
{
    if (!ctx)
        return FS_ERR_NULL_POINTER;
    fs_tree_args a = {0};
    fs_status st = fs_prepare_logits(ctx, "fs_verify_tree_logits", target_logits, dtype, 1,
                                     vocab_size, &a.base);
    if (st != FS_OK)
        return st;
    return run_tree(ctx, "fs_verify_tree_logits", &a, tree, params, workspace, workspace_bytes,
                    out_tokens, out_path_nodes, out_num_emitted, out_logprobs, out_row_status);
}
