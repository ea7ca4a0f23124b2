/* Call-level checks of the filter fields of fs_sampling; see filter_check.h. */
#include "filter_check.h"

int fs_filters_requested(const fs_sampling *params)
{
    return params->top_k || params->top_p || params->min_p || params->out_filter_fallback;
}

fs_status fs_check_filter_backend(fs_context *ctx, const char *fn, const fs_sampling *params)
{
    /* the CUDA backend resolves a row's filters from its candidate lists,
       which the tensor-parallel exchange does not carry across ranks yet */
    if (ctx->kind == FS_DEVICE_CUDA && ctx->nccl_comm && fs_filters_requested(params))
        return fs_fail(ctx, FS_ERR_UNSUPPORTED,
                       "%s: top-k / top-p / min-p filters (params->top_k, top_p, min_p, "
                       "out_filter_fallback) are not implemented for CUDA contexts sharded "
                       "over several GPUs yet; leave them NULL or use one GPU per context",
                       fn);
    return FS_OK;
}
