/* Second stage of the scan: merge each row's tile records into one record per
 * row (row_recs), then run the op's finalizer (finalize.h) on the merged
 * records.  When nothing has to happen in between (sample and argmax without
 * a tensor-parallel exchange), the merge block finalizes its row itself and
 * the separate finalize launch is skipped: at small row counts every launch
 * is a visible share of the call. */
#define FS_COLD_CODE 1 /* fs_hd.h: these kernels run once per row per call, from cold code */
#include "cuda_common.cuh"
#include "filter_gpu.cuh"
#include "merge_row.cuh"

#define FS_FINALIZE_THREADS 128

/* One block per row (merge_row.cuh), ops without filters: 1 KB of shared
 * memory, so that they keep several blocks an SM at large row counts.  The
 * filtered ops merge in filter_fallback.cu (fs_launch_filter_merge), where
 * on one GPU the second pass shares the launch. */
__global__ void __launch_bounds__(FS_MERGE_THREADS, 1) fs_merge_kernel(fs_merge_io m)
{
    fs_merge_row<false, false>(m, fs_filter_ws{}, blockIdx.x);
}

cudaError_t fs_launch_merge(const fs_op_args *a, const fs_record *tile_recs,
                            int64_t tiles_per_row, const fs_row_desc *descs,
                            const int32_t *pre_status, fs_record *row_recs, int finalize,
                            const fs_filter_ws *filt, int force_second_pass,
                            const fs_scan_args *s, bool overlap, cudaStream_t stream)
{
    if (filt)
        return fs_launch_filter_merge(a, tile_recs, tiles_per_row, descs, pre_status, row_recs,
                                      finalize, filt, force_second_pass, s, overlap, stream);
    const fs_merge_io m = fs_merge_io_make(a, tile_recs, tiles_per_row, descs, pre_status,
                                           row_recs, finalize, nullptr, force_second_pass);
    fs_pdl_config pc(dim3((unsigned)a->rows), dim3(FS_MERGE_THREADS), 0, stream, overlap);
    cudaError_t e = cudaLaunchKernelEx(&pc.cfg, fs_merge_kernel, m);
    return e != cudaSuccess ? e : cudaGetLastError();
}

/* Sharded contexts, after the exchange of records and summaries: one block
 * per row resolves each filtered row from its global record (row_recs) and
 * the ranks' summaries (filt.sum_gather, [ranks][rows]) and stores its kept
 * record in row_recs; an undecided row goes to filt.fb_stage[row] (every
 * other row's stage slot is marked -1), which the TP second pass compacts.
 * The inputs are the same bits on every rank, so are the decisions.  TREE:
 * tree verify's rows; a decided row's kept children's scores, built from
 * every rank's candidates, are global, and a handed-over row's are -inf
 * until the second pass's draw writes this shard's kept children -- so the
 * maximum over the ranks that follows leaves the first unchanged and
 * completes the second (cuda_tree.cu). */
template <bool TREE>
__global__ void __launch_bounds__(FS_MERGE_THREADS, 1)
    fs_filter_tp_resolve_kernel(const fs_row_desc *__restrict__ descs, fs_record *row_recs,
                                fs_filter_ws filt, int64_t rows, int ranks,
                                int32_t *out_fallback, int force_second_pass)
{
    const int64_t row = blockIdx.x;
    const fs_row_desc d = descs[row];
    const fs_record rec = row_recs[row];
    if (!(d.flags & FS_ROWF_FILTER) || fs_record_status(&rec) != FS_ROW_OK) {
        if (threadIdx.x == 0)
            filt.fb_stage[row].row = -1;
        return;
    }
    const fsf::handover ho = {filt.fb, filt.fb_stage, filt.flag_n, out_fallback};
    fs_record kept;
    const fsf::tree_ctx tc = {TREE ? filt.tree_rows + row : nullptr,
                              TREE ? filt.tree_child_s + row * FS_TREE_MAX_CHILDREN : nullptr};
    if (fsf::fs_filter_resolve_merged<TREE>(row, rec, filt.fdescs[row], d, filt.sum_gather + row,
                                            rows, ranks, force_second_pass, ho, &kept, tc) &&
        threadIdx.x == 0) {
        row_recs[row] = kept;
        filt.fb_stage[row].row = -1;
    }
}

cudaError_t fs_launch_filter_tp_resolve(const fs_op_args *a, const fs_row_desc *descs,
                                        fs_record *row_recs, const fs_filter_ws *filt, int ranks,
                                        int force_second_pass, cudaStream_t stream)
{
    int32_t *out_fallback = a->params ? a->params->out_filter_fallback : nullptr;
    const auto kernel =
        filt->tree_rows ? fs_filter_tp_resolve_kernel<true> : fs_filter_tp_resolve_kernel<false>;
    kernel<<<(unsigned)a->rows, FS_MERGE_THREADS, sizeof(fsf::resolve_smem), stream>>>(
        descs, row_recs, *filt, a->rows, ranks, out_fallback, force_second_pass);
    return cudaGetLastError();
}

/* The finalize kernels, for what the merge did not finalize: verify, and
 * every op under tensor parallelism (after the exchange). */

/* sample, argmax: one thread per row. */
__global__ void fs_finalize_rows_kernel(int op, const fs_record *__restrict__ row_recs,
                                        const fs_row_desc *__restrict__ descs,
                                        const int32_t *__restrict__ pre_status, int64_t rows,
                                        int32_t *out_tokens, float *out_values,
                                        int32_t *out_row_status)
{
    int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows)
        fs_finalize_row(op, row_recs[r], descs[r], pre_status[r], r, out_tokens, out_values,
                        out_row_status);
}

/* verify: one warp per request walks its n_r + 1 merged records. */
__global__ void fs_finalize_verify_kernel(const fs_record *__restrict__ row_recs,
                                          const fs_row_desc *__restrict__ descs,
                                          const int32_t *__restrict__ pre_status,
                                          const int32_t *__restrict__ offsets,
                                          const int32_t *__restrict__ drafts,
                                          int64_t num_requests, int64_t stride,
                                          int32_t *out_tokens, float *out_logprobs,
                                          int32_t *out_num_emitted, int32_t *out_row_status)
{
    const int64_t r = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5; /* per warp */
    if (r < num_requests)
        fs_finalize_request(r, (int)(threadIdx.x & 31u), row_recs, descs, pre_status, offsets,
                            drafts, stride, out_tokens, out_logprobs, out_num_emitted,
                            out_row_status);
}

static unsigned fin_blocks(int64_t n)
{
    return (unsigned)((n + FS_FINALIZE_THREADS - 1) / FS_FINALIZE_THREADS);
}

cudaError_t fs_launch_finalize(const fs_op_args *a, const fs_record *row_recs,
                               const fs_row_desc *descs, const int32_t *pre_status,
                               cudaStream_t stream)
{
    if (a->op != FS_OP_VERIFY) {
        fs_finalize_rows_kernel<<<fin_blocks(a->rows), FS_FINALIZE_THREADS, 0, stream>>>(
            (int)a->op, row_recs, descs, pre_status, a->rows, a->out_tokens, a->out_values,
            a->out_row_status);
    } else {
        const fs_drafts *d = a->drafts;
        fs_finalize_verify_kernel<<<fin_blocks(d->num_requests * 32), FS_FINALIZE_THREADS, 0,
                                    stream>>>(row_recs, descs, pre_status, d->draft_offsets,
                                              d->draft_tokens, d->num_requests,
                                              d->max_drafts + 1, a->out_tokens, a->out_values,
                                              a->out_num_emitted, a->out_row_status);
    }
    return cudaGetLastError();
}
