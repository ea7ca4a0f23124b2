/* ref_filter_keep (filter_ref.h), in a file of its own: it needs nothing
 * but libm and flashspec.h's types, so the benchmarks compile it too
 * (filter_bench checks its sort-based pipeline's tokens against it) without
 * the rest of the test support. */
#include "filter_ref.h"

#include <math.h>
#include <stdlib.h>

/* sort order: score descending, then id ascending */
static const double *g_sort_s;
static int by_score_desc(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    double sa = g_sort_s[a], sb = g_sort_s[b];
    if (sa != sb)
        return sa > sb ? -1 : 1;
    return a < b ? -1 : a > b;
}

void ref_filter_keep(const double *s, int64_t V, const ref_filter *f, double slack,
                     unsigned char *keep)
{
    const double wide = slack > 0 ? slack * FILTER_REF_TOL : 0.0;
    const double narrow = slack < 0 ? -slack * FILTER_REF_TOL : 0.0;
    const double mwide = slack > 0 ? slack * FILTER_REF_MASS_TOL : 0.0;
    const double mnarrow = slack < 0 ? -slack * FILTER_REF_MASS_TOL : 0.0;
    int64_t *idx = malloc(sizeof(int64_t) * (size_t)(V + 1));
    double *q = malloc(sizeof(double) * (size_t)(V + 1));
    int64_t n = 0;
    for (int64_t v = 0; v < V; ++v) {
        keep[v] = 0;
        if (s[v] > -INFINITY && s[v] < INFINITY)
            idx[n++] = v;
    }
    if (n == 0)
        goto done;
    g_sort_s = s;
    qsort(idx, (size_t)n, sizeof(int64_t), by_score_desc);
    const double m = s[idx[0]];
    /* top-k: every token scoring at least the k-th sorted score */
    int64_t nk = n;
    if (f->top_k > 0 && f->top_k < n) {
        double tk = s[idx[f->top_k - 1]] - wide;
        nk = 0;
        while (nk < n && s[idx[nk]] >= tk)
            ++nk;
    }
    /* top-p over the renormalised top-k probabilities, materialised */
    double z = 0.0;
    for (int64_t j = 0; j < nk; ++j)
        z += exp(s[idx[j]] - m);
    for (int64_t j = 0; j < nk; ++j)
        q[j] = exp(s[idx[j]] - m) / z;
    int64_t np = nk;
    if (f->top_p < 1.0) {
        /* token j is kept iff the tokens scoring strictly higher (by more
           than `wide`) hold less than top_p (+wide, -narrow) */
        double above = 0.0;
        int64_t h = 0; /* tokens [0, h) score > s_j + wide */
        np = 0;
        for (int64_t j = 0; j < nk; ++j) {
            while (h < nk && s[idx[h]] > s[idx[j]] + wide)
                above += q[h++];
            /* the top tie group always stays (nothing scores above it) */
            if (above == 0.0 || above < f->top_p + mwide - mnarrow)
                np = j + 1;
            else
                break;
        }
    }
    /* min-p: p_i >= min_p * p_max, i.e. s_i - m >= log(min_p) */
    const double lmp = f->min_p > 0.0 ? log(f->min_p) : -INFINITY;
    for (int64_t j = 0; j < np; ++j)
        if (s[idx[j]] == m || s[idx[j]] - m >= lmp - wide + narrow)
            keep[idx[j]] = 1;
done:
    free(idx);
    free(q);
}
