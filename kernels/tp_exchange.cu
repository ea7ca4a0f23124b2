/* NCCL exchange of per-row summary records across vocabulary shards: a few
 * dozen bytes per row per rank instead of the logits. */
#include "tp_exchange.cuh"

#include "filter_gpu.cuh"

#ifdef FS_HAVE_NCCL
#include <nccl.h>
#endif

int fs_tp_ranks(const fs_context *ctx)
{
#ifdef FS_HAVE_NCCL
    int n = 1;
    if (ctx->nccl_comm && ncclCommCount((ncclComm_t)ctx->nccl_comm, &n) == ncclSuccess)
        return n;
#else
    (void)ctx;
#endif
    return 1;
}

size_t fs_tp_workspace_bytes(const fs_context *ctx, int64_t rows)
{
    int n = fs_tp_ranks(ctx);
    return n > 1 ? (size_t)n * (size_t)rows * sizeof(fs_record) : 0;
}

/* gather holds [ranks][rows]; merging in rank order makes every rank's result
 * bit-identical (sum_exp is the only order-sensitive field). */
__global__ void fs_tp_merge_kernel(const fs_record *__restrict__ gather, fs_record *row_recs,
                                   int64_t rows, int ranks)
{
    int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    fs_record acc = gather[r];
    for (int k = 1; k < ranks; ++k)
        fs_record_merge(&acc, &gather[(int64_t)k * rows + r]);
    row_recs[r] = acc;
}

fs_status fs_tp_exchange(fs_context *ctx, fs_record *row_recs, int64_t rows, void *gather,
                         const void *sums, void *sum_gather, size_t sum_bytes,
                         cudaStream_t stream)
{
#ifdef FS_HAVE_NCCL
    int ranks = fs_tp_ranks(ctx);
    if (ranks <= 1)
        return FS_OK;
    ncclComm_t comm = (ncclComm_t)ctx->nccl_comm;
    ncclResult_t nr = ncclGroupStart();
    if (nr == ncclSuccess)
        nr = ncclAllGather(row_recs, gather, (size_t)rows * sizeof(fs_record), ncclUint8, comm,
                           stream);
    if (nr == ncclSuccess && sums)
        nr = ncclAllGather(sums, sum_gather, (size_t)rows * sum_bytes, ncclUint8, comm, stream);
    const ncclResult_t ne = ncclGroupEnd();
    nr = nr != ncclSuccess ? nr : ne;
    if (nr != ncclSuccess)
        return fs_fail(ctx, FS_ERR_NCCL, "tensor-parallel all-gather of records: %s",
                       ncclGetErrorString(nr));
    int threads = 128;
    fs_tp_merge_kernel<<<(unsigned)((rows + threads - 1) / threads), threads, 0, stream>>>(
        (const fs_record *)gather, row_recs, rows, ranks);
    cudaError_t ce = cudaGetLastError();
    if (ce != cudaSuccess)
        return fs_fail(ctx, FS_ERR_CUDA, "tensor-parallel merge: %s", cudaGetErrorString(ce));
    return FS_OK;
#else
    (void)row_recs;
    (void)rows;
    (void)gather;
    (void)sums;
    (void)sum_gather;
    (void)sum_bytes;
    (void)stream;
    if (ctx->nccl_comm)
        return fs_fail(ctx, FS_ERR_UNSUPPORTED, "flashspec was built without NCCL");
    return FS_OK;
#endif
}

fs_status fs_tp_max_floats(fs_context *ctx, float *buf, size_t n, cudaStream_t stream)
{
#ifdef FS_HAVE_NCCL
    if (fs_tp_ranks(ctx) <= 1 || n == 0)
        return FS_OK;
    ncclResult_t nr =
        ncclAllReduce(buf, buf, n, ncclFloat, ncclMax, (ncclComm_t)ctx->nccl_comm, stream);
    if (nr != ncclSuccess)
        return fs_fail(ctx, FS_ERR_NCCL, "tensor-parallel all-reduce (max): %s",
                       ncclGetErrorString(nr));
    return FS_OK;
#else
    (void)buf;
    (void)n;
    (void)stream;
    if (ctx->nccl_comm)
        return fs_fail(ctx, FS_ERR_UNSUPPORTED, "flashspec was built without NCCL");
    return FS_OK;
#endif
}

#ifdef FS_HAVE_NCCL
/* Sum (or max) of n_host slots across the ranks, in place. */
static ncclResult_t all_reduce(void *buf, size_t count, ncclDataType_t type, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t stream)
{
    return ncclAllReduce(buf, buf, count, type, op, comm, stream);
}
#endif

/* Every rank enqueues the same NCCL calls in the same order: the count read
 * to the host is the same on every rank (the resolve's inputs -- global
 * records, every rank's summaries, the parameters -- are), and under capture
 * the calls do not depend on the data at all.  Why a host read: the passes
 * are separate launches with all-reduces between them, and without the
 * count every filtered call would pay for six all-reduces of every row's
 * 2048-bucket histograms (~1.5 MB at 64 rows) although nearly every call
 * hands no row over. */
fs_status fs_tp_filter_second_pass(fs_context *ctx, const fs_op_args *a, const fs_filter_ws *w,
                                   const fs_scan_args *s, const fs_fallback_src *src,
                                   fs_record *row_recs, void *gather, cudaStream_t stream)
{
#ifdef FS_HAVE_NCCL
    const int ranks = fs_tp_ranks(ctx);
    ncclComm_t comm = (ncclComm_t)ctx->nccl_comm;
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    cudaError_t e = cudaStreamIsCapturing(stream, &cs);
    int64_t n_host = a->rows;
    int passes = 2 * FS_SELECT_LEVELS;
    if (e == cudaSuccess && cs == cudaStreamCaptureStatusNone) {
        /* flag_n[0]: rows handed over; flag_n[1]: histogram passes they need */
        unsigned int h[2] = {0u, 0u};
        e = cudaMemcpyAsync(h, w->flag_n, sizeof h, cudaMemcpyDeviceToHost, stream);
        if (e == cudaSuccess)
            e = cudaStreamSynchronize(stream);
        n_host = h[0];
        passes = (int)h[1];
    }
    if (e != cudaSuccess)
        return fs_fail(ctx, FS_ERR_CUDA, "filter second pass: reading the handed-over rows: %s",
                       cudaGetErrorString(e));
    if (n_host == 0)
        return FS_OK;
    if (n_host > a->rows || passes < 1 || passes > 2 * FS_SELECT_LEVELS)
        return fs_fail(ctx, FS_ERR_CUDA, "filter second pass: bad handed-over count %lld / %d",
                       (long long)n_host, passes);
    const char *step = "begin";
    ncclResult_t nr = ncclSuccess;
    e = fs_launch_tp_fb_begin(w, a->rows, n_host, stream);
    const size_t slots = (size_t)n_host * FS_SELECT_BUCKETS;
    for (int pass = 0; pass < passes && e == cudaSuccess && nr == ncclSuccess; ++pass) {
        step = "histogram";
        e = fs_launch_tp_fb_hist(a, w, s, src, pass, stream);
        if (e != cudaSuccess)
            break;
        nr = ncclGroupStart();
        if (nr == ncclSuccess)
            nr = all_reduce(w->hist_count, slots, ncclUint32, ncclSum, comm, stream);
        if (nr == ncclSuccess)
            nr = all_reduce(w->hist_mass, slots, ncclUint64, ncclSum, comm, stream);
        if (nr == ncclSuccess && pass == 0)
            nr = all_reduce(w->tp_max, (size_t)n_host, ncclUint32, ncclMax, comm, stream);
        const ncclResult_t ne = ncclGroupEnd();
        nr = nr != ncclSuccess ? nr : ne;
        if (nr != ncclSuccess)
            break;
        step = "select";
        e = fs_launch_tp_fb_step(w, pass, stream);
    }
    if (e == cudaSuccess && nr == ncclSuccess) {
        step = "draw";
        e = fs_launch_tp_fb_draw(a, w, s, src, stream);
    }
    if (e == cudaSuccess && nr == ncclSuccess)
        nr = ncclAllGather(w->tp_part, gather, (size_t)n_host * sizeof(fs_record), ncclUint8,
                           comm, stream);
    if (e == cudaSuccess && nr == ncclSuccess) {
        step = "store";
        e = fs_launch_tp_fb_store(w, (const fs_record *)gather, n_host, ranks, row_recs, stream);
    }
    if (nr != ncclSuccess)
        return fs_fail(ctx, FS_ERR_NCCL, "filter second pass: %s", ncclGetErrorString(nr));
    if (e != cudaSuccess)
        return fs_fail(ctx, FS_ERR_CUDA, "filter second pass: %s launch failed: %s", step,
                       cudaGetErrorString(e));
    return FS_OK;
#else
    (void)a;
    (void)w;
    (void)s;
    (void)src;
    (void)row_recs;
    (void)gather;
    (void)stream;
    return fs_fail(ctx, FS_ERR_UNSUPPORTED, "flashspec was built without NCCL");
#endif
}
