/* Public verify ops: one-pass speculative verify/resample of greedy drafts
 * (n-gram, MTP, EAGLE), fused with the LM head or over materialised logits. */
#include "validate.h"

fs_status fs_verify_workspace_size(const fs_context *ctx, int64_t num_requests,
                                   int64_t num_draft_tokens, int64_t vocab_size, size_t *out_bytes)
{
    /* the counts are checked before they are added (their sum could
       overflow int64), then the sum as any op's row count */
    if (ctx && out_bytes &&
        (num_requests <= 0 || num_requests > INT32_MAX || num_draft_tokens < 0 ||
         num_draft_tokens > INT32_MAX))
        return fs_fail_const(ctx, FS_ERR_INVALID_SIZE,
                       "fs_verify_workspace_size: num_requests %lld must be in [1, INT32_MAX] "
                       "and num_draft_tokens %lld in [0, INT32_MAX]",
                       (long long)num_requests, (long long)num_draft_tokens);
    int64_t rows = num_draft_tokens + num_requests;
    fs_status st = fs_check_workspace_query(ctx, rows, vocab_size, out_bytes);
    if (st != FS_OK)
        return st;
    *out_bytes = fs_workspace_bytes(ctx, FS_OP_VERIFY, rows, num_requests, vocab_size);
    return FS_OK;
}

static fs_status run_verify(fs_context *ctx, const char *fn, fs_op_args *a,
                            const fs_drafts *drafts, const fs_sampling *params, void *workspace,
                            size_t workspace_bytes, int32_t *out_tokens, int32_t *out_num_emitted,
                            float *out_logprobs, int32_t *out_row_status)
{
    fs_status st = fs_check_drafts(ctx, fn, drafts, a);
    if (st != FS_OK)
        return st;
    return fs_run_op(ctx, fn, a, FS_OP_VERIFY, params, workspace, workspace_bytes, out_tokens,
                     out_logprobs, out_num_emitted, out_row_status);
}

fs_status fs_verify(fs_context *ctx, const fs_lm_head *head, const void *target_hidden,
                    const fs_drafts *drafts, const fs_sampling *params, void *workspace,
                    size_t workspace_bytes, int32_t *out_tokens, int32_t *out_num_emitted,
                    float *out_logprobs, int32_t *out_row_status)
{
    if (!ctx)
        return FS_ERR_NULL_POINTER;
    fs_op_args a = {0};
    /* the row count comes from the drafts; 1 is a placeholder that
       fs_check_drafts replaces before anything uses it */
    fs_status st = fs_prepare_fused(ctx, "fs_verify", head, target_hidden, 1, &a);
    if (st != FS_OK)
        return st;
    return run_verify(ctx, "fs_verify", &a, drafts, params, workspace, workspace_bytes,
                      out_tokens, out_num_emitted, out_logprobs, out_row_status);
}

fs_status fs_verify_logits(fs_context *ctx, const void *target_logits, fs_dtype dtype,
                           int64_t vocab_size, const fs_drafts *drafts, const fs_sampling *params,
                           void *workspace, size_t workspace_bytes, int32_t *out_tokens,
                           int32_t *out_num_emitted, float *out_logprobs, int32_t *out_row_status)
{
    if (!ctx)
        return FS_ERR_NULL_POINTER;
    fs_op_args a = {0};
    fs_status st = fs_prepare_logits(ctx, "fs_verify_logits", target_logits, dtype, 1,
                                     vocab_size, &a);
    if (st != FS_OK)
        return st;
    return run_verify(ctx, "fs_verify_logits", &a, drafts, params, workspace, workspace_bytes,
                      out_tokens, out_num_emitted, out_logprobs, out_row_status);
}
