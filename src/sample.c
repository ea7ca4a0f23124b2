/* Public sample ops: exact sampling from softmax((l + b) / T), one token per
 * row, fused with the LM head or over materialised logits. */
#include "validate.h"

fs_status fs_sample_workspace_size(const fs_context *ctx, int64_t rows, int64_t vocab_size,
                                   size_t *out_bytes)
{
    fs_status st = fs_check_workspace_query(ctx, rows, vocab_size, out_bytes);
    if (st == FS_OK)
        *out_bytes = fs_workspace_bytes(ctx, FS_OP_SAMPLE, rows, rows, vocab_size);
    return st;
}

fs_status fs_sample(fs_context *ctx, const fs_lm_head *head, const void *hidden, int64_t rows,
                    const fs_sampling *params, void *workspace, size_t workspace_bytes,
                    int32_t *out_tokens, float *out_logprobs, int32_t *out_row_status)
{
    if (!ctx)
        return FS_ERR_NULL_POINTER;
    fs_op_args a = {0};
    fs_status st = fs_prepare_fused(ctx, "fs_sample", head, hidden, rows, &a);
    if (st != FS_OK)
        return st;
    return fs_run_op(ctx, "fs_sample", &a, FS_OP_SAMPLE, params, workspace, workspace_bytes,
                     out_tokens, out_logprobs, NULL, out_row_status);
}

fs_status fs_sample_logits(fs_context *ctx, const void *logits, fs_dtype dtype, int64_t rows,
                           int64_t vocab_size, const fs_sampling *params, void *workspace,
                           size_t workspace_bytes, int32_t *out_tokens, float *out_logprobs,
                           int32_t *out_row_status)
{
    if (!ctx)
        return FS_ERR_NULL_POINTER;
    fs_op_args a = {0};
    fs_status st = fs_prepare_logits(ctx, "fs_sample_logits", logits, dtype, rows, vocab_size, &a);
    if (st != FS_OK)
        return st;
    return fs_run_op(ctx, "fs_sample_logits", &a, FS_OP_SAMPLE, params, workspace,
                     workspace_bytes, out_tokens, out_logprobs, NULL, out_row_status);
}
