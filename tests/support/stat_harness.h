/* The chi-squared harness shared by the test_stat_* suites: draw many
 * tokens from ONE fixed distribution through the library (each draw a row or
 * request with its own seed and offset), and compute the distribution that
 * the draws must follow, analytically, in double. */
#ifndef STAT_HARNESS_H
#define STAT_HARNESS_H

#include <stdint.h>

#include "flashspec.h"
#include "fs_test.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Seed and offset of draw i of a harness stream: distinct for every draw. */
uint64_t stat_seed(uint64_t base, int64_t i);
uint64_t stat_offset(uint64_t base, int64_t i);

/* One row's logits [V] (f32), optional bias [V] and allowed mask [ceil(V/32)],
 * drawn n times with fs_sample_logits (dtype dt: the logits are rounded to it
 * first; expected probabilities are computed from the rounded values), with
 * optional filters (top_k 0, top_p 0 or 1, min_p 0: off). */
typedef struct stat_row {
    int64_t V;
    const float *logits;
    const float *bias;
    const uint32_t *allowed;
    float T;
    fs_dtype dt;
    int32_t top_k;
    float top_p;
    float min_p;
} stat_row;

/* counts[V] += the tokens of n draws; returns the first non-OK status. */
fs_status stat_sample_counts(fs_context *ctx, const stat_row *row, uint64_t seed, int64_t n,
                             uint64_t *counts);
/* prob[V] = softmax((l + b) / T) over the allowed set and, with filters,
 * the kept set of filter_ref.h, in double.  Returns 0 when the filters'
 * decision is within float rounding of flipping (the law is then not
 * pinned down: choose another row), 1 otherwise. */
int stat_sample_expected(const stat_row *row, double *prob);

/* A verify problem: n drafts x[n] and n + 1 target rows [(n + 1) * V] (f32),
 * optional allowed masks per row, one temperature, optional filters (as
 * stat_row's). */
typedef struct stat_verify {
    int64_t V, n;
    const float *rows;
    const uint32_t *allowed; /* [(n + 1) * ceil(V/32)] or NULL */
    const int32_t *x;
    float T;
    int32_t top_k;
    float top_p;
    float min_p;
} stat_verify;

/* counts[(n + 1) * V]: cell k * V + t = "exactly k drafts accepted, then t
 * emitted".  *malformed counts draws whose accepted prefix is not the drafts
 * or whose layout is wrong (must stay 0). */
fs_status stat_verify_counts(fs_context *ctx, const stat_verify *vp, uint64_t seed, int64_t draws,
                             uint64_t *counts, uint64_t *malformed);
/* P(accept exactly k, emit t) = prod_{j<k} p_j(x_j) *
 *   (k < n ? (1 - p_k(x_k)) r_k(t), r_k = p_k without x_k renormalised : p_n(t)),
 * p_j the filtered target of row j.  Returns 0 when a row's filter decision
 * is within float rounding of flipping, 1 otherwise. */
int stat_verify_expected(const stat_verify *vp, double *prob);

/* softmax((l + b) / T) over allowed of one row, in double (T > 0). */
void stat_softmax(const float *l, const float *b, const uint32_t *allowed, int64_t V, double T,
                  double *p);

/* The same restricted to the kept set of the filters (filter_ref.h);
 * returns 0 when their decision is within float rounding of flipping. */
int stat_softmax_filtered(const float *l, const float *b, const uint32_t *allowed, int64_t V,
                          double T, int32_t top_k, float top_p, float min_p, double *p);

/* Logit that gives token x probability q in row l (at temperature T, others
 * fixed, x allowed): sets l[x]. */
void stat_set_prob(float *l, const uint32_t *allowed, int64_t V, int32_t x, double q, double T);

/* LM-scale logits [V] for temperature T, as language models give them: the
 * max at `top` (20 to 40 for an LM; near 0 where T is tiny, see
 * test_stat_sample.c), STAT_LM_HEAD tokens at random ids whose gaps below it
 * lie in [0, STAT_LM_SPAN * T], thickening with the gap -- at T they carry
 * visible probability, scaled gaps 0 .. STAT_LM_SPAN -- and the rest of the
 * vocabulary STAT_LM_TAIL_GAP + |N(0, 2^2)| units below the max: the long
 * tail, invisible at low T.  At 10^5 draws a temperature 3% off moves the
 * chi-squared statistic by ~250 (p far below 1e-6); treating T as greedy
 * puts every draw on one token. */
#define STAT_LM_HEAD 48
#define STAT_LM_SPAN 8.0
#define STAT_LM_TAIL_GAP 3.0
void stat_lm_logits(uint64_t seed, int64_t V, double top, double T, float *l);

#ifdef __cplusplus
}
#endif

#endif
