/* Host-side orchestration of tree verify on the CUDA backend:
 *
 *   tree prep  fs_tree_row per row, plain descriptors, children's scores
 *              at -inf, per-request pre-status           (tree_prep.cu)
 *   scan       the chain ops' scan kernels, unchanged but for the tree push
 *              they make when given tree rows (tree_scan.cuh)
 *   merge      the chain ops' merge kernel into row_recs (merge_finalize.cu);
 *              with filters it resolves each filtered row as a verify row
 *              and stores its kept tree record: the fs_record part in
 *              row_recs, the kept children's scores in child_s
 *              (filter_resolve.cuh)
 *   exchange   tensor parallel only: the records (and the filters'
 *              summaries) all-gathered and merged in rank order as the
 *              chain ops' are; with filters the resolve follows on every
 *              rank                                       (tp_exchange.cu)
 *   2nd pass   filters only: the rows the resolve could not decide, their
 *              kept tree records drawn over the vocabulary (filter_fallback.cu)
 *   child max  tensor parallel only: the children's scores all-reduced by
 *              maximum (each child lives in one shard, the others hold
 *              -inf; a decided filtered row's are already the same on every
 *              rank, which a maximum leaves as they are)
 *   walk       one thread per request                    (tree_finalize.cu)
 *
 * The fused scan is the one the chain ops take for the same rows (the
 * Hopper tile or rows-as-M kernel, each with its tree push; the generic
 * tensor-core scan without sm_90a); with filters the tile kernel, in
 * chunks of at most 160 rows, as for verify (its per-block epilogue keeps
 * the candidate lists).  No op tail: the merge kernel merges every row.
 *
 * Everything is enqueued on the context's stream: no allocation, no host
 * synchronisation, no copy to the host (graph-capturable), as for the chain
 * ops -- with their one exception: a filtered call on a sharded context
 * reads the count of rows handed to the second pass to the host unless the
 * stream is being captured (fs_tp_filter_second_pass).  Per-request
 * failures are in out_row_status only.
 *
 * Workspace layout (each region on a 256-byte boundary, the first at the
 * caller's pointer rounded up):
 *   descs      fs_row_desc    [rows]
 *   tree_rows  fs_tree_row    [rows]
 *   pre_status int32          [requests]
 *   tile_recs  fs_record      [rows][ceil(V / 128)]
 *   row_recs   fs_record      [rows]
 *   child_s    float          [rows][FS_TREE_MAX_CHILDREN]
 *   tree_recs  fs_tree_record [rows]    row_recs + child_s, for the walk
 *   tp_gather  fs_record      [ranks][rows]  only when sharded over > 1 rank
 *   filters    the chain ops' filter region (fs_filter_carve), used only by
 *              calls that pass filters */
#include "cuda_tree.cuh"
#include "filter_check.h"
#include "filter_gpu.cuh"
#include "scan_hopper.cuh"
#include "tp_exchange.cuh"

namespace {

struct tree_workspace {
    fs_row_desc *descs;
    fs_tree_row *tree_rows;
    int32_t *pre_status;
    fs_record *tile_recs;
    fs_record *row_recs;
    float *child_s;
    fs_tree_record *tree_recs;
    void *tp_gather;
    fs_filter_ws filt;
};

size_t align_up(size_t n)
{
    return (n + 255) & ~(size_t)255;
}

/* Byte size of the layout (with 256 bytes of slack for a caller's pointer
 * of any alignment); fills w when base is given. */
size_t carve(const fs_context *ctx, int64_t rows, int64_t requests, int64_t vocab, void *base,
             tree_workspace *w)
{
    char *p = reinterpret_cast<char *>(align_up(reinterpret_cast<uintptr_t>(base)));
    const size_t max_tiles = (size_t)((vocab + FS_REC_MIN_TOKENS - 1) / FS_REC_MIN_TOKENS);
    const size_t R = (size_t)rows;
    size_t at = 0;
    auto take = [&](size_t bytes) {
        char *q = p + at;
        at += align_up(bytes);
        return q;
    };
    char *descs = take(R * sizeof(fs_row_desc));
    char *tree_rows = take(R * sizeof(fs_tree_row));
    char *pre_status = take((size_t)requests * sizeof(int32_t));
    char *tile_recs = take(R * max_tiles * sizeof(fs_record));
    char *row_recs = take(R * sizeof(fs_record));
    char *child_s = take(R * FS_TREE_MAX_CHILDREN * sizeof(float));
    char *tree_recs = take(R * sizeof(fs_tree_record));
    char *tp_gather = take(fs_tp_workspace_bytes(ctx, rows));
    char *filt = p + at;
    at += fs_filter_carve(ctx, rows, vocab, base ? filt : nullptr, w ? &w->filt : nullptr);
    if (w) {
        w->descs = reinterpret_cast<fs_row_desc *>(descs);
        w->tree_rows = reinterpret_cast<fs_tree_row *>(tree_rows);
        w->pre_status = reinterpret_cast<int32_t *>(pre_status);
        w->tile_recs = reinterpret_cast<fs_record *>(tile_recs);
        w->row_recs = reinterpret_cast<fs_record *>(row_recs);
        w->child_s = reinterpret_cast<float *>(child_s);
        w->tree_recs = reinterpret_cast<fs_tree_record *>(tree_recs);
        w->tp_gather = tp_gather;
    }
    return at + 256;
}

} // namespace

extern "C" size_t fs_cuda_tree_workspace_bytes(const fs_context *ctx, int64_t rows,
                                               int64_t requests, int64_t vocab_size)
{
    return carve(ctx, rows, requests, vocab_size, nullptr, nullptr);
}

extern "C" fs_status fs_cuda_tree_run(fs_context *ctx, const fs_tree_args *ta)
{
    const fs_op_args *a = &ta->base;
    tree_workspace w;
    carve(ctx, a->rows, ta->tree->num_requests, a->vocab_size, a->workspace, &w);
    int prev_device;
    fs_status st = fs_cuda_enter(ctx, &prev_device);
    if (st != FS_OK)
        return st;
    cudaStream_t stream = static_cast<cudaStream_t>(ctx->stream);
    const bool filters = fs_filters_requested(a->params);
    const bool sharded = fs_tp_ranks(ctx) > 1;
    fs_prep_filters pf = {};
    pf.fdescs = w.filt.fdescs;
    pf.flag_n = w.filt.flag_n;
    const char *step = "prep";
    cudaError_t e = fs_launch_tree_prep(ta, w.descs, w.tree_rows, w.child_s, w.pre_status,
                                        filters ? &pf : nullptr, stream);

    fs_scan_args s = fs_scan_args_make(a, w.descs, w.tile_recs);
    s.tree_rows = w.tree_rows;
    s.tree_child_s = w.child_s;
    s.cands = filters ? w.filt.cands : nullptr;
    if (e == cudaSuccess) {
        step = a->head ? "fused scan" : "logits scan";
        bool tail_ran = false, hopper_lists = false; /* no tail for tree verify */
        e = fs_launch_scan(ctx, a, &s, nullptr, &tail_ran, &hopper_lists, stream);
        /* the candidate lists: FS_HOPPER_TILE_LISTS per record in the Hopper
           kernels, one per (row, tile or chunk) in the other scans */
        w.filt.lists_per_row =
            hopper_lists ? s.tiles_per_row * FS_HOPPER_TILE_LISTS : s.tiles_per_row;
    }
    w.filt.tree_rows = w.tree_rows;
    w.filt.tree_child_s = w.child_s;
    if (e == cudaSuccess) {
        step = "merge";
        e = fs_launch_merge(a, w.tile_recs, s.tiles_per_row, w.descs, w.pre_status, w.row_recs,
                            0, filters ? &w.filt : nullptr, ctx->filter_force_second_pass, &s,
                            ctx->cc_major >= 9, stream);
    }
    /* exchange and filters: every rank issues the same collectives whatever
       its data (a failed request only skips rows; the second pass's count is
       the same on every rank), so no rank can hang on another; the rows the
       resolve handed over get their kept tree records (the fs_record part
       in row_recs, the kept children's scores in child_s) */
    st = fs_launch_after_merge(ctx, a, w.descs, filters ? &w.filt : nullptr, &s, w.row_recs,
                               w.tp_gather, stream, &e, &step);
    if (st != FS_OK) {
        fs_cuda_leave(prev_device);
        return st;
    }
    if (e == cudaSuccess && sharded) {
        /* after the filters: the second pass writes the kept children of
           this shard only */
        st = fs_tp_max_floats(ctx, w.child_s, (size_t)a->rows * FS_TREE_MAX_CHILDREN, stream);
        if (st != FS_OK) {
            fs_cuda_leave(prev_device);
            return st;
        }
    }
    if (e == cudaSuccess) {
        step = "finalize";
        e = fs_launch_tree_finalize(ta, w.row_recs, w.child_s, w.tree_rows, w.pre_status,
                                    w.tree_recs, stream);
    }
    fs_cuda_leave(prev_device);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return fs_fail(ctx, FS_ERR_CUDA, "tree verify: %s launch failed: %s", step,
                       cudaGetErrorString(e));
    }
    return FS_OK;
}
