/* Per-op finalizers over merged records, and the per-request checks and row
 * descriptors that precede a scan.  Shared verbatim by the CPU backend and the
 * CUDA kernels, so both backends make the same decisions from the same
 * records. */
#ifndef FS_FINALIZE_H
#define FS_FINALIZE_H

#include <float.h>
#include <math.h>
#include <stdint.h>

#include "flashspec.h"
#include "fs_hd.h"
#include "philox.h"
#include "record.h"

FS_HD int32_t fs_temperature_status(float t)
{
    /* denormal temperatures are rejected as probable garbage */
    if (!(t >= 0.0f) || t == INFINITY || (t > 0.0f && t < FLT_MIN))
        return FS_ROW_BAD_TEMPERATURE;
    return FS_ROW_OK;
}

FS_HD fs_row_desc fs_row_desc_make(float temperature, uint64_t seed, uint64_t offset,
                                   uint32_t position, int32_t excluded, int32_t selected,
                                   int32_t request)
{
    fs_row_desc d;
    /* below FS_MIN_TEMPERATURE, (l + b) / T overflows float for ordinary logits */
    int greedy = temperature < FS_MIN_TEMPERATURE;
    d.inv_temp = greedy ? 1.0f : 1.0f / temperature;
    d.flags = FS_ROWF_VALID | (greedy ? FS_ROWF_GREEDY : 0u);
    d.seed = seed;
    d.offset = offset;
    d.position = position;
    d.excluded = excluded;
    d.selected = selected;
    d.request = request;
    return d;
}

/* A row descriptor that the scan skips and the finalizers never read. */
FS_HD fs_row_desc fs_row_desc_skip(void)
{
    fs_row_desc d = fs_row_desc_make(1.0f, 0, 0, 0, -1, -1, -1);
    d.flags = 0;
    return d;
}

/* Row r of fs_sample (request r at position 0) from its temperature t,
 * seed and offset as read (has_t 0: a row of fs_draft_argmax, greedy, no
 * parameters), and the request's status before the scan. */
FS_HD fs_row_desc fs_row_desc_sample_of(int has_t, float t, uint64_t seed, uint64_t offset,
                                        int64_t r, int32_t *status)
{
    if (!has_t) {
        *status = FS_ROW_OK;
        return fs_row_desc_make(0.0f, 0, 0, 0, -1, -1, (int32_t)r);
    }
    *status = fs_temperature_status(t);
    return *status != FS_ROW_OK ? fs_row_desc_skip()
                                : fs_row_desc_make(t, seed, offset, 0, -1, -1, (int32_t)r);
}

/* The same from the parameter arrays (temperature NULL: fs_draft_argmax;
 * offset may be NULL, all 0).  A sampled op's seed holds every request's
 * (validate.c), so it is read beside the temperature, as the CUDA prep
 * reads it; a row whose temperature fails ignores it. */
FS_HD fs_row_desc fs_row_desc_sample(const float *temperature, const uint64_t *seed,
                                     const uint64_t *offset, int64_t r, int32_t *status)
{
    if (!temperature)
        return fs_row_desc_sample_of(0, 0.0f, 0, 0, r, status);
    return fs_row_desc_sample_of(1, temperature[r], seed[r], offset ? offset[r] : 0, r, status);
}

/* Status of a row whose scan finished: the record decides. */
FS_HD int32_t fs_record_status(const fs_record *r)
{
    if (r->flags & FS_REC_NONFINITE)
        return FS_ROW_NONFINITE;
    if (r->max_id < 0)
        return FS_ROW_ALL_MASKED;
    return FS_ROW_OK;
}

/* sample: the Gumbel-max winner (argmax for greedy rows) and its logprob. */
FS_HD void fs_finalize_sample(const fs_record *r, const fs_row_desc *d, int32_t *token,
                              float *logprob, int32_t *status)
{
    int32_t st = (d->flags & FS_ROWF_VALID) ? fs_record_status(r) : *status;
    if (st != FS_ROW_OK) {
        *token = -1;
        if (logprob)
            *logprob = NAN;
        *status = st;
        return;
    }
    int greedy = (d->flags & FS_ROWF_GREEDY) != 0;
    *token = greedy ? r->max_id : r->best_id;
    if (logprob)
        *logprob = (greedy ? r->max_s : r->best_s) - fs_record_lse(r);
    *status = FS_ROW_OK;
}

/* draft argmax: the greedy token and its logit. */
FS_HD void fs_finalize_argmax(const fs_record *r, int32_t *token, float *logit, int32_t *status)
{
    int32_t st = fs_record_status(r);
    *status = st;
    *token = st == FS_ROW_OK ? r->max_id : -1;
    if (logit)
        *logit = st == FS_ROW_OK ? r->max_s : NAN;
}

/* Status of the verify layout as a whole: offsets start at 0, never
 * decrease and end at num_draft_tokens.  A malformed layout cannot be mapped
 * to rows, so every request of the call fails with FS_ROW_BAD_OFFSETS; with a
 * well-formed one the requests' rows are disjoint. */
FS_HD int32_t fs_verify_layout_status(const int32_t *offsets, int64_t num_requests,
                                      int64_t num_draft_tokens)
{
    if (offsets[0] != 0 || (int64_t)offsets[num_requests] != num_draft_tokens)
        return FS_ROW_BAD_OFFSETS;
    for (int64_t r = 0; r < num_requests; ++r)
        if (offsets[r + 1] < offsets[r])
            return FS_ROW_BAD_OFFSETS;
    return FS_ROW_OK;
}

/* The status before the scan of a request whose layout is valid, from its
 * n drafts drafts[begin ..] (fs_verify_request_status below; drafts may be
 * NULL when n is 0, so no pointer is offset here).  Every draft is read,
 * with no exit at the first bad one: on the GPU the reads are then
 * independent and go out together, where the early exit made each wait for
 * the one before -- a dependent DRAM round trip a draft in front of the
 * scan. */
FS_HD int32_t fs_verify_drafts_status(const int32_t *drafts, int64_t begin, int64_t n,
                                      int64_t max_drafts, int64_t global_vocab,
                                      float temperature)
{
    if (n > max_drafts)
        return FS_ROW_BAD_OFFSETS;
    int bad = 0;
#ifdef __CUDA_ARCH__
#pragma unroll 4
#endif
    for (int64_t i = 0; i < n; ++i) {
        const int32_t x = drafts[begin + i];
        bad |= x < 0 || (int64_t)x >= global_vocab;
    }
    return bad ? FS_ROW_BAD_DRAFT : fs_temperature_status(temperature);
}

/* Status of request r before the scan, given the layout's status: more than
 * max_drafts drafts (its output row would overflow), a draft id outside the
 * vocabulary, or a bad temperature fail this request only. */
FS_HD int32_t fs_verify_request_status(int32_t layout_status, const int32_t *offsets,
                                       const int32_t *drafts, int64_t r, int64_t max_drafts,
                                       int64_t global_vocab, float temperature)
{
    if (layout_status != FS_ROW_OK)
        return layout_status;
    return fs_verify_drafts_status(drafts, offsets[r], (int64_t)offsets[r + 1] - offsets[r],
                                   max_drafts, global_vocab, temperature);
}

/* Row descriptor of target row j of a valid verify request whose draft at j
 * is x (-1 for the bonus row, j == n): the draft is both the token whose
 * probability is needed and the one removed from the recovery candidate;
 * the bonus row has neither. */
FS_HD fs_row_desc fs_verify_row_desc_x(int32_t x, int64_t j, float temperature, uint64_t seed,
                                       uint64_t offset, int32_t request)
{
    return fs_row_desc_make(temperature, seed, offset, (uint32_t)j, x, x, request);
}

/* Row descriptor of target row j of a valid verify request with n drafts. */
FS_HD fs_row_desc fs_verify_row_desc(const int32_t *request_drafts, int64_t n, int64_t j,
                                     float temperature, uint64_t seed, uint64_t offset,
                                     int32_t request)
{
    return fs_verify_row_desc_x(j < n ? request_drafts[j] : -1, j, temperature, seed, offset,
                                request);
}

/* Step j of a verify walk, on row j's merged record r and descriptor d.
 * With a draft x (has_draft: j < n) that is accepted, *tok = x and *lp its
 * logprob, and the walk goes on (returns 0).  Otherwise -- x rejected, or
 * the bonus row (no draft) -- *tok is the token the walk ends with (the
 * residual's candidate, or the argmax of a greedy row) and *lp its logprob
 * (returns 1).  The CUDA finalizers take every row's step at once and stop
 * at the first 1 (kernels/op_tail.cuh); the outputs are the same. */
FS_HD int fs_verify_row(const fs_record *r, const fs_row_desc *d, int has_draft, int32_t x,
                        uint32_t j, int32_t *tok, float *lp)
{
    const float lse = fs_record_lse(r);
    const int greedy = (d->flags & FS_ROWF_GREEDY) != 0;
    if (has_draft) {
        int accept;
        if (greedy) {
            accept = r->max_id == x;
        } else {
            float p = expf(r->sel_s - lse);
            /* with every other token masked there is no residual, and p(x) = 1 */
            accept = r->best_id < 0 || fs_accept_uniform(d->seed, d->offset, j) <= p;
        }
        if (accept) {
            *tok = x;
            *lp = r->sel_s - lse;
            return 0;
        }
    }
    /* recovery (the residual: target without x) or bonus token */
    *tok = greedy ? r->max_id : r->best_id;
    *lp = (greedy ? r->max_s : r->best_s) - lse;
    return 1;
}

/* verify: walk one request's merged records (n drafts + bonus row) and write
 * its stride-wide output rows.  status holds the request's pre-scan status on
 * entry (FS_ROW_OK if its rows were scanned). */
FS_HD void fs_finalize_verify(const fs_record *recs, const fs_row_desc *descs,
                              const int32_t *request_drafts, int64_t n, int64_t stride,
                              int32_t *out_tokens, float *out_logprobs, int32_t *num_emitted,
                              int32_t *status)
{
    int32_t st = *status;
    int64_t k = 0;
    /* every row counts, reached or not, so the status never depends on
       where the random walk stops */
    for (int64_t j = 0; st == FS_ROW_OK && j <= n; ++j)
        st = fs_record_status(&recs[j]);
    if (st == FS_ROW_OK) {
        for (int64_t j = 0; j <= n; ++j) {
            int32_t tok;
            float lp;
            const int stop = fs_verify_row(&recs[j], &descs[j], j < n,
                                           j < n ? request_drafts[j] : -1, (uint32_t)j, &tok,
                                           &lp);
            out_tokens[k] = tok;
            if (out_logprobs)
                out_logprobs[k] = lp;
            ++k;
            if (stop)
                break;
        }
    }
    for (int64_t i = k; i < stride; ++i) {
        out_tokens[i] = -1;
        if (out_logprobs)
            out_logprobs[i] = NAN;
    }
    *num_emitted = (int32_t)k;
    *status = st;
}

#endif
