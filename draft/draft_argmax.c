/* Public draft-argmax ops: the greedy token and its logit for each row, as a
 * drafter (MTP / EAGLE head) needs them; no sampling parameters. */
#include "validate.h"

fs_status fs_draft_argmax_workspace_size(const fs_context *ctx, int64_t rows, int64_t vocab_size,
                                         size_t *out_bytes)
{
    fs_status st = fs_check_workspace_query(ctx, rows, vocab_size, out_bytes);
    if (st == FS_OK)
        *out_bytes = fs_workspace_bytes(ctx, FS_OP_ARGMAX, rows, rows, vocab_size);
    return st;
}

fs_status fs_draft_argmax(fs_context *ctx, const fs_lm_head *head, const void *hidden,
                          int64_t rows, void *workspace, size_t workspace_bytes,
                          int32_t *out_tokens, float *out_logits, int32_t *out_row_status)
{
    if (!ctx)
        return FS_ERR_NULL_POINTER;
    fs_op_args a = {0};
    fs_status st = fs_prepare_fused(ctx, "fs_draft_argmax", head, hidden, rows, &a);
    if (st != FS_OK)
        return st;
    return fs_run_op(ctx, "fs_draft_argmax", &a, FS_OP_ARGMAX, NULL, workspace,
                     workspace_bytes, out_tokens, out_logits, NULL, out_row_status);
}

fs_status fs_draft_argmax_logits(fs_context *ctx, const void *logits, fs_dtype dtype,
                                 int64_t rows, int64_t vocab_size, void *workspace,
                                 size_t workspace_bytes, int32_t *out_tokens, float *out_logits,
                                 int32_t *out_row_status)
{
    if (!ctx)
        return FS_ERR_NULL_POINTER;
    fs_op_args a = {0};
    fs_status st =
        fs_prepare_logits(ctx, "fs_draft_argmax_logits", logits, dtype, rows, vocab_size, &a);
    if (st != FS_OK)
        return st;
    return fs_run_op(ctx, "fs_draft_argmax_logits", &a, FS_OP_ARGMAX, NULL, workspace,
                     workspace_bytes, out_tokens, out_logits, NULL, out_row_status);
}
