/* Tree verify's finalizer: one thread per request walks its tree over its
 * merged records with the shared walk, fs_finalize_verify_tree
 * (src/tree_finalize.h), exactly as the CPU backend does. */
#include "cuda_tree.cuh"
#include "tree_finalize.h"

#define FS_TREE_FINALIZE_THREADS 128

/* The walk reads fs_tree_records; the scan left each row's fs_record in
 * row_recs (merge kernel) and its children's scores in child_s, so the
 * request's thread first assembles its own rows into tree_recs (no other
 * thread touches them).  A failed request (pre_status set) reads nothing:
 * its rows may not even be its own when the layout is bad. */
__global__ void __launch_bounds__(FS_TREE_FINALIZE_THREADS)
    fs_tree_finalize_kernel(const fs_record *__restrict__ row_recs,
                            const float *__restrict__ child_s,
                            const fs_tree_row *__restrict__ rows,
                            const int32_t *__restrict__ pre_status,
                            const int32_t *__restrict__ offsets,
                            const int32_t *__restrict__ parents, int64_t num_requests,
                            int64_t max_depth, fs_tree_record *tree_recs, int32_t *out_tokens,
                            int32_t *out_path, float *out_logprobs, int32_t *out_num_emitted,
                            int32_t *out_row_status)
{
    const int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= num_requests)
        return;
    int32_t st = pre_status[r];
    const bool ok = st == FS_ROW_OK;
    const int64_t begin = ok ? offsets[r] : 0, n = ok ? offsets[r + 1] - begin : 0;
    const int64_t row0 = begin + r, stride = max_depth + 1;
    for (int64_t j = 0; ok && j <= n; ++j) {
        fs_tree_record *t = &tree_recs[row0 + j];
        t->base = row_recs[row0 + j];
        for (int k = 0; k < FS_TREE_MAX_CHILDREN; ++k)
            t->child_s[k] = child_s[(row0 + j) * FS_TREE_MAX_CHILDREN + k];
    }
    fs_finalize_verify_tree(ok ? tree_recs + row0 : nullptr, ok ? rows + row0 : nullptr,
                            ok && n > 0 ? parents + begin : nullptr, n, stride,
                            out_tokens + r * stride, out_path ? out_path + r * max_depth : nullptr,
                            out_logprobs ? out_logprobs + r * stride : nullptr,
                            out_num_emitted + r, &st);
    out_row_status[r] = st;
}

cudaError_t fs_launch_tree_finalize(const fs_tree_args *a, const fs_record *row_recs,
                                    const float *child_s, const fs_tree_row *rows,
                                    const int32_t *pre_status, fs_tree_record *tree_recs,
                                    cudaStream_t stream)
{
    const fs_draft_tree *t = a->tree;
    const unsigned blocks =
        (unsigned)((t->num_requests + FS_TREE_FINALIZE_THREADS - 1) / FS_TREE_FINALIZE_THREADS);
    fs_tree_finalize_kernel<<<blocks, FS_TREE_FINALIZE_THREADS, 0, stream>>>(
        row_recs, child_s, rows, pre_status, t->node_offsets, t->parents, t->num_requests,
        t->max_depth, tree_recs, a->base.out_tokens, a->out_path_nodes, a->base.out_values,
        a->base.out_num_emitted, a->base.out_row_status);
    return cudaGetLastError();
}
