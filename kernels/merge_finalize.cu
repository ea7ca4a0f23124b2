/* Second stage of the scan: merge each row's tile records into one record per
 * row (row_recs), then run the op's finalizer (finalize.h) on the merged
 * records.  The two are separate launches: the tensor-parallel exchange of
 * row_recs (tp_exchange.cu) runs between them. */
#include "cuda_common.cuh"

#define FS_MERGE_THREADS 128
#define FS_FINALIZE_THREADS 128

/* One block per row.  Thread t merges tiles t, t + 128, ... in order, then the
 * block merges the threads' records in a fixed tree: the result (sum_exp's
 * rounding included) is the same on every run. */
__global__ void __launch_bounds__(FS_MERGE_THREADS)
    fs_merge_kernel(const fs_record *__restrict__ tile_recs, int64_t tiles_per_row,
                    const fs_row_desc *__restrict__ descs, fs_record *row_recs)
{
    __shared__ fs_record scratch[32];
    const int64_t row = blockIdx.x;
    fs_record acc;
    fs_record_init(&acc);
    if (descs[row].flags & FS_ROWF_VALID) {
        const fs_record *recs = tile_recs + row * tiles_per_row;
        for (int64_t t = threadIdx.x; t < tiles_per_row; t += blockDim.x) {
            fs_record r = recs[t];
            fs_record_merge(&acc, &r);
        }
    }
    acc = fs_record_block_reduce(acc, scratch);
    if (threadIdx.x == 0)
        row_recs[row] = acc;
}

cudaError_t fs_launch_merge(const fs_record *tile_recs, int64_t tiles_per_row,
                            const fs_row_desc *descs, fs_record *row_recs, int64_t rows,
                            cudaStream_t stream)
{
    fs_merge_kernel<<<(unsigned)rows, FS_MERGE_THREADS, 0, stream>>>(tile_recs, tiles_per_row,
                                                                     descs, row_recs);
    return cudaGetLastError();
}

/* sample: rows whose temperature was bad keep their pre-scan status. */
__global__ void fs_finalize_sample_kernel(const fs_record *__restrict__ row_recs,
                                          const fs_row_desc *__restrict__ descs,
                                          const int32_t *__restrict__ pre_status, int64_t rows,
                                          int32_t *out_tokens, float *out_logprobs,
                                          int32_t *out_row_status)
{
    int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    fs_record rec = row_recs[r];
    fs_row_desc d = descs[r];
    int32_t tok, st = pre_status[r];
    float lp;
    fs_finalize_sample(&rec, &d, &tok, &lp, &st);
    out_tokens[r] = tok;
    if (out_logprobs)
        out_logprobs[r] = lp;
    out_row_status[r] = st;
}

__global__ void fs_finalize_argmax_kernel(const fs_record *__restrict__ row_recs, int64_t rows,
                                          int32_t *out_tokens, float *out_logits,
                                          int32_t *out_row_status)
{
    int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    fs_record rec = row_recs[r];
    int32_t tok, st;
    float v;
    fs_finalize_argmax(&rec, &tok, &v, &st);
    out_tokens[r] = tok;
    if (out_logits)
        out_logits[r] = v;
    out_row_status[r] = st;
}

/* verify: one thread per request walks its n_r + 1 merged records. */
__global__ void fs_finalize_verify_kernel(const fs_record *__restrict__ row_recs,
                                          const fs_row_desc *__restrict__ descs,
                                          const int32_t *__restrict__ pre_status,
                                          const int32_t *__restrict__ offsets,
                                          const int32_t *__restrict__ drafts,
                                          int64_t num_requests, int64_t stride,
                                          int32_t *out_tokens, float *out_logprobs,
                                          int32_t *out_num_emitted, int32_t *out_row_status)
{
    int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= num_requests)
        return;
    int32_t st = pre_status[r];
    int ok = st == FS_ROW_OK;
    int64_t begin = ok ? offsets[r] : 0;
    int64_t n = ok ? offsets[r + 1] - begin : 0;
    int32_t emitted;
    fs_finalize_verify(ok ? row_recs + begin + r : nullptr, ok ? descs + begin + r : nullptr,
                       ok ? drafts + begin : nullptr, n, stride, out_tokens + r * stride,
                       out_logprobs ? out_logprobs + r * stride : nullptr, &emitted, &st);
    out_num_emitted[r] = emitted;
    out_row_status[r] = st;
}

static unsigned fin_blocks(int64_t n)
{
    return (unsigned)((n + FS_FINALIZE_THREADS - 1) / FS_FINALIZE_THREADS);
}

cudaError_t fs_launch_finalize(const fs_op_args *a, const fs_record *row_recs,
                               const fs_row_desc *descs, const int32_t *pre_status,
                               cudaStream_t stream)
{
    if (a->op == FS_OP_SAMPLE) {
        fs_finalize_sample_kernel<<<fin_blocks(a->rows), FS_FINALIZE_THREADS, 0, stream>>>(
            row_recs, descs, pre_status, a->rows, a->out_tokens, a->out_values,
            a->out_row_status);
    } else if (a->op == FS_OP_ARGMAX) {
        fs_finalize_argmax_kernel<<<fin_blocks(a->rows), FS_FINALIZE_THREADS, 0, stream>>>(
            row_recs, a->rows, a->out_tokens, a->out_values, a->out_row_status);
    } else {
        const fs_drafts *d = a->drafts;
        fs_finalize_verify_kernel<<<fin_blocks(d->num_requests), FS_FINALIZE_THREADS, 0,
                                    stream>>>(row_recs, descs, pre_status, d->draft_offsets,
                                              d->draft_tokens, d->num_requests,
                                              d->max_drafts + 1, a->out_tokens, a->out_values,
                                              a->out_num_emitted, a->out_row_status);
    }
    return cudaGetLastError();
}
