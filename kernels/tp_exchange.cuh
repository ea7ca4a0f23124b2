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
 * gather is fs_tp_workspace_bytes of workspace.  sums (NULL when the op has
 * no filters): this shard's rows' filter summaries (sum_bytes a row), all
 * gathered beside the records into sum_gather ([ranks][rows]). */
fs_status fs_tp_exchange(fs_context *ctx, fs_record *row_recs, int64_t rows, void *gather,
                         const void *sums, void *sum_gather, size_t sum_bytes,
                         cudaStream_t stream);

/* In place: the element-wise maximum of buf[n] over the ranks (tree verify's
 * children's scores: each child's token lives in one shard, the others hold
 * -inf).  A maximum is exact and order-free, so every rank gets the same
 * bits.  Nothing to do on an unsharded context. */
fs_status fs_tp_max_floats(fs_context *ctx, float *buf, size_t n, cudaStream_t stream);

struct fs_filter_ws;
struct fs_scan_args;
struct fs_fallback_src;

/* The filters' second pass over the rows the ranks' resolve handed over
 * (filter_fallback.cu's steps with NCCL between them); their kept records
 * end in row_recs.  gather: the exchange's workspace.  Unless the stream is
 * being captured it reads the handed-over count to the host (one 8-byte
 * copy and a stream synchronisation) and does nothing more when it is 0;
 * under capture it enqueues every pass over every row. */
fs_status fs_tp_filter_second_pass(fs_context *ctx, const fs_op_args *a,
                                   const struct fs_filter_ws *w, const struct fs_scan_args *s,
                                   const struct fs_fallback_src *src, fs_record *row_recs,
                                   void *gather, cudaStream_t stream);

#endif
