/* Tree verify's prep: every request's rows and status before the scan, built
 * on the device from the tree arrays (the host never reads them, so the op
 * stays asynchronous and graph-capturable).  The same rows and statuses as
 * fs_tree_request_rows (src/tree_finalize.h), which the CPU backend runs,
 * built a warp per request. */
#include "cuda_tree.cuh"
#include "pdl.cuh"
#include "tree_finalize.h"

#define FS_TREE_PREP_THREADS 128

/* A row with descriptor d and no children yet. */
static __device__ void reset_row(fs_tree_row *r, const fs_row_desc &d)
{
    r->base = d;
    r->num_children = 0;
    r->excluded_mask = 0;
}

static __device__ void skip_row(fs_row_desc *descs, fs_tree_row *rows, int64_t i)
{
    reset_row(&rows[i], fs_row_desc_skip());
    descs[i] = rows[i].base;
}

/* fs_tree_request_rows for one request, by a whole warp.  The serial pass
 * reads back the parent's row it just wrote for every node, a dependent
 * round trip each (41-70 us for 64-node trees under ncu at base clocks with
 * cold caches; this takes 7-11 us).  Here the nodes go 32 at a time, in
 * node order:
 *  - a parent outside [-1, i) anywhere fails the request (BAD_TREE) before
 *    anything of the chunk is written;
 *  - depth: the parent's row's, from an earlier chunk, after a walk up
 *    the parents inside this chunk; past max_depth is BAD_TREE;
 *  - a node's place among its parent's children: the parent's children
 *    from earlier chunks (its num_children, written by them) plus the
 *    lanes before it with the same parent (__match_any_sync); max_children
 *    or more is BAD_TREE;
 * then tokens outside the vocabulary (BAD_DRAFT) and the temperature's
 * status, in fs_tree_request_rows' order.  A failing request's rows are
 * all skipped.  Returns the status in every lane. */
static __device__ int32_t request_rows_warp(const int32_t *tokens, const int32_t *parents,
                                            int64_t n, int64_t max_depth, int64_t max_children,
                                            int64_t global_vocab, float temperature,
                                            uint64_t seed, uint64_t offset, int32_t request,
                                            fs_tree_row *rows, int lane)
{
    const fs_row_desc d0 = fs_row_desc_make(temperature, seed, offset, 0, -1, -1, request);
    for (int64_t j = lane; j <= n; j += 32)
        reset_row(&rows[j], d0);
    __syncwarp();
    const uint32_t before = (1u << lane) - 1u;
    bool bad = false;
    for (int64_t c = 0; c < n; c += 32) {
        const int64_t i = c + lane;
        const bool in = i < n;
        const int64_t p = in ? parents[i] : -1;
        if (__any_sync(FS_FULL_WARP, in && (p < -1 || p >= i))) {
            bad = true;
            break;
        }
        /* depth: the parent's, written by an earlier chunk (the root's is 0),
           or found by walking up inside this chunk first -- at most 31 steps,
           each to a smaller node (every parent up to here is in range), so a
           long chain costs O(n), not O(n x depth) */
        int64_t depth = 0;
        if (in) {
            int64_t q = p, steps = 1;
            for (; q >= c; q = parents[q])
                ++steps;
            depth = (int64_t)rows[q + 1].base.position + steps;
        }
        const uint32_t same = __match_any_sync(FS_FULL_WARP, in ? (int32_t)p : -2);
        const int32_t earlier = in ? rows[p + 1].num_children : 0;
        const int64_t k = earlier + __popc(same & before);
        __syncwarp(); /* every lane has read num_children before the leaders write it */
        if (__any_sync(FS_FULL_WARP,
                       in && (depth > max_depth || k >= max_children))) {
            bad = true;
            break;
        }
        if (in) {
            fs_tree_row *up = &rows[p + 1];
            up->children[k] = tokens[i];
            up->child_nodes[k] = (int32_t)i;
            rows[i + 1].base.position = (uint32_t)depth;
            if (lane == 31 - __clz(same)) { /* the group's last lane: its count */
                const int32_t nc = earlier + __popc(same);
                up->num_children = nc;
                up->excluded_mask = (uint32_t)((1ull << nc) - 1ull);
            }
        }
        __syncwarp();
    }
    int32_t st = FS_ROW_BAD_TREE;
    if (!bad) {
        bool draft = false;
        for (int64_t i = lane; i < n; i += 32)
            draft |= tokens[i] < 0 || (int64_t)tokens[i] >= global_vocab;
        st = __any_sync(FS_FULL_WARP, draft) ? FS_ROW_BAD_DRAFT
                                              : fs_temperature_status(temperature);
    }
    if (st != FS_ROW_OK)
        for (int64_t j = lane; j <= n; j += 32)
            reset_row(&rows[j], fs_row_desc_skip());
    __syncwarp();
    return st;
}

/* Every block checks the offsets layout (R + 1 ints: cheaper than a second
 * launch), as the verify prep does; a malformed layout fails every request
 * and skips every row.  A well-formed one gives every request disjoint rows
 * that together cover all rows, and one warp per request builds them
 * (request_rows_warp).  With filters (f.fdescs set), as the verify prep: a
 * request whose tree, tokens and temperature passed fails with
 * FS_ROW_BAD_FILTER when its filter values are bad (its rows skipped),
 * every row gets its fs_filter_desc and the active ones FS_ROWF_FILTER in
 * the plain descriptor the scan and merge read (the walk reads the tree
 * rows, which stay as request_rows_warp wrote them); out_fallback and the
 * second pass's counts are zeroed. */
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
    const int lane = threadIdx.x & 31;
    for (int64_t r = first >> 5; r < num_requests; r += stride >> 5) { /* warp-uniform */
        const int64_t begin = offsets[r], n = offsets[r + 1] - begin;
        /* the request's filter parameters (NULL arrays: off), read beside
           its own and used from registers, as the chain preps do */
        const fs_filter_params q = fs_filter_params_read(f.top_k, f.top_p, f.min_p, r);
        fs_tree_row *rr = tree_rows + begin + r;
        /* tokens and parents may be NULL when num_nodes is 0 */
        int32_t st = request_rows_warp(
            n > 0 ? tokens + begin : nullptr, n > 0 ? parents + begin : nullptr, n, max_depth,
            max_children, global_vocab, temperature[r], seed[r], offset ? offset[r] : 0,
            (int32_t)r, rr, lane);
        if (st == FS_ROW_OK && f.fdescs) {
            st = fs_filter_status_of(q);
            for (int64_t j = lane; st != FS_ROW_OK && j <= n; j += 32)
                skip_row(descs, tree_rows, begin + r + j);
            __syncwarp();
        }
        if (lane == 0)
            pre_status[r] = st;
        for (int64_t j = lane; j <= n; j += 32) {
            fs_row_desc d = rr[j].base;
            if (f.fdescs)
                fs_prep_filter_row(q, global_vocab, d, &f.fdescs[begin + r + j]);
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
    /* a warp per request, or a thread per 4 rows (64 child scores to set)
       when that is more */
    int64_t n = 32 * t->num_requests > a->base.rows / 4 ? 32 * t->num_requests : a->base.rows / 4;
    int64_t blocks = (n + FS_TREE_PREP_THREADS - 1) / FS_TREE_PREP_THREADS;
    if (blocks > 65535)
        blocks = 65535; /* grid-stride loops cover the rest */
    fs_tree_prep_kernel<<<(unsigned)blocks, FS_TREE_PREP_THREADS, 0, stream>>>(
        t->node_offsets, t->tokens, t->parents, p->temperature, p->seed, p->offset,
        t->num_requests, t->num_nodes, t->max_depth, t->max_children, a->base.global_vocab,
        a->base.rows, f, pre_status, descs, rows, child_s);
    return cudaGetLastError();
}
