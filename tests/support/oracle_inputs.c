/* Inputs and parameters of the oracle comparisons; see oracle_inputs.h. */
#include "oracle_inputs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "naive_ref.h"

/* ---- inputs ------------------------------------------------------------- */

void fst_make_inputs(fst_inputs *in, fs_dtype dt, int fused, int64_t rows, int64_t V, int64_t D,
                     uint64_t seed, int ties)
{
    memset(in, 0, sizeof *in);
    in->dt = dt;
    in->fused = fused;
    in->rows = rows;
    in->V = V;
    in->D = D;
    if (fused) {
        fst_gen_head(seed, V, D, rows, 3.0, dt, &in->weight, &in->hidden);
        in->head.weight = in->weight;
        in->head.vocab_size = V;
        in->head.hidden_dim = D;
        in->head.dtype = dt;
        in->ref = ref_logits_fused(in->weight, in->hidden, dt, rows, V, D);
        return;
    }
    float *l = fst_gen_logits(seed, rows, V, 3.0);
    if (ties) {
        fst_rng r;
        fst_rng_seed(&r, seed ^ 0x71E5ull);
        for (int64_t i = 0; i < rows * V; ++i)
            l[i] = (float)(fst_randint(&r, 17) - 8) / 4.0f;
    }
    in->logits = fst_pack(l, (size_t)(rows * V), dt);
    free(l);
    in->ref = ref_logits_stored(in->logits, dt, rows, V);
}

void fst_free_inputs(fst_inputs *in)
{
    free(in->logits);
    free(in->weight);
    free(in->hidden);
    free(in->ref);
}

fs_status fst_run_sample(fs_context *ctx, const fst_inputs *in, const fs_sampling *p,
                         int32_t *tok, float *lp, int32_t *st)
{
    return in->fused ? fst_sample(ctx, &in->head, in->hidden, in->rows, p, tok, lp, st)
                     : fst_sample_logits(ctx, in->logits, in->dt, in->rows, in->V, p, tok, lp, st);
}

fs_status fst_run_argmax(fs_context *ctx, const fst_inputs *in, int32_t *tok, float *val,
                         int32_t *st)
{
    return in->fused ? fst_argmax(ctx, &in->head, in->hidden, in->rows, tok, val, st)
                     : fst_argmax_logits(ctx, in->logits, in->dt, in->rows, in->V, tok, val, st);
}

fs_status fst_run_verify(fs_context *ctx, const fst_inputs *in, const fs_drafts *d,
                         const fs_sampling *p, int32_t *tok, int32_t *nem, float *lp,
                         int32_t *st)
{
    return in->fused ? fst_verify(ctx, &in->head, in->hidden, d, p, tok, nem, lp, st)
                     : fst_verify_logits(ctx, in->logits, in->dt, in->V, d, p, tok, nem, lp, st);
}

/* ---- parameters --------------------------------------------------------- */

void fst_params_alloc(fst_params *pp, int64_t requests, int filters)
{
    memset(pp, 0, sizeof *pp);
    pp->T = malloc(sizeof(float) * (size_t)requests);
    pp->seed = malloc(sizeof(uint64_t) * (size_t)requests);
    pp->off = malloc(sizeof(uint64_t) * (size_t)requests);
    if (filters) {
        pp->top_k = malloc(sizeof(int32_t) * (size_t)requests);
        pp->top_p = malloc(sizeof(float) * (size_t)requests);
        pp->min_p = malloc(sizeof(float) * (size_t)requests);
        pp->fallback = malloc(sizeof(int32_t) * (size_t)requests);
    }
}

void fst_params_draw(fst_params *pp, int64_t i, fst_rng *r, float T)
{
    pp->T[i] = T;
    pp->seed[i] = fst_next(r);
    pp->off[i] = fst_next(r) >> fst_randint(r, 64);
}

void fst_params_wire(fst_params *pp)
{
    pp->p.temperature = pp->T;
    pp->p.seed = pp->seed;
    pp->p.offset = pp->off;
    pp->p.logit_bias = pp->bias;
    pp->p.allowed = pp->allowed;
}

void fst_params_finish(fst_params *pp, int64_t rows, int64_t V, int bias, int mask,
                       uint64_t seed)
{
    pp->bias = bias ? fst_gen_bias(seed, rows, V) : NULL;
    pp->allowed = mask ? fst_gen_allowed(seed, rows, V, 0.6) : NULL;
    fst_params_wire(pp);
}

void fst_make_params(fst_params *pp, int64_t requests, int64_t rows, int64_t V, int bias,
                     int mask, uint64_t seed)
{
    static const float temps[5] = {0.0f, 0.5f, 1.0f, 2.0f, 0.7f};
    fst_params_alloc(pp, requests, 0);
    fst_rng r;
    fst_rng_seed(&r, seed);
    for (int64_t i = 0; i < requests; ++i)
        fst_params_draw(pp, i, &r, temps[(i + (int64_t)seed) % 5]);
    fst_params_finish(pp, rows, V, bias, mask, seed);
}

void fst_free_params(fst_params *pp)
{
    free(pp->T);
    free(pp->seed);
    free(pp->off);
    free(pp->bias);
    free(pp->allowed);
    free(pp->top_k);
    free(pp->top_p);
    free(pp->min_p);
    free(pp->fallback);
}

void fst_params_add_filters(fst_params *pp, int64_t requests, int64_t V, uint64_t seed,
                            unsigned arrays)
{
    /* k: negatives stand for V - 1 and V */
    static const int32_t ks[] = {1, 2, 3, 5, 17, 40, 64, 65, 100, -1, -2};
    static const float ps[] = {0.95f, 0.9f, 0.8f, 0.5f, 0.2f, 1e-6f, 0.999f, 1.0f};
    static const float mps[] = {0.01f, 0.05f, 0.1f, 0.3f, 0.9f, 1e-30f, 0.0f};
    pp->top_k = malloc(sizeof(int32_t) * (size_t)requests);
    pp->top_p = malloc(sizeof(float) * (size_t)requests);
    pp->min_p = malloc(sizeof(float) * (size_t)requests);
    pp->fallback = malloc(sizeof(int32_t) * (size_t)requests);
    fst_rng r;
    fst_rng_seed(&r, seed ^ 0xF11AD5ull);
    for (int64_t i = 0; i < requests; ++i) {
        int32_t k = ks[fst_randint(&r, sizeof ks / sizeof ks[0])];
        pp->top_k[i] = fst_unif(&r) < 0.6 ? (k == -1 ? (int32_t)(V - 1) : k == -2 ? (int32_t)V : k)
                                          : 0;
        pp->top_p[i] = fst_unif(&r) < 0.6 ? ps[fst_randint(&r, sizeof ps / sizeof ps[0])] : 1.0f;
        pp->min_p[i] =
            fst_unif(&r) < 0.6 ? mps[fst_randint(&r, sizeof mps / sizeof mps[0])] : 0.0f;
        pp->fallback[i] = -7;
    }
    pp->p.top_k = arrays & FST_ARR_K ? pp->top_k : NULL;
    pp->p.top_p = arrays & FST_ARR_P ? pp->top_p : NULL;
    pp->p.min_p = arrays & FST_ARR_MINP ? pp->min_p : NULL;
    pp->p.out_filter_fallback = pp->fallback;
}

/* ---- ragged drafts ------------------------------------------------------ */

int64_t fst_drafts_layout(fst_drafts_buf *db, int64_t R, int64_t maxd, fst_rng *r,
                          int first_empty)
{
    db->offsets = malloc(sizeof(int32_t) * (size_t)(R + 1));
    db->rows_of = malloc(sizeof(int32_t) * (size_t)R);
    db->offsets[0] = 0;
    for (int64_t i = 0; i < R; ++i) {
        int32_t n = first_empty && i == 0 ? 0 : (int32_t)fst_randint(r, maxd + 1);
        db->offsets[i + 1] = db->offsets[i] + n;
        db->rows_of[i] = n + 1;
    }
    int64_t ndt = db->offsets[R];
    db->tokens = malloc(sizeof(int32_t) * (size_t)(ndt + 1));
    db->d.num_requests = R;
    db->d.num_draft_tokens = ndt;
    db->d.max_drafts = maxd;
    db->d.draft_tokens = db->tokens;
    db->d.draft_offsets = db->offsets;
    return ndt + R;
}

void fst_free_drafts(fst_drafts_buf *db)
{
    free(db->tokens);
    free(db->offsets);
    free(db->rows_of);
}

/* ---- comparisons -------------------------------------------------------- */

int fst_count_only;
long fst_mismatches;

const char *fst_token_list(char *buf, size_t size, const int32_t *t, int64_t n)
{
    buf[0] = '\0';
    for (int64_t k = 0; k < n; ++k)
        snprintf(buf + strlen(buf), size - strlen(buf), " %d", t[k]);
    return buf;
}
