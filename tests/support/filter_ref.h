/* The filters' independent oracle: the kept set of top-k -> top-p -> min-p
 * computed the textbook way, in double, over materialised probabilities --
 * sort the scores (descending), top-k by the k-th sorted value, top-p by the
 * cumulative sum of the renormalised top-k probabilities, min-p against
 * min_p * p_max -- with the library's tie rule (ties at a threshold are
 * kept).  It never uses the library's records, candidates or radix select.
 *
 * The filtered op is then the naive oracle (naive_ref.h) run with the mask
 * "allowed and kept": the same noise, restricted to the kept set.
 *
 * Float vs double: the library decides in float, so a decision within
 * FILTER_REF_TOL of flipping (a score that close to the k-th one or to
 * m + log min_p), or FILTER_REF_MASS_TOL (a cumulative probability that
 * close to top_p), may legitimately differ.  ref_filter_keep's slack gives the widest (> 0) and
 * narrowest (< 0) kept sets such rounding can produce; a row whose two sets
 * are equal is decided, and must agree exactly. */
#ifndef FILTER_REF_H
#define FILTER_REF_H

#include <stdint.h>

#include "flashspec.h"

#ifdef __cplusplus
extern "C" {
#endif

#define FILTER_REF_TOL 1e-4      /* scores: float rounding of (l + b) / T, relative ~1e-6 */
#define FILTER_REF_MASS_TOL 1e-5 /* probabilities: float sums of up to V terms */

typedef struct ref_filter {
    int32_t top_k; /* 0 = off */
    double top_p;  /* 1 = off */
    double min_p;  /* 0 = off */
} ref_filter;

/* The parameters of request r (off where p's arrays are NULL). */
ref_filter ref_filter_of(const fs_sampling *p, int64_t r);
/* FS_ROW_BAD_FILTER or FS_ROW_OK for request r. */
int32_t ref_filter_status(const fs_sampling *p, int64_t r);

/* keep[V] = 1 for the kept tokens of a row with scores s[V] (-inf: not
 * allowed).  slack 0: exact; +1: the widest set rounding could give; -1: the
 * narrowest (slack scales FILTER_REF_TOL and FILTER_REF_MASS_TOL).  In
 * filter_keep.c, which needs nothing else (filter_bench compiles it). */
void ref_filter_keep(const double *s, int64_t V, const ref_filter *f, double slack,
                     unsigned char *keep);

/* The mask "allowed and kept" [rows, ceil(V/32)] (malloc'd) of a call over
 * oracle logits [rows, V]: row i belongs to request req[i] (its temperature
 * and filters).  Rows that do not filter -- greedy, bad temperature, bad
 * filters, a non-finite or all-masked row, req[i] < 0 -- keep p's mask.
 * near[i] (optional) = 1 where the decision is within FILTER_REF_TOL. */
uint32_t *ref_filter_mask(const double *logits, int64_t rows, int64_t V, const fs_sampling *p,
                          const int64_t *req, unsigned char *near);

/* req[] of a verify call (-1 for the rows of a malformed layout). */
int64_t *ref_filter_verify_requests(const fs_drafts *d);

#ifdef __cplusplus
}
#endif

#endif
