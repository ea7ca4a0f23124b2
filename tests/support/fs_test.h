/* Shared helpers of the flashspec CPU test suite (linked into every test):
 * dtype converters written independently of the library, a fixed-seed RNG
 * and input generators, a chi-squared goodness-of-fit helper (GSL), and
 * wrappers that run each op on a context with a freshly queried workspace. */
#ifndef FS_TEST_H
#define FS_TEST_H

#include <stddef.h>
#include <stdint.h>

#include "flashspec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- dtypes (round to nearest even; NaN stays NaN) ---------------------- */
uint16_t fst_f32_to_bf16(float f);
float fst_bf16_to_f32(uint16_t h);
uint16_t fst_f32_to_f16(float f);
float fst_f16_to_f32(uint16_t h);
size_t fst_dtype_size(fs_dtype dt);
const char *fst_dtype_name(fs_dtype dt);
/* malloc'd buffer of n elements of dt, each x[i] rounded to dt. */
void *fst_pack(const float *x, size_t n, fs_dtype dt);
/* Element i of a dt buffer, widened (exactly) to double / written from float. */
double fst_get(const void *buf, size_t i, fs_dtype dt);
void fst_set(void *buf, size_t i, fs_dtype dt, float v);

/* ---- fixed-seed RNG (splitmix64) --------------------------------------- */
typedef struct fst_rng {
    uint64_t s;
} fst_rng;
void fst_rng_seed(fst_rng *r, uint64_t seed);
uint64_t fst_next(fst_rng *r);
double fst_unif(fst_rng *r);           /* strictly inside (0, 1) */
double fst_normal(fst_rng *r);         /* N(0, 1) */
int64_t fst_randint(fst_rng *r, int64_t n); /* uniform on [0, n) */
void fst_shuffle(fst_rng *r, int64_t *perm, int64_t n); /* perm = random permutation of 0..n-1 */

/* A token of a candidate list's reference (src/cand_list.h) and qsort's
 * order for it: score descending, then id ascending, as the lists rank. */
typedef struct fst_tok {
    float s;
    int32_t id;
} fst_tok;
int fst_tok_before(const void *a, const void *b);

/* ---- input generators ---------------------------------------------------
 * Logits are N(0, scale^2) with ~2% of tokens lifted by 2*scale (a
 * realistic heavy top); LM heads are scaled so that hidden . W has about that
 * spread.  Biases are multiples of 1/64 in [-2, 2] (half of them 0), exact in
 * every dtype sum the library forms.  All malloc'd; free() them. */
float *fst_gen_logits(uint64_t seed, int64_t rows, int64_t V, double scale);
void fst_gen_head(uint64_t seed, int64_t V, int64_t D, int64_t rows, double logit_scale,
                  fs_dtype dt, void **weight, void **hidden);
float *fst_gen_bias(uint64_t seed, int64_t rows, int64_t V);
/* Allowed bitmask [rows, ceil(V/32)]: each token kept with probability
 * keep (at least one per row); the padding bits past V are set (they must be
 * ignored). */
uint32_t *fst_gen_allowed(uint64_t seed, int64_t rows, int64_t V, double keep);
static inline int64_t fst_mask_words(int64_t V)
{
    return (V + 31) / 32;
}
static inline int fst_allowed(const uint32_t *row_mask, int64_t v)
{
    return row_mask == NULL || ((row_mask[v / 32] >> (v % 32)) & 1u);
}
static inline void fst_set_allowed(uint32_t *row_mask, int64_t v, int on)
{
    if (on)
        row_mask[v / 32] |= 1u << (v % 32);
    else
        row_mask[v / 32] &= ~(1u << (v % 32));
}

/* ---- chi-squared goodness of fit ----------------------------------------
 * obs[k] counts, prob[k] expected probabilities (summing to 1).  Cells with
 * expected count < 5 are pooled into one cell (merged with the smallest
 * regular cell if the pool is still < 5).  A draw in a cell of probability 0
 * is impossible and gives p = 0.  Returns the p-value (gsl_cdf_chisq_Q). */
typedef struct fst_chi2 {
    double stat;
    int df;
    double p;
    uint64_t n;
    uint64_t impossible; /* draws in zero-probability cells */
    double worst_z;      /* largest |obs - exp| / sqrt(exp) over unpooled cells */
    int64_t worst_cell;
} fst_chi2;
double fst_chi2_test(const uint64_t *obs, const double *prob, int64_t k, fst_chi2 *res);

/* ---- running ops on a context (workspace queried and allocated here) -- */
fs_context *fst_cpu_ctx(void); /* aborts on failure */
fs_status fst_sample_logits(fs_context *ctx, const void *logits, fs_dtype dt, int64_t rows,
                            int64_t V, const fs_sampling *p, int32_t *tok, float *lp,
                            int32_t *st);
fs_status fst_sample(fs_context *ctx, const fs_lm_head *head, const void *hidden, int64_t rows,
                     const fs_sampling *p, int32_t *tok, float *lp, int32_t *st);
fs_status fst_argmax_logits(fs_context *ctx, const void *logits, fs_dtype dt, int64_t rows,
                            int64_t V, int32_t *tok, float *val, int32_t *st);
fs_status fst_argmax(fs_context *ctx, const fs_lm_head *head, const void *hidden, int64_t rows,
                     int32_t *tok, float *val, int32_t *st);
fs_status fst_verify_logits(fs_context *ctx, const void *logits, fs_dtype dt, int64_t V,
                            const fs_drafts *d, const fs_sampling *p, int32_t *tok,
                            int32_t *nem, float *lp, int32_t *st);
fs_status fst_verify(fs_context *ctx, const fs_lm_head *head, const void *hidden,
                     const fs_drafts *d, const fs_sampling *p, int32_t *tok, int32_t *nem,
                     float *lp, int32_t *st);

/* Wall-clock seconds (monotonic). */
double fst_now(void);

/* cmocka setup: restore the CPU backend's test hooks (tile size, faults,
 * filter candidates and second pass, vocabulary shards), so a failed test never leaves one set
 * for the next. */
int fst_reset_hooks(void **state);

#ifdef __cplusplus
}
#endif

#endif
