/* Tensor-parallel step between merge and finalize: every rank holds merged
 * records of its vocabulary shard; after the exchange every rank holds the
 * records of the whole vocabulary, merged in rank order, hence bit-identical
 * on all ranks. */
#ifndef FS_TP_EXCHANGE_CUH
#define FS_TP_EXCHANGE_CUH

#include <cuda_runtime.h>

#include "backend.h"
#include "record.h"

/* Ranks in ctx's communicator (1 when the context is not sharded). */
int fs_tp_ranks(const fs_context *ctx);

/* Bytes of workspace the exchange needs for `rows` rows. */
size_t fs_tp_workspace_bytes(const fs_context *ctx, int64_t rows);

/* In place: row_recs[rows] (this shard's) becomes the global records.
 * gather is fs_tp_workspace_bytes of workspace. */
fs_status fs_tp_exchange(fs_context *ctx, fs_record *row_recs, int64_t rows, void *gather,
                         cudaStream_t stream);

/* In place: the element-wise maximum of buf[n] over the ranks (tree verify's
 * children's scores: each child's token lives in one shard, the others hold
 * -inf).  A maximum is exact and order-free, so every rank gets the same
 * bits.  Nothing to do on an unsharded context. */
fs_status fs_tp_max_floats(fs_context *ctx, float *buf, size_t n, cudaStream_t stream);

#endif
