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
 * thread alone checks every request, without a barrier.  s_off (threads >
 * 1, or NULL): shared memory for the num_requests + 1 offsets, which this
 * fills for the calls below -- a request's row search then costs no DRAM
 * round trips, where a binary search over global memory waited for one a
 * step, in front of the scan's first tile. */
static __device__ __forceinline__ int32_t fs_scan_prep_layout(const fs_tail_args &t, int64_t rows,
                                                              int tid, int threads, int bar_id,
                                                              int32_t *s_off)
{
    if (t.op != FS_OP_VERIFY)
        return FS_ROW_OK;
    bool bad = false;
    for (int64_t r = tid; r <= t.num_requests; r += threads) {
        const int32_t o = t.offsets[r];
        if (r < t.num_requests)
            bad |= t.offsets[r + 1] < o;
        if (s_off)
            s_off[r] = o;
    }
    if (threads > 1)
        bad = fs_bar_or(bad, bar_id, threads); /* also orders s_off's stores */
    const int32_t *off = s_off ? s_off : t.offsets;
    return bad || off[0] != 0 || (int64_t)off[t.num_requests] != rows - t.num_requests
               ? FS_ROW_BAD_OFFSETS
               : FS_ROW_OK;
}

/* verify: request r's status before the scan (prep's); off: the offsets
 * (s_off above, or global). */
static __device__ __forceinline__ int32_t fs_scan_prep_request(const fs_tail_args &t,
                                                               int32_t layout, int64_t r,
                                                               int64_t global_vocab,
                                                               const int32_t *off)
{
    return fs_verify_request_status(layout, off, t.drafts, r, t.stride - 1, global_vocab,
                                    t.temperature[r]);
}

/* Row `row`'s descriptor, as prep writes it.  s_off: as filled by
 * fs_scan_prep_layout, or NULL (the offsets in global memory).  Every load
 * of the row's request goes out before any is used: one DRAM round trip
 * after the row search (the consumers of the plain tile kernel wait for it
 * before their first tile). */
static __device__ __forceinline__ fs_row_desc fs_scan_prep_row(const fs_tail_args &t,
                                                               int32_t layout, int64_t row,
                                                               int64_t global_vocab,
                                                               const int32_t *s_off)
{
    if (t.op != FS_OP_VERIFY) {
        int32_t st;
        return fs_row_desc_sample(t.temperature, t.seed, t.offset, row, &st);
    }
    if (layout != FS_ROW_OK)
        return fs_row_desc_skip();
    const int32_t *off = s_off ? s_off : t.offsets;
    /* a valid layout gives request r the rows offsets[r] + r .. offsets[r +
       1] + r, and offsets[r] + r grows with r: the last r whose first row is
       at or before `row` */
    int64_t lo = 0, hi = t.num_requests - 1;
    while (lo < hi) {
        const int64_t mid = (lo + hi + 1) >> 1;
        if ((int64_t)off[mid] + mid <= row)
            lo = mid;
        else
            hi = mid - 1;
    }
    const int64_t r = lo, begin = off[r], n = off[r + 1] - begin, j = row - begin - r;
    const float temp = t.temperature[r];
    const uint64_t seed = t.seed[r], offset = t.offset ? t.offset[r] : 0;
    const int32_t x = j < n ? t.drafts[begin + j] : -1;
    if (fs_verify_drafts_status(t.drafts, begin, n, t.stride - 1, global_vocab, temp) !=
        FS_ROW_OK)
        return fs_row_desc_skip();
    return fs_verify_row_desc_x(x, j, temp, seed, offset, (int32_t)r);
}

/* CTA 0's share: every row's descriptor and every request's status, for the
 * op's end, and verify's zeroed walk counts (a grid barrier orders them
 * before its reads). */
static __device__ __forceinline__ void fs_scan_prep_store(const fs_tail_args &t, int32_t layout,
                                                          int64_t rows, int64_t global_vocab,
                                                          int tid, int threads,
                                                          const int32_t *s_off)
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
        t.descs_out[i] = fs_scan_prep_row(t, layout, i, global_vocab, s_off);
    const int32_t *off = s_off ? s_off : t.offsets;
    for (int64_t r = tid; r < t.num_requests; r += threads) {
        t.pre_status_out[r] = fs_scan_prep_request(t, layout, r, global_vocab, off);
        if (t.single == 2) /* the walk's counts (op_tail.cuh fs_walk_row) */
            t.walk_count[r] = 0u;
    }
}

#endif
