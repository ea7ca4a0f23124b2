/* The end of a fused op inside the scan kernel: the CTA that finishes last
 * merges every row's records and runs the op's finalizer, so a whole op is
 * one scan launch (after the small prep kernel, or alone: single) instead of scan + merge +
 * finalize.  As separate plain launches those cost about the 5% the fused op
 * may spend on top of the matmul (H100, 1-64 rows); with the merge kernel
 * launched programmatically (merge_finalize.cu) they no longer do, and one
 * SM reading every record is slower from 16 rows up (by 30-90 us at 128-320
 * rows), so the Hopper scans end only ops of a few rows here
 * (fs_context.tail_rows_max).
 *
 * "Last" is decided by an atomic counter that the prep kernel zeroes; the
 * scan reads prep's output only after griddepcontrol.wait, so the zero is
 * visible.  A single-launch op (no prep kernel: fs_tail_args.single) has no
 * zeroed counter; its CTAs meet at a grid barrier instead and CTA 0 runs
 * fs_op_tail_run.  Each CTA makes its records visible (__threadfence) before it
 * counts itself, and the last one fences again before reading them.  The
 * merge order is fixed (slot order within a lane, then a butterfly), so the
 * result does not depend on which CTA came last. */
#ifndef FS_OP_TAIL_CUH
#define FS_OP_TAIL_CUH

#include <stdint.h>

#include <cooperative_groups.h>

#include "cuda_common.cuh"

/* Finalize one sample or argmax row from its merged record.  Rows whose
 * temperature was bad keep their pre-scan status (fs_finalize_sample reads it). */
static __device__ __forceinline__ void fs_finalize_row(int op, const fs_record &rec,
                                                       const fs_row_desc &d, int32_t pre_status,
                                                       int64_t row, int32_t *out_tokens,
                                                       float *out_values, int32_t *out_row_status)
{
    int32_t tok, st = pre_status;
    float v;
    if (op == FS_OP_SAMPLE)
        fs_finalize_sample(&rec, &d, &tok, &v, &st);
    else
        fs_finalize_argmax(&rec, &tok, &v, &st);
    out_tokens[row] = tok;
    if (out_values)
        out_values[row] = v;
    out_row_status[row] = st;
}

/* verify: request r's outputs once its walk's length k (tokens emitted) and
 * status are known, by a warp (lane: this thread's): the places from k on
 * get -1 (logprob NaN), the count and the status their slots; the places
 * before k hold the walk's tokens already. */
static __device__ __forceinline__ void fs_verify_request_end(int64_t r, int64_t k, int32_t st,
                                                             int lane, int64_t stride,
                                                             int32_t *out_tokens,
                                                             float *out_logprobs,
                                                             int32_t *out_num_emitted,
                                                             int32_t *out_row_status)
{
    int32_t *tok_out = out_tokens + r * stride;
    float *lp_out = out_logprobs ? out_logprobs + r * stride : nullptr;
    for (int64_t i = k + lane; i < stride; i += 32) {
        tok_out[i] = -1;
        if (lp_out)
            lp_out[i] = NAN;
    }
    if (lane == 0) {
        out_num_emitted[r] = (int32_t)k;
        out_row_status[r] = st;
    }
}

/* verify: request r's walk over its n_r + 1 merged records (row_recs), by
 * a whole warp (lane: this thread's): every lane takes its row's step
 * (fs_verify_row) at once, 32 rows at a time, and a ballot finds where the
 * walk stops -- the outputs of finalize.h's fs_finalize_verify, whose one
 * thread took the n_r + 1 steps one after another, each behind a global
 * load, a log and a Philox draw. */
static __device__ __forceinline__ void fs_finalize_request(
    int64_t r, int lane, const fs_record *row_recs, const fs_row_desc *descs,
    const int32_t *pre_status, const int32_t *offsets, const int32_t *drafts, int64_t stride,
    int32_t *out_tokens, float *out_logprobs, int32_t *out_num_emitted, int32_t *out_row_status)
{
    int32_t st = pre_status[r];
    const int64_t begin = st == FS_ROW_OK ? offsets[r] : 0;
    const int64_t n = st == FS_ROW_OK ? offsets[r + 1] - begin : -1; /* rows 0 .. n */
    const fs_record *recs = row_recs + begin + r;
    const fs_row_desc *ds = descs + begin + r;
    int32_t *tok_out = out_tokens + r * stride;
    float *lp_out = out_logprobs ? out_logprobs + r * stride : nullptr;
    /* every row counts, reached or not: the first failing row's status */
    for (int64_t j0 = 0; st == FS_ROW_OK && j0 <= n; j0 += 32) {
        const int64_t j = j0 + lane;
        const int32_t s = j <= n ? fs_record_status(&recs[j]) : (int32_t)FS_ROW_OK;
        const unsigned bad = __ballot_sync(0xffffffffu, s != FS_ROW_OK);
        if (bad)
            st = __shfl_sync(0xffffffffu, s, __ffs(bad) - 1);
    }
    int64_t k = 0; /* tokens emitted */
    for (int64_t j0 = 0; st == FS_ROW_OK && j0 <= n; j0 += 32) {
        const int64_t j = j0 + lane;
        int32_t tok = -1;
        float lp = 0.0f;
        int stop = 0;
        if (j <= n)
            stop = fs_verify_row(&recs[j], &ds[j], j < n, j < n ? drafts[begin + j] : -1,
                                 (uint32_t)j, &tok, &lp);
        /* the bonus row (j = n) always stops, so some chunk does */
        const unsigned stops = __ballot_sync(0xffffffffu, stop);
        const int first = stops ? __ffs(stops) - 1 : 32;
        if (j <= n && lane <= first) {
            tok_out[j] = tok;
            if (lp_out)
                lp_out[j] = lp;
        }
        if (stops) {
            k = j0 + first + 1;
            break;
        }
    }
    fs_verify_request_end(r, k, st, lane, stride, out_tokens, out_logprobs, out_num_emitted,
                          out_row_status);
}

/* The op's end, once every CTA's records are visible: `threads` threads of
 * one CTA (tid 0 .. threads - 1, whole warps, named barrier bar_id) merge
 * each row's records and finalize (fs_op_tail below, or a grid barrier in a
 * single-launch op).  scratch: shared memory no longer in use, for
 * scratch_recs records (verify's walk reads the merged records from there
 * when they fit: one global round trip fewer per step of a latency-bound
 * walk). */
static __device__ __forceinline__ void fs_op_tail_run(const fs_tail_args &t, const fs_record *recs,
                                                      int64_t n_recs, int64_t rows,
                                                      const fs_row_desc *descs, int tid,
                                                      int threads, int bar_id,
                                                      fs_record *scratch, int64_t scratch_recs)
{
    const int lane = tid & 31, warp = tid >> 5, warps = threads >> 5;
    const bool fin_rows = t.op == FS_OP_SAMPLE || t.op == FS_OP_ARGMAX;
    fs_record *merged = t.op == FS_OP_VERIFY && rows <= scratch_recs ? scratch : t.row_recs;
    /* a warp per row: ops past tail_rows_max rows (a few) end in the merge
       kernel instead, which spreads the rows over every SM */
    for (int64_t row = warp; row < rows; row += warps) {
        fs_record rec = fs_merge_run(recs + row * n_recs, n_recs, lane, 32);
        fs_record_warp_reduce(&rec);
        if (lane != 0)
            continue;
        if (fin_rows)
            fs_finalize_row(t.op, rec, descs[row], t.pre_status[row], row, t.out_tokens,
                            t.out_values, t.out_row_status);
        else
            merged[row] = rec;
    }
    if (t.op == FS_OP_VERIFY) {
        /* the walk reads row records this CTA just wrote */
        __threadfence_block();
        fs_named_bar(bar_id, threads);
        for (int64_t r = warp; r < t.num_requests; r += warps)
            fs_finalize_request(r, lane, merged, descs, t.pre_status, t.offsets, t.drafts,
                                t.stride, t.out_tokens, t.out_values, t.out_num_emitted,
                                t.out_row_status);
    }
}

/* Threads of a merge kernel's block (merge_finalize.cu): one block merges a
 * row; fs_op_tail_grid merges in the same order (fs_record_block_reduce_bar
 * over as many threads). */
#define FS_MERGE_THREADS 256

/* verify in one launch: warp 0 of the CTA that merged row `row` (record
 * rec, lane 0's; descriptor d) takes the row's step of its request's walk
 * -- fs_verify_row, the step fs_finalize_request takes -- writes the step's
 * token and logprob in their place and its verdict (0 go on, 1 stop, -status
 * a failed row), and counts the row in.  The request's last row to be
 * counted ends its walk: the first failing row's status, else the first
 * stop, from the verdicts (each request's rows are counted once, so
 * exactly one CTA sees the count reach n + 1): no second grid barrier and
 * no second read of the merged records, 0.5-4 us off verify of 5-80 rows on
 * an H200 (bench/results/2026-11-30-h200-walk-per-row/).  begin, n: the
 * request's offsets[r] and its number of drafts (lane 0's, loaded before
 * the merge).  Every write before the count is fenced, and the ending warp
 * reads the verdicts from L2 after the count and a fence, so its -1s also
 * land after the rows' tentative tokens. */
static __device__ __forceinline__ void fs_walk_row(const fs_tail_args &t, int64_t row,
                                                   const fs_record &rec, const fs_row_desc &d,
                                                   int64_t begin, int64_t n, int lane)
{
    unsigned last = 0u;
    const int64_t r = d.request;
    if (lane == 0 && (d.flags & FS_ROWF_VALID)) {
        const int32_t x = d.excluded; /* the draft; -1 on the bonus row */
        const int64_t j = d.position;
        int32_t v = -fs_record_status(&rec);
        if (v == 0) {
            int32_t tok;
            float lp;
            v = fs_verify_row(&rec, &d, x >= 0, x, (uint32_t)j, &tok, &lp);
            t.out_tokens[r * t.stride + j] = tok;
            if (t.out_values)
                t.out_values[r * t.stride + j] = lp;
        }
        t.walk_verdict[row] = v;
        __threadfence();
        last = atomicAdd(t.walk_count + r, 1u) == (unsigned)n ? 1u : 0u;
        if (last)
            __threadfence();
    }
    if (!__shfl_sync(0xffffffffu, last, 0))
        return;
    const int64_t rr = __shfl_sync(0xffffffffu, r, 0);
    const int64_t b = __shfl_sync(0xffffffffu, begin, 0), nn = __shfl_sync(0xffffffffu, n, 0);
    __syncwarp(); /* lane 0's fence before the other lanes' reads */
    const int32_t *v = t.walk_verdict + b + rr;
    int32_t st = FS_ROW_OK;
    int64_t k = -1;
    for (int64_t j0 = 0; j0 <= nn; j0 += 32) {
        const int64_t j = j0 + lane;
        const int32_t vj = j <= nn ? __ldcg(v + j) : 0;
        const unsigned bad = __ballot_sync(0xffffffffu, vj < 0);
        const unsigned stops = __ballot_sync(0xffffffffu, vj > 0);
        if (bad && st == FS_ROW_OK) /* every row counts, reached or not */
            st = -__shfl_sync(0xffffffffu, vj, __ffs(bad) - 1);
        if (stops && k < 0)
            k = j0 + __ffs(stops);
    }
    /* the bonus row (j = n) always stops; the places before the stop hold
       the rows' own tokens */
    fs_verify_request_end(rr, st == FS_ROW_OK ? k : 0, st, lane, t.stride, t.out_tokens,
                          t.out_values, t.out_num_emitted, t.out_row_status);
}

/* The end of a single-launch op of more than tail_rows_max rows, once every
 * CTA's records are visible (a grid barrier): as the merge kernel and the
 * finalize kernel would do it, with the same results.  CTA b of G merges rows
 * b, b + G, ... the way a merge block does (FS_MERGE_THREADS threads; rows
 * whose descriptor is not valid get an empty record) and finalizes sample and
 * argmax rows (thread 0); verify takes each row's step of the walk where it
 * was merged (fs_walk_row), and its requests that failed before the scan,
 * which have no rows to step, are written by the grid's warps.  descs and
 * pre_status were written by another CTA before the barrier: read through
 * L2. */
static __device__ __forceinline__ void fs_op_tail_grid(const fs_tail_args &t, const fs_record *recs,
                                                       int64_t n_recs, int64_t rows,
                                                       const fs_row_desc *descs, int tid,
                                                       int threads, int bar_id,
                                                       fs_record *scratch)
{
    const bool fin_rows = t.op == FS_OP_SAMPLE || t.op == FS_OP_ARGMAX;
    const bool walk = t.op == FS_OP_VERIFY;
    for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
        static_assert(sizeof(fs_row_desc) % sizeof(uint2) == 0, "fs_row_desc in 8-byte words");
        fs_row_desc d;
        const uint2 *dp = reinterpret_cast<const uint2 *>(descs + row);
#pragma unroll
        for (int i = 0; i < (int)(sizeof(fs_row_desc) / sizeof(uint2)); ++i)
            reinterpret_cast<uint2 *>(&d)[i] = __ldcg(dp + i);
        /* the walk's request bounds, loaded under the merge */
        int64_t begin = 0, n = 0;
        if (walk && tid == 0 && (d.flags & FS_ROWF_VALID)) {
            begin = __ldcg(t.offsets + d.request);
            n = __ldcg(t.offsets + d.request + 1) - begin;
        }
        fs_record acc;
        fs_record_init(&acc);
        if (d.flags & FS_ROWF_VALID)
            acc = fs_merge_run(recs + row * n_recs, n_recs, tid, threads);
        acc = fs_record_block_reduce_bar(acc, scratch, tid, threads, bar_id);
        fs_named_bar(bar_id, threads); /* scratch free for the next row */
        if (walk) {
            if (tid < 32)
                fs_walk_row(t, row, acc, d, begin, n, tid);
            continue;
        }
        if (tid != 0)
            continue;
        if (fin_rows)
            fs_finalize_row(t.op, acc, d, __ldcg(t.pre_status + row), row, t.out_tokens,
                            t.out_values, t.out_row_status);
        else
            t.row_recs[row] = acc;
    }
    if (!walk)
        return;
    const int warps = threads >> 5;
    for (int64_t r = (int64_t)blockIdx.x * warps + (tid >> 5); r < t.num_requests;
         r += (int64_t)gridDim.x * warps) {
        const int32_t st = __ldcg(t.pre_status + r);
        if (st != FS_ROW_OK)
            fs_verify_request_end(r, 0, st, tid & 31, t.stride, t.out_tokens, t.out_values,
                                  t.out_num_emitted, t.out_row_status);
    }
}

/* Run by `threads` threads of every CTA (tid 0 .. threads - 1, whole warps,
 * synchronised by named barrier bar_id) after each has written its records:
 * recs[row * n_recs + k], k < n_recs.  The last CTA to count itself runs
 * fs_op_tail_run.  flag: a shared word. */
static __device__ __forceinline__ void fs_op_tail(const fs_tail_args &t, const fs_record *recs,
                                                  int64_t n_recs, int64_t rows,
                                                  const fs_row_desc *descs, int tid, int threads,
                                                  int bar_id, unsigned int *flag,
                                                  fs_record *scratch, int64_t scratch_recs)
{
    __threadfence();
    fs_named_bar(bar_id, threads);
    if (tid == 0)
        *flag = atomicAdd(t.counter, 1u) == gridDim.x - 1 ? 1u : 0u;
    fs_named_bar(bar_id, threads);
    if (!*flag)
        return;
#if !FS_PROBE_NO_TAIL /* timing probe: the scan without its merge and finalize (no outputs) */
    __threadfence();
    fs_op_tail_run(t, recs, n_recs, rows, descs, tid, threads, bar_id, scratch, scratch_recs);
#endif
    if (tid == 0)
        *t.counter = 0u;
}

#endif
