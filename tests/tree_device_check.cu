// The tree-verify code shared with the CUDA backend (src/tree_record.h,
// src/tree_finalize.h), compiled as device code by every CUDA build.  The
// library's kernels call the records' status, the walk and the exclusion
// mask (kernels/tree_finalize.cu, tree_scan.cuh) but not the request rows
// (kernels/tree_prep.cu builds them a warp per request) nor the tree
// record's own push and merge, which the CPU backend uses; without this file
// a construct in those that only the host compiler accepts would go
// unnoticed.  Nothing here is launched.
#include "tree_finalize.h"

// A scan epilogue's use: one thread pushes one noise block of a row, and
// records merge as across tiles and shards.
__global__ void fs_tree_check_push_merge(fs_tree_record *recs, const fs_tree_row *rows,
                                         const float *scores, int32_t id0, int n)
{
    fs_tree_record r;
    fs_tree_record_init(&r);
    fs_tree_record_push_block(&r, &rows[threadIdx.x], id0, n, scores + 16 * threadIdx.x);
    fs_tree_record_merge(&recs[threadIdx.x], &r);
}

// The prep and the finalizer: one thread per request.
__global__ void fs_tree_check_prep_finalize(const int32_t *tokens, const int32_t *parents,
                                            const int32_t *offsets, int64_t max_depth,
                                            int64_t max_children, int64_t vocab, const float *T,
                                            const uint64_t *seed, fs_tree_row *rows,
                                            const fs_tree_record *recs, int32_t *out_tokens,
                                            int32_t *out_path, float *out_logprobs,
                                            int32_t *num_emitted, int32_t *status)
{
    const int64_t r = threadIdx.x, b = offsets[r], n = offsets[r + 1] - b;
    int32_t st = fs_tree_request_rows(tokens + b, parents + b, n, max_depth, max_children, vocab,
                                      T[r], seed[r], 0, (int32_t)r, rows + b + r);
    fs_finalize_verify_tree(recs + b + r, rows + b + r, n, max_depth + 1,
                            out_tokens + r * (max_depth + 1), out_path + r * max_depth,
                            out_logprobs + r * (max_depth + 1), num_emitted + r, &st);
    status[r] = st;
}
