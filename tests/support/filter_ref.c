/* The filters' independent oracle; see filter_ref.h. */
#include "filter_ref.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fs_test.h"
#include "naive_ref.h"

ref_filter ref_filter_of(const fs_sampling *p, int64_t r)
{
    ref_filter f = {0, 1.0, 0.0};
    if (p->top_k)
        f.top_k = p->top_k[r];
    if (p->top_p)
        f.top_p = p->top_p[r];
    if (p->min_p)
        f.min_p = p->min_p[r];
    return f;
}

int32_t ref_filter_status(const fs_sampling *p, int64_t r)
{
    ref_filter f = ref_filter_of(p, r);
    if (f.top_k < 0 || isnan(f.top_p) || f.top_p <= 0.0 || f.top_p > 1.0 || isnan(f.min_p) ||
        f.min_p < 0.0 || f.min_p >= 1.0)
        return FS_ROW_BAD_FILTER;
    return FS_ROW_OK;
}

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

uint32_t *ref_filter_mask(const double *logits, int64_t rows, int64_t V, const fs_sampling *p,
                          const int64_t *req, unsigned char *near)
{
    int64_t W = fst_mask_words(V);
    uint32_t *mask = malloc(sizeof(uint32_t) * (size_t)(rows * W));
    double *s = malloc(sizeof(double) * (size_t)V);
    double *logp = malloc(sizeof(double) * (size_t)V);
    unsigned char *wide = malloc((size_t)V), *narrow = malloc((size_t)V);
    for (int64_t i = 0; i < rows; ++i) {
        uint32_t *mi = mask + i * W;
        const uint32_t *ai = p->allowed ? p->allowed + i * W : NULL;
        for (int64_t w = 0; w < W; ++w)
            mi[w] = ai ? ai[w] : 0xFFFFFFFFu;
        if (near)
            near[i] = 0;
        int64_t r = req[i];
        if (r < 0)
            continue;
        double T = p->temperature[r];
        if (ref_temperature_status(T) != FS_ROW_OK || T < (double)FS_MIN_TEMPERATURE ||
            ref_filter_status(p, r) != FS_ROW_OK)
            continue;
        const float *b = p->logit_bias ? p->logit_bias + i * V : NULL;
        if (ref_row_logp(logits + i * V, V, b, ai, T, logp) != FS_ROW_OK)
            continue;
        for (int64_t v = 0; v < V; ++v) {
            double g = ref_greedy_score(logits + i * V, b, ai, v);
            s[v] = g > -INFINITY ? g / T : -INFINITY;
        }
        ref_filter f = ref_filter_of(p, r);
        ref_filter_keep(s, V, &f, 1.0, wide);
        ref_filter_keep(s, V, &f, -1.0, narrow);
        int differ = 0;
        for (int64_t v = 0; v < V; ++v) {
            differ |= wide[v] != narrow[v];
            if (!narrow[v])
                fst_set_allowed(mi, v, 0);
        }
        if (near)
            near[i] = (unsigned char)differ;
    }
    free(s);
    free(logp);
    free(wide);
    free(narrow);
    return mask;
}

int64_t *ref_filter_verify_requests(const fs_drafts *d)
{
    int64_t R = d->num_requests, rows = d->num_draft_tokens + R;
    int64_t *req = malloc(sizeof(int64_t) * (size_t)rows);
    for (int64_t i = 0; i < rows; ++i)
        req[i] = -1;
    const int32_t *o = d->draft_offsets;
    if (o[0] != 0 || (int64_t)o[R] != d->num_draft_tokens)
        return req;
    for (int64_t r = 0; r < R; ++r)
        if (o[r + 1] < o[r])
            return req;
    for (int64_t r = 0; r < R; ++r)
        for (int64_t j = 0; j <= o[r + 1] - o[r]; ++j)
            req[o[r] + r + j] = r;
    return req;
}
