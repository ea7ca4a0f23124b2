/* The prep kernel's work (prep.cu) done by a single-launch scan itself
 * (fs_tail_args.single): every CTA builds the descriptors of the rows it
 * scans from the per-request arrays, with the same functions and the same
 * decisions as prep (finalize.h), and CTA 0 stores every row's descriptor
 * and every request's status where the op's end reads them.  Unfiltered
 * sample, draft argmax and verify; the filters keep the prep kernel. */
#ifndef FS_SCAN_PREP_CUH
#define FS_SCAN_PREP_CUH

#include <stdint.h>

#include "cuda_common.cuh"
#include "finalize.h"

/* OR of `pred` over `threads` threads (whole warps) at named barrier bar_id. */
static __device__ __forceinline__ bool fs_bar_or(bool pred, int bar_id, int threads)
{
    uint32_t out;
    asm volatile("{\n\t.reg .pred q, p;\n\t"
                 "setp.ne.u32 q, %1, 0;\n\t"
                 "bar.red.or.pred p, %2, %3, q;\n\t"
                 "selp.u32 %0, 1, 0, p;\n\t}"
                 : "=r"(out)
                 : "r"((uint32_t)pred), "r"(bar_id), "r"(threads)
                 : "memory");
    return out != 0;
}

/* verify: the offsets layout's status, FS_ROW_OK for the other ops (as
 * fs_prep_verify_kernel's every block checks it); `threads` threads of the
 * CTA take part (named barrier bar_id), or with threads = 1 the calling
 * thread alone checks every request, without a barrier. */
static __device__ __forceinline__ int32_t fs_scan_prep_layout(const fs_tail_args &t, int64_t rows,
                                                              int tid, int threads, int bar_id)
{
    if (t.op != FS_OP_VERIFY)
        return FS_ROW_OK;
    bool bad = false;
    for (int64_t r = tid; r < t.num_requests; r += threads)
        bad |= t.offsets[r + 1] < t.offsets[r];
    if (threads > 1)
        bad = fs_bar_or(bad, bar_id, threads);
    return bad || t.offsets[0] != 0 ||
                   (int64_t)t.offsets[t.num_requests] != rows - t.num_requests
               ? FS_ROW_BAD_OFFSETS
               : FS_ROW_OK;
}

/* verify: request r's status before the scan (prep's). */
static __device__ __forceinline__ int32_t fs_scan_prep_request(const fs_tail_args &t,
                                                               int32_t layout, int64_t r,
                                                               int64_t global_vocab)
{
    return fs_verify_request_status(layout, t.offsets, t.drafts, r, t.stride - 1, global_vocab,
                                    t.temperature[r]);
}

/* Row `row`'s descriptor, as prep writes it. */
static __device__ __forceinline__ fs_row_desc fs_scan_prep_row(const fs_tail_args &t,
                                                               int32_t layout, int64_t row,
                                                               int64_t global_vocab)
{
    if (t.op != FS_OP_VERIFY) {
        int32_t st;
        return fs_row_desc_sample(t.temperature, t.seed, t.offset, row, &st);
    }
    if (layout != FS_ROW_OK)
        return fs_row_desc_skip();
    /* a valid layout gives request r the rows offsets[r] + r .. offsets[r +
       1] + r, and offsets[r] + r grows with r: the last r whose first row is
       at or before `row` */
    int64_t lo = 0, hi = t.num_requests - 1;
    while (lo < hi) {
        const int64_t mid = (lo + hi + 1) >> 1;
        if ((int64_t)t.offsets[mid] + mid <= row)
            lo = mid;
        else
            hi = mid - 1;
    }
    const int64_t r = lo, begin = t.offsets[r], n = t.offsets[r + 1] - begin;
    if (fs_scan_prep_request(t, layout, r, global_vocab) != FS_ROW_OK)
        return fs_row_desc_skip();
    return fs_verify_row_desc(t.drafts + begin, n, row - begin - r, t.temperature[r], t.seed[r],
                              t.offset ? t.offset[r] : 0, (int32_t)r);
}

/* CTA 0's share: every row's descriptor and every request's status, for the
 * op's end (a grid barrier orders them before its reads). */
static __device__ __forceinline__ void fs_scan_prep_store(const fs_tail_args &t, int32_t layout,
                                                          int64_t rows, int64_t global_vocab,
                                                          int tid, int threads)
{
    if (t.op != FS_OP_VERIFY) { /* a row is a request */
        for (int64_t r = tid; r < rows; r += threads) {
            int32_t st;
            t.descs_out[r] = fs_row_desc_sample(t.temperature, t.seed, t.offset, r, &st);
            t.pre_status_out[r] = st;
        }
        return;
    }
    for (int64_t i = tid; i < rows; i += threads)
        t.descs_out[i] = fs_scan_prep_row(t, layout, i, global_vocab);
    for (int64_t r = tid; r < t.num_requests; r += threads)
        t.pre_status_out[r] = fs_scan_prep_request(t, layout, r, global_vocab);
}

#endif
