/* Call-level checks of the filter fields of fs_sampling; see filter_check.h. */
#include "filter_check.h"

int fs_filters_requested(const fs_sampling *params)
{
    return params->top_k || params->top_p || params->min_p || params->out_filter_fallback;
}

fs_status fs_check_filter_backend(fs_context *ctx, const char *fn, const fs_sampling *params)
{
    /* every backend runs the filters, tensor-parallel CUDA contexts included
       (their ranks exchange candidate summaries beside the records and
       all-reduce the second pass's histograms); kept as the one place where
       a backend that cannot would refuse them before any work */
    (void)ctx;
    (void)fn;
    (void)params;
    return FS_OK;
}
