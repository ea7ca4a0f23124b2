/* Prep: one fs_row_desc per scanned row and the status each request has
 * before the scan, built on the device from the per-request arrays (the host
 * never reads them, so the op stays asynchronous and graph-capturable), and
 * the zeroed counter with which the scan's last CTA recognises itself
 * (op_tail.cuh).  One launch per op.  Mirrors build_descs() of the CPU
 * backend. */
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
                                    int64_t global_vocab, fs_prep_filters f,
                                    fs_row_desc *descs, int32_t *pre_status,
                                    unsigned int *counter)
{
    fs_pdl_launch_dependents(); /* the scan may start streaming weights now */
    int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r == 0) {
        *counter = 0u;
        if (f.flag_n) {
            f.flag_n[0] = 0u; /* rows handed to the second pass */
            f.flag_n[1] = 0u; /* sharded contexts: the passes they need */
        }
    }
    if (r >= rows)
        return;
    /* Every parameter of the row read at once, before any is tested, and
       used from registers: the scan's consumers wait for this kernel, and
       each dependent read beside the weight stream is a DRAM round trip.
       Read where they were tested (the seed after the temperature's check,
       the filters' again after the stores, which may alias them), a
       filtered row took four, 3.6-4.9 us on an H200, and now one, 1.9-2.4
       (an unfiltered row's prep took two, 1.4-1.9).  seed holds every
       request's (validate.c); a row whose temperature fails ignores it. */
    const bool sampled = !argmax;
    const float t = sampled ? temperature[r] : 0.0f;
    const uint64_t sd = sampled ? seed[r] : 0;
    const uint64_t off = sampled && offset ? offset[r] : 0;
    /* an op without filters has NULL parameter arrays: read as off */
    const fs_filter_params q = fs_filter_params_read(f.top_k, f.top_p, f.min_p, r);
    int32_t st;
    fs_row_desc d = fs_row_desc_sample_of(sampled, t, sd, off, r, &st);
    if (f.fdescs) { /* sample only */
        if (st == FS_ROW_OK)
            st = fs_filter_status_of(q);
        if (f.out_fallback)
            f.out_fallback[r] = 0;
        if (st != FS_ROW_OK)
            d = fs_row_desc_skip();
    }
    pre_status[r] = st;
    if (f.fdescs)
        fs_prep_filter_row(q, global_vocab, d, &f.fdescs[r]);
    descs[r] = d;
}

/* verify: every block checks the offsets layout (R + 1 ints: cheaper than a
 * second launch); a malformed layout fails every request and skips every row,
 * a well-formed one gives every request disjoint rows, which covers all rows:
 * each request's thread writes its rows (descriptors, or skips when the
 * request itself is bad). */
__global__ void fs_prep_verify_kernel(const int32_t *__restrict__ offsets,
                                      const int32_t *__restrict__ drafts,
                                      const float *__restrict__ temperature,
                                      const uint64_t *__restrict__ seed,
                                      const uint64_t *__restrict__ offset, int64_t num_requests,
                                      int64_t num_draft_tokens, int64_t max_drafts,
                                      int64_t global_vocab, int64_t rows, fs_prep_filters f,
                                      int32_t *pre_status, fs_row_desc *descs,
                                      unsigned int *counter)
{
    fs_pdl_launch_dependents(); /* the scan may start streaming weights now */
    const int64_t first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    if (first == 0) {
        *counter = 0u;
        if (f.flag_n) {
            f.flag_n[0] = 0u; /* rows handed to the second pass */
            f.flag_n[1] = 0u; /* sharded contexts: the passes they need */
        }
    }
    /* A thread has one request, r = first (fs_launch_prep's grid covers
       them); its values are read before the layout check, so that their
       DRAM round trip overlaps the check's.  The scan's consumers wait for
       this kernel, and beside the scan's weight stream each dependent read
       waits microseconds: with a read a draft, one request took 10 us on an
       H200 (3 us after a matmul) */
    const int64_t r = first;
    const bool own = r < num_requests;
    int64_t begin = 0, end = 0;
    float t = 1.0f;
    uint64_t sd = 0, off = 0;
    fs_filter_params fq = fs_filter_params_read(nullptr, nullptr, nullptr, 0); /* off */
    if (own) {
        begin = offsets[r];
        end = offsets[r + 1];
        t = temperature[r];
        sd = seed[r];
        off = offset ? offset[r] : 0;
        /* the filters' too (NULL arrays: off), used from registers below
           (they were read after the layout check's barrier, and again for
           each row after stores that may alias them) */
        fq = fs_filter_params_read(f.top_k, f.top_p, f.min_p, r);
    }
    int bad = 0;
    for (int64_t q = threadIdx.x; q < num_requests; q += blockDim.x)
        bad |= offsets[q + 1] < offsets[q];
    bad = __syncthreads_or(bad);
    const int32_t layout = bad || offsets[0] != 0 ||
                                   (int64_t)offsets[num_requests] != num_draft_tokens
                               ? FS_ROW_BAD_OFFSETS
                               : FS_ROW_OK;
    if (own && f.out_fallback)
        f.out_fallback[r] = 0;
    if (layout != FS_ROW_OK) {
        for (int64_t i = first; i < rows; i += stride) {
            descs[i] = fs_row_desc_skip();
            if (f.fdescs)
                f.fdescs[i].active = 0;
        }
        if (own)
            pre_status[r] = layout;
        return;
    }
    if (!own)
        return;
    const int64_t n = end - begin;
    int32_t st = fs_verify_drafts_status(drafts, begin, n, max_drafts, global_vocab, t);
    if (st == FS_ROW_OK && f.fdescs)
        st = fs_filter_status_of(fq);
    pre_status[r] = st;
    for (int64_t j = 0; j <= n; ++j) {
        fs_row_desc d = st == FS_ROW_OK
                            ? fs_verify_row_desc(drafts + begin, n, j, t, sd, off, (int32_t)r)
                            : fs_row_desc_skip();
        if (f.fdescs)
            fs_prep_filter_row(fq, global_vocab, d, &f.fdescs[begin + r + j]);
        descs[begin + r + j] = d;
    }
}

cudaError_t fs_launch_prep(const fs_op_args *a, fs_row_desc *descs, int32_t *pre_status,
                           unsigned int *counter, const fs_prep_filters *filters,
                           cudaStream_t stream)
{
    const fs_sampling *p = a->params;
    const fs_prep_filters f = fs_prep_filters_of(p, filters);
    if (a->op != FS_OP_VERIFY) {
        int argmax = a->op == FS_OP_ARGMAX;
        fs_prep_rows_kernel<<<prep_blocks(a->rows), FS_PREP_THREADS, 0, stream>>>(
            argmax, argmax ? nullptr : p->temperature, argmax ? nullptr : p->seed,
            argmax ? nullptr : p->offset, a->rows, a->global_vocab, f, descs, pre_status,
            counter);
        return cudaGetLastError();
    }
    const fs_drafts *d = a->drafts;
    fs_prep_verify_kernel<<<prep_blocks(d->num_requests), FS_PREP_THREADS, 0, stream>>>(
        d->draft_offsets, d->draft_tokens, p->temperature, p->seed, p->offset, d->num_requests,
        d->num_draft_tokens, d->max_drafts, a->global_vocab, a->rows, f, pre_status, descs,
        counter);
    return cudaGetLastError();
}
