/* Prep: one fs_row_desc per scanned row and the status each request has
 * before the scan, built on the device from the per-request arrays (the host
 * never reads them, so the op stays asynchronous and graph-capturable).
 * Mirrors build_descs() of the CPU backend. */
#include "cuda_common.cuh"
#include "pdl.cuh"

#define FS_PREP_THREADS 256

static unsigned prep_blocks(int64_t n)
{
    return (unsigned)((n + FS_PREP_THREADS - 1) / FS_PREP_THREADS);
}

/* sample: row r = request r at position 0; argmax: greedy, no parameters. */
__global__ void fs_prep_rows_kernel(int argmax, const float *__restrict__ temperature,
                                    const uint64_t *__restrict__ seed,
                                    const uint64_t *__restrict__ offset, int64_t rows,
                                    fs_row_desc *descs, int32_t *pre_status)
{
    fs_pdl_launch_dependents(); /* the scan may start streaming weights now */
    int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= rows)
        return;
    if (argmax) {
        descs[r] = fs_row_desc_make(0.0f, 0, 0, 0, -1, -1, (int32_t)r);
        pre_status[r] = FS_ROW_OK;
        return;
    }
    float t = temperature[r];
    int32_t st = fs_temperature_status(t);
    pre_status[r] = st;
    descs[r] = st != FS_ROW_OK ? fs_row_desc_skip()
                               : fs_row_desc_make(t, seed[r], offset ? offset[r] : 0, 0, -1, -1,
                                                  (int32_t)r);
}

/* verify, step 1: every row is skipped until a valid request claims it, and
 * one block checks the whole offsets layout (a malformed layout fails every
 * request; a well-formed one gives every request disjoint rows). */
__global__ void fs_prep_verify_init_kernel(int64_t rows, fs_row_desc *descs)
{
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows)
        descs[i] = fs_row_desc_skip();
}

__global__ void fs_prep_verify_layout_kernel(const int32_t *__restrict__ offsets,
                                             int64_t num_requests, int64_t num_draft_tokens,
                                             int32_t *layout_status)
{
    int bad = 0;
    for (int64_t r = threadIdx.x; r < num_requests; r += blockDim.x)
        bad |= offsets[r + 1] < offsets[r];
    bad = __syncthreads_or(bad);
    if (threadIdx.x == 0)
        *layout_status = bad || offsets[0] != 0 || (int64_t)offsets[num_requests] != num_draft_tokens
                             ? FS_ROW_BAD_OFFSETS
                             : FS_ROW_OK;
}

/* verify, step 2: per request status; a valid request writes its rows. */
__global__ void fs_prep_verify_desc_kernel(const int32_t *__restrict__ offsets,
                                           const int32_t *__restrict__ drafts,
                                           const float *__restrict__ temperature,
                                           const uint64_t *__restrict__ seed,
                                           const uint64_t *__restrict__ offset,
                                           int64_t num_requests, int64_t max_drafts,
                                           int64_t global_vocab, const int32_t *layout_status,
                                           int32_t *pre_status,
                                           fs_row_desc *descs)
{
    fs_pdl_launch_dependents(); /* the scan may start streaming weights now */
    int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= num_requests)
        return;
    float t = temperature[r];
    int32_t st = fs_verify_request_status(*layout_status, offsets, drafts, r, max_drafts,
                                          global_vocab, t);
    pre_status[r] = st;
    if (st != FS_ROW_OK)
        return;
    int64_t begin = offsets[r], n = offsets[r + 1] - begin;
    uint64_t sd = seed[r], off = offset ? offset[r] : 0;
    for (int64_t j = 0; j <= n; ++j)
        descs[begin + r + j] = fs_verify_row_desc(drafts + begin, n, j, t, sd, off, (int32_t)r);
}

cudaError_t fs_launch_prep(const fs_op_args *a, fs_row_desc *descs, int32_t *pre_status,
                           int32_t *layout_status, cudaStream_t stream)
{
    const fs_sampling *p = a->params;
    if (a->op != FS_OP_VERIFY) {
        int argmax = a->op == FS_OP_ARGMAX;
        fs_prep_rows_kernel<<<prep_blocks(a->rows), FS_PREP_THREADS, 0, stream>>>(
            argmax, argmax ? nullptr : p->temperature, argmax ? nullptr : p->seed,
            argmax ? nullptr : p->offset, a->rows, descs, pre_status);
        return cudaGetLastError();
    }
    const fs_drafts *d = a->drafts;
    fs_prep_verify_init_kernel<<<prep_blocks(a->rows), FS_PREP_THREADS, 0, stream>>>(a->rows,
                                                                                     descs);
    fs_prep_verify_layout_kernel<<<1, 1024, 0, stream>>>(
        d->draft_offsets, d->num_requests, d->num_draft_tokens, layout_status);
    fs_prep_verify_desc_kernel<<<prep_blocks(d->num_requests), FS_PREP_THREADS, 0, stream>>>(
        d->draft_offsets, d->draft_tokens, p->temperature, p->seed, p->offset, d->num_requests,
        d->max_drafts, a->global_vocab, layout_status, pre_status, descs);
    return cudaGetLastError();
}
