/* Tree verify's prep: every request's rows and status before the scan, built
 * on the device from the tree arrays (the host never reads them, so the op
 * stays asynchronous and graph-capturable).  Mirrors fs_cpu_tree_prepare
 * (src/cpu_tree.c) with the same shared code, fs_tree_request_rows. */
#include "cuda_tree.cuh"
#include "pdl.cuh"
#include "tree_finalize.h"

#define FS_TREE_PREP_THREADS 128

static __device__ void skip_row(fs_row_desc *descs, fs_tree_row *rows, int64_t i)
{
    rows[i].base = fs_row_desc_skip();
    rows[i].num_children = 0;
    rows[i].excluded_mask = 0;
    descs[i] = rows[i].base;
}

/* Every block checks the offsets layout (R + 1 ints: cheaper than a second
 * launch), as the verify prep does; a malformed layout fails every request
 * and skips every row.  A well-formed one gives every request disjoint rows
 * that together cover all rows, and one thread per request writes its rows
 * (serially over its nodes: fs_tree_request_rows completes a parent before
 * its children; trees have tens of nodes).  With filters (f.fdescs set), as
 * the verify prep: a request whose tree, tokens and temperature passed
 * fails with FS_ROW_BAD_FILTER when its filter values are bad (its rows
 * skipped), every row gets its fs_filter_desc and the active ones
 * FS_ROWF_FILTER in the plain descriptor the scan and merge read (the walk
 * reads the tree rows, which stay as fs_tree_request_rows wrote them);
 * out_fallback and the second pass's counts are zeroed. */
__global__ void __launch_bounds__(FS_TREE_PREP_THREADS)
    fs_tree_prep_kernel(const int32_t *__restrict__ offsets, const int32_t *__restrict__ tokens,
                        const int32_t *__restrict__ parents,
                        const float *__restrict__ temperature, const uint64_t *__restrict__ seed,
                        const uint64_t *__restrict__ offset, int64_t num_requests,
                        int64_t num_nodes, int64_t max_depth, int64_t max_children,
                        int64_t global_vocab, int64_t rows, fs_prep_filters f,
                        int32_t *pre_status, fs_row_desc *descs, fs_tree_row *tree_rows,
                        float *child_s)
{
    fs_pdl_launch_dependents(); /* the scan may start streaming weights now */
    const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    if (first == 0 && f.flag_n) {
        f.flag_n[0] = 0u; /* rows handed to the second pass */
        f.flag_n[1] = 0u; /* sharded contexts: the passes they need */
    }
    for (int64_t r = first; f.out_fallback && r < num_requests; r += stride)
        f.out_fallback[r] = 0;
    for (int64_t i = first; i < rows * FS_TREE_MAX_CHILDREN; i += stride)
        child_s[i] = -INFINITY;
    int bad = 0;
    for (int64_t r = threadIdx.x; r < num_requests; r += blockDim.x)
        bad |= offsets[r + 1] < offsets[r];
    bad = __syncthreads_or(bad);
    const int32_t layout =
        bad || offsets[0] != 0 || (int64_t)offsets[num_requests] != num_nodes
            ? FS_ROW_BAD_OFFSETS
            : FS_ROW_OK;
    if (layout != FS_ROW_OK) {
        for (int64_t i = first; i < rows; i += stride) {
            skip_row(descs, tree_rows, i);
            if (f.fdescs)
                f.fdescs[i].active = 0;
        }
        for (int64_t r = first; r < num_requests; r += stride)
            pre_status[r] = layout;
        return;
    }
    for (int64_t r = first; r < num_requests; r += stride) {
        const int64_t begin = offsets[r], n = offsets[r + 1] - begin;
        fs_tree_row *rr = tree_rows + begin + r;
        /* tokens and parents may be NULL when num_nodes is 0 */
        int32_t st = fs_tree_request_rows(
            n > 0 ? tokens + begin : nullptr, n > 0 ? parents + begin : nullptr, n, max_depth,
            max_children, global_vocab, temperature[r], seed[r], offset ? offset[r] : 0,
            (int32_t)r, rr);
        if (st == FS_ROW_OK && f.fdescs) {
            st = fs_filter_status(f.top_k, f.top_p, f.min_p, r);
            for (int64_t j = 0; st != FS_ROW_OK && j <= n; ++j)
                skip_row(descs, tree_rows, begin + r + j);
        }
        pre_status[r] = st;
        for (int64_t j = 0; j <= n; ++j) {
            fs_row_desc d = rr[j].base;
            if (f.fdescs) {
                fs_filter_desc *fd = &f.fdescs[begin + r + j];
                *fd = fs_filter_desc_make(f.top_k, f.top_p, f.min_p, r, global_vocab, &d);
                if (fd->active)
                    d.flags |= FS_ROWF_FILTER;
            }
            descs[begin + r + j] = d;
        }
    }
}

cudaError_t fs_launch_tree_prep(const fs_tree_args *a, fs_row_desc *descs, fs_tree_row *rows,
                                float *child_s, int32_t *pre_status,
                                const fs_prep_filters *filters, cudaStream_t stream)
{
    const fs_draft_tree *t = a->tree;
    const fs_sampling *p = a->base.params;
    const fs_prep_filters f = fs_prep_filters_of(p, filters);
    /* a thread per request, or per 4 rows (64 child scores to set) when
       that is more */
    int64_t n = t->num_requests > a->base.rows / 4 ? t->num_requests : a->base.rows / 4;
    int64_t blocks = (n + FS_TREE_PREP_THREADS - 1) / FS_TREE_PREP_THREADS;
    if (blocks > 65535)
        blocks = 65535; /* grid-stride loops cover the rest */
    fs_tree_prep_kernel<<<(unsigned)blocks, FS_TREE_PREP_THREADS, 0, stream>>>(
        t->node_offsets, t->tokens, t->parents, p->temperature, p->seed, p->offset,
        t->num_requests, t->num_nodes, t->max_depth, t->max_children, a->base.global_vocab,
        a->base.rows, f, pre_status, descs, rows, child_s);
    return cudaGetLastError();
}
