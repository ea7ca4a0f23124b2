/* NCCL exchange of per-row summary records across vocabulary shards: a few
 * dozen bytes per row per rank instead of the logits. */
#include "tp_exchange.cuh"

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
                         cudaStream_t stream)
{
#ifdef FS_HAVE_NCCL
    int ranks = fs_tp_ranks(ctx);
    if (ranks <= 1)
        return FS_OK;
    ncclResult_t nr = ncclAllGather(row_recs, gather, (size_t)rows * sizeof(fs_record), ncclUint8,
                                    (ncclComm_t)ctx->nccl_comm, stream);
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
