/* Inputs and parameters of the oracle comparisons (test_oracle,
 * test_tree_oracle, test_filter_oracle, test_shard): a batch of rows, fused
 * (LM head + hidden) or over stored logits, with the oracle's logits in
 * double; per-request sampling arrays with their fs_sampling; the ops run on
 * whichever of the two the inputs hold; and the mismatch counting the fault
 * tests switch on.  Everything is generated from fs_test.h's fixed-seed
 * generators, so a seed gives the same batch in every test. */
#ifndef FS_ORACLE_INPUTS_H
#define FS_ORACLE_INPUTS_H

#include <stdint.h>

#include "flashspec.h"
#include "fs_test.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- inputs ------------------------------------------------------------- */

typedef struct fst_inputs {
    fs_dtype dt;
    int fused;
    int64_t rows, V, D;
    void *logits;          /* [rows, V] in dt (logits variants) */
    void *weight, *hidden; /* fused */
    fs_lm_head head;
    double *ref; /* [rows, V] oracle logits */
} fst_inputs;

/* N(0, 9) logits (or an LM head of that spread) for `rows` rows of V tokens.
 * ties (stored logits only): the logits are replaced by multiples of 1/4 in
 * [-2, 2] (exact in every dtype), so most scores share their value with
 * many others. */
void fst_make_inputs(fst_inputs *in, fs_dtype dt, int fused, int64_t rows, int64_t V, int64_t D,
                     uint64_t seed, int ties);
void fst_free_inputs(fst_inputs *in);

/* The op on the inputs' LM head + hidden when fused, else on their logits. */
fs_status fst_run_sample(fs_context *ctx, const fst_inputs *in, const fs_sampling *p,
                         int32_t *tok, float *lp, int32_t *st);
fs_status fst_run_argmax(fs_context *ctx, const fst_inputs *in, int32_t *tok, float *val,
                         int32_t *st);
fs_status fst_run_verify(fs_context *ctx, const fst_inputs *in, const fs_drafts *d,
                         const fs_sampling *p, int32_t *tok, int32_t *nem, float *lp,
                         int32_t *st);

/* ---- parameters --------------------------------------------------------- */

typedef struct fst_params {
    float *T;
    uint64_t *seed, *off;
    float *bias;
    uint32_t *allowed;
    /* per-request filter arrays; NULL unless fst_params_alloc was asked for
       them, and left out of p until the caller points p at them */
    int32_t *top_k;
    float *top_p, *min_p;
    int32_t *fallback;
    fs_sampling p;
} fst_params;

/* Zeroes *pp and allocates T / seed / off (and the filter arrays when
 * filters) for `requests` requests; the caller fills them. */
void fst_params_alloc(fst_params *pp, int64_t requests, int filters);
/* Request i: temperature T, then a seed and an offset drawn from r (the
 * offset shifted right by a random amount, so all magnitudes occur). */
void fst_params_draw(fst_params *pp, int64_t i, fst_rng *r, float T);
/* Points p's temperature, seed, offset, bias and mask at the arrays. */
void fst_params_wire(fst_params *pp);
/* A bias (fst_gen_bias) and a mask keeping 60% of the tokens
 * (fst_gen_allowed) for `rows` rows when asked for, from seed; then
 * fst_params_wire. */
void fst_params_finish(fst_params *pp, int64_t rows, int64_t V, int bias, int mask,
                       uint64_t seed);
/* Per-request T / seed / offset for `requests` (T cycling through 0, 0.5,
 * 1, 2, 0.7 from seed), bias / mask for `rows` rows. */
void fst_make_params(fst_params *pp, int64_t requests, int64_t rows, int64_t V, int bias,
                     int mask, uint64_t seed);
void fst_free_params(fst_params *pp);
/* Filter arrays for `requests` requests (allocated here), random from seed:
 * each filter on with probability 0.6, values from menus that cut little
 * and much (k from 1 to past 64, V - 1, V; p from 1e-6 to 0.999; min_p
 * from 1e-30 to 0.9), and p pointed at those whose bit is set in arrays
 * (FST_ARR_*) and at the fallback output (filled with -7). */
enum { FST_ARR_K = 1, FST_ARR_P = 2, FST_ARR_MINP = 4, FST_ARR_ALL = 7 };
void fst_params_add_filters(fst_params *pp, int64_t requests, int64_t V, uint64_t seed,
                            unsigned arrays);

/* ---- ragged drafts ------------------------------------------------------ */

typedef struct fst_drafts_buf {
    int32_t *tokens, *offsets;
    int32_t *rows_of; /* n_r + 1: the target rows of each request */
    fs_drafts d;
} fst_drafts_buf;

/* Layout only: n_r uniform in [0, maxd] from r (none drawn for the first
 * request when first_empty: it always has 0 drafts); the tokens are left for
 * the caller, r going on where the layout stopped.  Returns the number of
 * target rows, num_draft_tokens + R. */
int64_t fst_drafts_layout(fst_drafts_buf *db, int64_t R, int64_t maxd, fst_rng *r,
                          int first_empty);
void fst_free_drafts(fst_drafts_buf *db);

/* ---- comparisons -------------------------------------------------------- */

/* With fst_count_only set, FST_MISMATCH counts a hard mismatch in
 * fst_mismatches instead of failing the test: the fault tests run the same
 * checks on deliberately wrong outputs and require many.  Needs cmocka.h. */
extern int fst_count_only;
extern long fst_mismatches;
#define FST_MISMATCH(...)          \
    do {                           \
        if (fst_count_only)        \
            ++fst_mismatches;      \
        else                       \
            fail_msg(__VA_ARGS__); \
    } while (0)

/* " t0 t1 ... t(n-1)" into buf (cut to size), for mismatch messages;
 * returns buf. */
const char *fst_token_list(char *buf, size_t size, const int32_t *t, int64_t n);

#ifdef __cplusplus
}
#endif

#endif
