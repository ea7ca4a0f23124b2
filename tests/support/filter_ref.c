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
