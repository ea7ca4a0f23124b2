/* Call-level checks of the filter fields of fs_sampling. */
#ifndef FS_FILTER_CHECK_H
#define FS_FILTER_CHECK_H

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when params sets any filter field (top_k, top_p, min_p,
 * out_filter_fallback). */
int fs_filters_requested(const fs_sampling *params);

/* FS_ERR_UNSUPPORTED (with a message naming the fields) when ctx's backend
 * cannot run the filters that params requests; FS_OK otherwise.  Values are
 * checked per request by the backends (FS_ROW_BAD_FILTER). */
fs_status fs_check_filter_backend(fs_context *ctx, const char *fn, const fs_sampling *params);

#ifdef __cplusplus
}
#endif

#endif
