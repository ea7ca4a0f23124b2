/* Names of statuses, and the library version. */
#include "flashspec.h"

int fs_version(void)
{
    return FS_VERSION;
}

const char *fs_status_string(fs_status status)
{
    switch (status) {
    case FS_OK: return "ok";
    case FS_ERR_NULL_POINTER: return "a required pointer was NULL";
    case FS_ERR_INVALID_SIZE: return "a size was zero, negative or inconsistent";
    case FS_ERR_INVALID_ARGUMENT: return "an argument was out of range";
    case FS_ERR_WORKSPACE_TOO_SMALL: return "the workspace is smaller than the queried size";
    case FS_ERR_INVALID_ROWS: return "some rows had invalid values; see out_row_status";
    case FS_ERR_UNSUPPORTED: return "not supported by this build or backend";
    case FS_ERR_NO_DEVICE: return "no usable CUDA device";
    case FS_ERR_CUDA: return "a CUDA call failed";
    case FS_ERR_NCCL: return "an NCCL call failed";
    case FS_ERR_OUT_OF_MEMORY: return "out of host memory";
    }
    return "unknown status";
}

const char *fs_row_status_string(int32_t row_status)
{
    switch (row_status) {
    case FS_ROW_OK: return "ok";
    case FS_ROW_BAD_TEMPERATURE: return "temperature is NaN, infinite, negative or denormal";
    case FS_ROW_BAD_DRAFT: return "a draft token id is outside the vocabulary";
    case FS_ROW_BAD_OFFSETS: return "draft offsets are malformed or exceed max_drafts";
    case FS_ROW_NONFINITE: return "an allowed token's logit is NaN or +inf";
    case FS_ROW_ALL_MASKED: return "every token of the row is masked";
    case FS_ROW_BAD_TREE: return "the draft tree is malformed or exceeds max_depth / max_children";
    case FS_ROW_BAD_FILTER: return "top_k, top_p or min_p is out of range or NaN";
    }
    return "unknown row status";
}
