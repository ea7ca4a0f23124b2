/* The last host-side step of every public op: outputs and workspace are
 * checked, then the context's backend runs the scan engine. */
#include "validate.h"

fs_status fs_run_op(fs_context *ctx, const char *fn, fs_op_args *a, fs_op op,
                    const fs_sampling *params, void *workspace, size_t workspace_bytes,
                    int32_t *out_tokens, float *out_values, int32_t *out_num_emitted,
                    int32_t *out_row_status)
{
    if (op != FS_OP_ARGMAX) {
        fs_status st = fs_check_sampling(ctx, fn, params);
        if (st != FS_OK)
            return st;
    }
    a->op = op;
    a->params = params;
    a->workspace = workspace;
    a->workspace_bytes = workspace_bytes;
    a->out_tokens = out_tokens;
    a->out_values = out_values;
    a->out_num_emitted = out_num_emitted;
    a->out_row_status = out_row_status;
    if (!a->out_tokens)
        return fs_fail(ctx, FS_ERR_NULL_POINTER, "%s: out_tokens is NULL", fn);
    if (!a->out_row_status)
        return fs_fail(ctx, FS_ERR_NULL_POINTER, "%s: out_row_status is NULL", fn);
    if (a->op == FS_OP_VERIFY && !a->out_num_emitted)
        return fs_fail(ctx, FS_ERR_NULL_POINTER, "%s: out_num_emitted is NULL", fn);
    int64_t requests = a->op == FS_OP_VERIFY ? a->drafts->num_requests : a->rows;
    size_t need = fs_workspace_bytes(ctx, a->op, a->rows, requests, a->vocab_size);
    if (need > 0 && !a->workspace)
        return fs_fail(ctx, FS_ERR_NULL_POINTER, "%s: workspace is NULL (%zu bytes needed)", fn,
                       need);
    if (a->workspace_bytes < need)
        return fs_fail(ctx, FS_ERR_WORKSPACE_TOO_SMALL,
                       "%s: workspace has %zu bytes, %zu needed", fn, a->workspace_bytes, need);
    ctx->last_error[0] = '\0';
#ifdef FS_HAVE_CUDA
    if (ctx->kind == FS_DEVICE_CUDA)
        return fs_cuda_run(ctx, a);
#endif
    return fs_cpu_run(ctx, a);
}
