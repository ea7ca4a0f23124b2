/* Tree verify's finalizer: a warp per request assembles its records and
 * finds its status, then one lane walks its tree with the shared walk,
 * fs_tree_walk (src/tree_finalize.h), exactly as the CPU backend does. */
#include "cuda_tree.cuh"
#include "tree_finalize.h"

#define FS_TREE_FINALIZE_THREADS 128

/* The walk reads fs_tree_records; the scan left each row's fs_record in
 * row_recs (merge kernel) and its children's scores in child_s, so the
 * request's warp first assembles its own rows into tree_recs (no other warp
 * touches them), a row a lane, and takes the status of its first failing
 * row (fs_tree_records_status) from a ballot: a thread per request did this
 * as n + 1 dependent round trips.  The walk steps to children by their node
 * indices (fs_tree_row::child_nodes), O(depth).  A failed request
 * (pre_status set) reads nothing: its rows may not even be its own when the
 * layout is bad. */
__global__ void __launch_bounds__(FS_TREE_FINALIZE_THREADS)
    fs_tree_finalize_kernel(const fs_record *__restrict__ row_recs,
                            const float *__restrict__ child_s,
                            const fs_tree_row *__restrict__ rows,
                            const int32_t *__restrict__ pre_status,
                            const int32_t *__restrict__ offsets, int64_t num_requests,
                            int64_t max_depth, fs_tree_record *tree_recs, int32_t *out_tokens,
                            int32_t *out_path, float *out_logprobs, int32_t *out_num_emitted,
                            int32_t *out_row_status)
{
    const int64_t r = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const int lane = threadIdx.x & 31;
    if (r >= num_requests) /* warp-uniform */
        return;
    int32_t st = pre_status[r];
    const bool ok = st == FS_ROW_OK;
    const int64_t begin = ok ? offsets[r] : 0, n = ok ? offsets[r + 1] - begin : 0;
    const int64_t row0 = begin + r, stride = max_depth + 1;
    for (int64_t c = 0; ok && c <= n; c += 32) { /* warp-uniform; rows in order */
        const int64_t j = c + lane;
        int32_t sj = FS_ROW_OK;
        if (j <= n) {
            fs_tree_record *t = &tree_recs[row0 + j];
            t->base = row_recs[row0 + j];
            for (int k = 0; k < FS_TREE_MAX_CHILDREN; ++k)
                t->child_s[k] = child_s[(row0 + j) * FS_TREE_MAX_CHILDREN + k];
            sj = fs_record_status(&t->base);
        }
        const uint32_t failing = __ballot_sync(FS_FULL_WARP, sj != FS_ROW_OK);
        if (st == FS_ROW_OK && failing)
            st = __shfl_sync(FS_FULL_WARP, sj, __ffs(failing) - 1);
    }
    __syncwarp(); /* the records are in tree_recs for lane 0 */
    if (lane == 0) {
        fs_tree_walk(ok ? tree_recs + row0 : nullptr, ok ? rows + row0 : nullptr, stride, st,
                     out_tokens + r * stride, out_path ? out_path + r * max_depth : nullptr,
                     out_logprobs ? out_logprobs + r * stride : nullptr, out_num_emitted + r);
        out_row_status[r] = st;
    }
}

cudaError_t fs_launch_tree_finalize(const fs_tree_args *a, const fs_record *row_recs,
                                    const float *child_s, const fs_tree_row *rows,
                                    const int32_t *pre_status, fs_tree_record *tree_recs,
                                    cudaStream_t stream)
{
    const fs_draft_tree *t = a->tree;
    /* a warp per request */
    const unsigned blocks = (unsigned)((32 * t->num_requests + FS_TREE_FINALIZE_THREADS - 1) /
                                       FS_TREE_FINALIZE_THREADS);
    fs_tree_finalize_kernel<<<blocks, FS_TREE_FINALIZE_THREADS, 0, stream>>>(
        row_recs, child_s, rows, pre_status, t->node_offsets, t->num_requests,
        t->max_depth, tree_recs, a->base.out_tokens, a->out_path_nodes, a->base.out_values,
        a->base.out_num_emitted, a->base.out_row_status);
    return cudaGetLastError();
}
