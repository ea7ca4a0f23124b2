/* The last host-side step of every public op: outputs and workspace are
 * checked, then the context's backend runs the scan engine. */
#include "validate.h"

fs_status fs_dispatch(fs_context *ctx, const char *fn, fs_op_args *a)
{
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
