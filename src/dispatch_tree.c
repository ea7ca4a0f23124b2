/* The last host-side step of tree verify: outputs and workspace are checked,
 * then the context's backend runs it. */
#include "tree_backend.h"
#include "validate.h"

size_t fs_tree_workspace_bytes(const fs_context *ctx, int64_t rows, int64_t requests,
                               int64_t vocab_size)
{
#ifdef FS_HAVE_CUDA
    if (ctx->kind == FS_DEVICE_CUDA)
        return fs_cuda_tree_workspace_bytes(ctx, rows, requests, vocab_size);
#endif
    (void)ctx;
    (void)vocab_size;
    return fs_cpu_tree_workspace_bytes(rows, requests);
}

fs_status fs_run_tree_op(fs_context *ctx, const char *fn, fs_tree_args *a,
                         const fs_sampling *params, void *workspace, size_t workspace_bytes,
                         int32_t *out_tokens, int32_t *out_path_nodes, int32_t *out_num_emitted,
                         float *out_logprobs, int32_t *out_row_status)
{
    fs_status st = fs_check_sampling(ctx, fn, params);
    if (st != FS_OK)
        return st;
    if (!out_tokens)
        return fs_fail(ctx, FS_ERR_NULL_POINTER, "%s: out_tokens is NULL", fn);
    if (!out_num_emitted)
        return fs_fail(ctx, FS_ERR_NULL_POINTER, "%s: out_num_emitted is NULL", fn);
    if (!out_row_status)
        return fs_fail(ctx, FS_ERR_NULL_POINTER, "%s: out_row_status is NULL", fn);
    a->base.op = FS_OP_VERIFY_TREE;
    a->base.params = params;
    a->base.workspace = workspace;
    a->base.workspace_bytes = workspace_bytes;
    a->base.out_tokens = out_tokens;
    a->base.out_values = out_logprobs;
    a->base.out_num_emitted = out_num_emitted;
    a->base.out_row_status = out_row_status;
    a->out_path_nodes = out_path_nodes;
    size_t need = fs_tree_workspace_bytes(ctx, a->base.rows, a->tree->num_requests,
                                          a->base.vocab_size);
    if (need > 0 && !workspace)
        return fs_fail(ctx, FS_ERR_NULL_POINTER, "%s: workspace is NULL (%zu bytes needed)", fn,
                       need);
    if (workspace_bytes < need)
        return fs_fail(ctx, FS_ERR_WORKSPACE_TOO_SMALL,
                       "%s: workspace has %zu bytes, %zu needed", fn, workspace_bytes, need);
    ctx->last_error[0] = '\0';
#ifdef FS_HAVE_CUDA
    if (ctx->kind == FS_DEVICE_CUDA)
        return fs_cuda_tree_run(ctx, a);
#endif
    return fs_cpu_tree_run(ctx, a);
}
