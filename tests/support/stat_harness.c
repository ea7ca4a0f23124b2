/* The chi-squared harness; see stat_harness.h. */
#include "stat_harness.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "filter_ref.h"

enum { CHUNK = 4096 };

static uint64_t mix(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint64_t stat_seed(uint64_t base, int64_t i)
{
    return mix(base * 0x100000001B3ull + (uint64_t)i);
}

uint64_t stat_offset(uint64_t base, int64_t i)
{
    return (uint64_t)i * 3u + (base & 0xFF);
}

void stat_softmax(const float *l, const float *b, const uint32_t *allowed, int64_t V, double T,
                  double *p)
{
    double m = -INFINITY, z = 0.0;
    for (int64_t v = 0; v < V; ++v) {
        p[v] = fst_allowed(allowed, v) ? ((double)l[v] + (b ? (double)b[v] : 0.0)) / T : -INFINITY;
        if (p[v] > m)
            m = p[v];
    }
    for (int64_t v = 0; v < V; ++v) {
        p[v] = p[v] > -INFINITY ? exp(p[v] - m) : 0.0;
        z += p[v];
    }
    for (int64_t v = 0; v < V; ++v)
        p[v] /= z;
}

int stat_softmax_filtered(const float *l, const float *b, const uint32_t *allowed, int64_t V,
                          double T, int32_t top_k, float top_p, float min_p, double *p)
{
    stat_softmax(l, b, allowed, V, T, p);
    ref_filter f = {top_k, top_p > 0.0f ? top_p : 1.0, min_p};
    double *s = malloc(sizeof(double) * (size_t)V);
    unsigned char *wide = malloc((size_t)V), *narrow = malloc((size_t)V);
    for (int64_t v = 0; v < V; ++v)
        s[v] = fst_allowed(allowed, v) ? ((double)l[v] + (b ? (double)b[v] : 0.0)) / T : -INFINITY;
    ref_filter_keep(s, V, &f, 1.0, wide);
    ref_filter_keep(s, V, &f, -1.0, narrow);
    int decided = 1;
    double z = 0.0;
    for (int64_t v = 0; v < V; ++v) {
        decided &= wide[v] == narrow[v];
        if (!narrow[v])
            p[v] = 0.0;
        z += p[v];
    }
    for (int64_t v = 0; v < V; ++v)
        p[v] /= z;
    free(s);
    free(wide);
    free(narrow);
    return decided;
}

void stat_set_prob(float *l, const uint32_t *allowed, int64_t V, int32_t x, double q, double T)
{
    /* exp(l_x / T) / (exp(l_x / T) + S) = q  =>  l_x = T log(q S / (1 - q)),
       with S = sum of the others' exp(l / T) taken relative to their max m
       (LM-scale logits at low T overflow exp otherwise) */
    double m = -INFINITY, S = 0.0;
    for (int64_t v = 0; v < V; ++v)
        if (v != x && fst_allowed(allowed, v) && l[v] > m)
            m = l[v];
    for (int64_t v = 0; v < V; ++v)
        if (v != x && fst_allowed(allowed, v))
            S += exp(((double)l[v] - m) / T);
    l[x] = (float)(m + T * log(q * S / (1.0 - q)));
}

void stat_lm_logits(uint64_t seed, int64_t V, double top, double T, float *l)
{
    fst_rng r;
    fst_rng_seed(&r, seed);
    int64_t *perm = malloc(sizeof(int64_t) * (size_t)V);
    fst_shuffle(&r, perm, V);
    int64_t head = V < STAT_LM_HEAD ? V : STAT_LM_HEAD;
    for (int64_t i = 0; i < V; ++i) {
        /* head: gaps (i / (head - 1))^(1/3) of the span, so the number of
           head tokens grows like gap^2 (as an LM's candidates thicken below
           the top): the scaled score has variance ~3 under the law, which is
           what a wrong temperature shows up against */
        double frac = (double)i / (double)(head > 1 ? head - 1 : 1);
        double gap = i < head ? STAT_LM_SPAN * T * cbrt(frac)
                              : STAT_LM_TAIL_GAP + fabs(2.0 * fst_normal(&r));
        l[perm[i]] = (float)(top - gap);
    }
    free(perm);
}

static void widen_row(const stat_row *row, float *out)
{
    for (int64_t v = 0; v < row->V; ++v) {
        float tmp = row->logits[v];
        void *b = fst_pack(&tmp, 1, row->dt);
        out[v] = (float)fst_get(b, 0, row->dt);
        free(b);
    }
}

fs_status stat_sample_counts(fs_context *ctx, const stat_row *row, uint64_t seed, int64_t n,
                             uint64_t *counts)
{
    int64_t V = row->V, W = fst_mask_words(V);
    size_t es = fst_dtype_size(row->dt);
    int64_t chunk = n < CHUNK ? n : CHUNK;
    char *lg = malloc(es * (size_t)(chunk * V));
    float *bias = row->bias ? malloc(sizeof(float) * (size_t)(chunk * V)) : NULL;
    uint32_t *al = row->allowed ? malloc(sizeof(uint32_t) * (size_t)(chunk * W)) : NULL;
    float *T = malloc(sizeof(float) * (size_t)chunk);
    uint64_t *sd = malloc(sizeof(uint64_t) * (size_t)chunk), *of = malloc(sizeof(uint64_t) * (size_t)chunk);
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)chunk), *st = malloc(sizeof(int32_t) * (size_t)chunk);
    int32_t *ks = malloc(sizeof(int32_t) * (size_t)chunk);
    float *ps = malloc(sizeof(float) * (size_t)chunk), *mps = malloc(sizeof(float) * (size_t)chunk);
    void *one = fst_pack(row->logits, (size_t)V, row->dt);
    for (int64_t i = 0; i < chunk; ++i) {
        memcpy(lg + es * (size_t)(i * V), one, es * (size_t)V);
        if (bias)
            memcpy(bias + i * V, row->bias, sizeof(float) * (size_t)V);
        if (al)
            memcpy(al + i * W, row->allowed, sizeof(uint32_t) * (size_t)W);
        T[i] = row->T;
        ks[i] = row->top_k;
        ps[i] = row->top_p > 0.0f ? row->top_p : 1.0f;
        mps[i] = row->min_p;
    }
    free(one);
    fs_status result = FS_OK;
    for (int64_t done = 0; done < n && result == FS_OK; done += chunk) {
        int64_t m = n - done < chunk ? n - done : chunk;
        for (int64_t i = 0; i < m; ++i) {
            sd[i] = stat_seed(seed, done + i);
            of[i] = stat_offset(seed, done + i);
        }
        fs_sampling p = {T, sd, of, bias, al};
        if (row->top_k || row->top_p > 0.0f || row->min_p > 0.0f) {
            p.top_k = ks;
            p.top_p = ps;
            p.min_p = mps;
        }
        result = fst_sample_logits(ctx, lg, row->dt, m, V, &p, tok, NULL, st);
        for (int64_t i = 0; i < m && result == FS_OK; ++i)
            if (tok[i] >= 0 && tok[i] < V)
                counts[tok[i]]++;
            else
                result = FS_ERR_INVALID_ROWS;
    }
    free(lg);
    free(bias);
    free(al);
    free(T);
    free(sd);
    free(of);
    free(tok);
    free(st);
    free(ks);
    free(ps);
    free(mps);
    return result;
}

int stat_sample_expected(const stat_row *row, double *prob)
{
    float *l = malloc(sizeof(float) * (size_t)row->V);
    widen_row(row, l);
    int decided = stat_softmax_filtered(l, row->bias, row->allowed, row->V, row->T, row->top_k,
                                        row->top_p, row->min_p, prob);
    free(l);
    return decided;
}

fs_status stat_verify_counts(fs_context *ctx, const stat_verify *vp, uint64_t seed, int64_t draws,
                             uint64_t *counts, uint64_t *malformed)
{
    int64_t V = vp->V, n = vp->n, W = fst_mask_words(V), per = n + 1;
    int64_t chunk = draws < CHUNK ? draws : CHUNK;
    float *lg = malloc(sizeof(float) * (size_t)(chunk * per * V));
    uint32_t *al = vp->allowed ? malloc(sizeof(uint32_t) * (size_t)(chunk * per * W)) : NULL;
    int32_t *dt = malloc(sizeof(int32_t) * (size_t)(chunk * n + 1));
    int32_t *offs = malloc(sizeof(int32_t) * (size_t)(chunk + 1));
    float *T = malloc(sizeof(float) * (size_t)chunk);
    uint64_t *sd = malloc(sizeof(uint64_t) * (size_t)chunk), *of = malloc(sizeof(uint64_t) * (size_t)chunk);
    int32_t *tok = malloc(sizeof(int32_t) * (size_t)(chunk * per));
    int32_t *nem = malloc(sizeof(int32_t) * (size_t)chunk), *st = malloc(sizeof(int32_t) * (size_t)chunk);
    int32_t *ks = malloc(sizeof(int32_t) * (size_t)chunk);
    float *ps = malloc(sizeof(float) * (size_t)chunk), *mps = malloc(sizeof(float) * (size_t)chunk);
    for (int64_t i = 0; i < chunk; ++i) {
        memcpy(lg + i * per * V, vp->rows, sizeof(float) * (size_t)(per * V));
        if (al)
            memcpy(al + i * per * W, vp->allowed, sizeof(uint32_t) * (size_t)(per * W));
        memcpy(dt + i * n, vp->x, sizeof(int32_t) * (size_t)n);
        offs[i] = (int32_t)(i * n);
        T[i] = vp->T;
        ks[i] = vp->top_k;
        ps[i] = vp->top_p > 0.0f ? vp->top_p : 1.0f;
        mps[i] = vp->min_p;
    }
    offs[chunk] = (int32_t)(chunk * n);
    fs_status result = FS_OK;
    for (int64_t done = 0; done < draws && result == FS_OK; done += chunk) {
        int64_t m = draws - done < chunk ? draws - done : chunk;
        for (int64_t i = 0; i < m; ++i) {
            sd[i] = stat_seed(seed, done + i);
            of[i] = stat_offset(seed, done + i);
        }
        fs_drafts d = {m, m * n, n, dt, offs}; /* offs[i] = i * n: a prefix is a layout */
        fs_sampling p = {T, sd, of, NULL, al};
        if (vp->top_k || vp->top_p > 0.0f || vp->min_p > 0.0f) {
            p.top_k = ks;
            p.top_p = ps;
            p.min_p = mps;
        }
        result = fst_verify_logits(ctx, lg, FS_DTYPE_F32, V, &d, &p, tok, nem, NULL, st);
        for (int64_t i = 0; i < m && result == FS_OK; ++i) {
            int32_t e = nem[i];
            const int32_t *t = tok + i * per;
            int ok = e >= 1 && e <= per && t[e - 1] >= 0 && t[e - 1] < V;
            for (int64_t k = 0; ok && k < e - 1; ++k)
                ok = t[k] == vp->x[k];
            for (int64_t k = e; ok && k < per; ++k)
                ok = t[k] == -1;
            if (!ok) {
                ++*malformed;
                continue;
            }
            counts[(e - 1) * V + t[e - 1]]++;
        }
    }
    free(lg);
    free(al);
    free(dt);
    free(offs);
    free(T);
    free(sd);
    free(of);
    free(tok);
    free(nem);
    free(st);
    free(ks);
    free(ps);
    free(mps);
    return result;
}

int stat_verify_expected(const stat_verify *vp, double *prob)
{
    int64_t V = vp->V, n = vp->n, W = fst_mask_words(V);
    double *p = malloc(sizeof(double) * (size_t)V);
    double reach = 1.0; /* P(first k drafts accepted) */
    int decided = 1;
    for (int64_t k = 0; k <= n; ++k) {
        decided &= stat_softmax_filtered(vp->rows + k * V, NULL,
                                         vp->allowed ? vp->allowed + k * W : NULL, V, vp->T,
                                         vp->top_k, vp->top_p, vp->min_p, p);
        double *cell = prob + k * V;
        if (k == n) {
            for (int64_t t = 0; t < V; ++t)
                cell[t] = reach * p[t];
            break;
        }
        int32_t x = vp->x[k];
        double px = p[x];
        double rest = 1.0 - px; /* mass of the residual before renormalising */
        double zr = 0.0;
        for (int64_t t = 0; t < V; ++t)
            zr += t == x ? 0.0 : p[t];
        for (int64_t t = 0; t < V; ++t)
            cell[t] = (t == x || zr <= 0.0) ? 0.0 : reach * rest * p[t] / zr;
        reach *= px;
    }
    free(p);
    return decided;
}
