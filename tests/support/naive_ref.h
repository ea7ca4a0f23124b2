/* The independent oracle: a naive, fully materialised reference of every
 * flashspec op, in double precision.
 *
 * Logits are computed in full ([rows, V], double) from the stored inputs
 * (hidden . W over inputs widened from f32/f16/bf16, or the stored logits),
 * the target distribution is materialised as explicit probabilities, and each
 * op is done the textbook way with the SAME noise as the library:
 *   sample   two-level Gumbel-max (record.h): each noise block b of
 *            FS_NOISE_BLOCK ids gets key log(sum_{i in b} p_i) + G_b from
 *            fs_block_words(seed, offset, 0, b); the best block wins and the
 *            token inside it is drawn by inverse CDF of p restricted to it
 *   argmax   argmax_i l_i (lowest id on ties)
 *   verify   accept draft j iff fs_accept_uniform(seed, offset, j) <= p_j(x_j);
 *            on rejection materialise the residual r = p_j with x_j zeroed,
 *            renormalised, and draw from it as sample does, at position j;
 *            if all n drafts are accepted, draw from p_n at position n.
 * At T = 0 every choice is the argmax of l + b over the allowed tokens.
 * Nothing here uses the library's scan, records or finalizers. */
#ifndef NAIVE_REF_H
#define NAIVE_REF_H

#include <stdint.h>

#include "flashspec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Full logits in double (malloc'd, [rows, V]). */
double *ref_logits_stored(const void *logits, fs_dtype dt, int64_t rows, int64_t V);
double *ref_logits_fused(const void *weight, const void *hidden, fs_dtype dt, int64_t rows,
                         int64_t V, int64_t D);

/* fs_row_status of a temperature. */
int32_t ref_temperature_status(double T);

/* The distribution one row samples from.  logp[V] gets log p_i (-inf for
 * tokens of probability 0) where p = softmax((l + b) / T) over the allowed set
 * (T = 0: softmax(l + b), the distribution a greedy logprob is reported
 * under).  Returns FS_ROW_OK, FS_ROW_NONFINITE or FS_ROW_ALL_MASKED.
 * bias_row / allowed_row may be NULL. */
int32_t ref_row_logp(const double *l, int64_t V, const float *bias_row,
                     const uint32_t *allowed_row, double T, double *logp);

/* Score used for greedy choices: l + b over allowed tokens (-inf otherwise). */
double ref_greedy_score(const double *l, const float *bias_row, const uint32_t *allowed_row,
                        int64_t v);

/* sample over full logits [rows, V].  margin[r] (optional): how close the
 * draw came to another outcome: the gap between the winning block key and the
 * runner-up, or the distance of the in-block uniform to a neighbour's
 * cumulative boundary (inf when there is no other outcome). */
void ref_sample(const double *logits, int64_t rows, int64_t V, const fs_sampling *p,
                int32_t *tokens, double *logprobs, int32_t *status, double *margin);

/* How far `token` is from winning row r's sample: 0 if it is the winner,
 * inf if it cannot be drawn, the key gap of its block if that block lost,
 * else the distance of the in-block uniform to its cumulative interval. */
double ref_sample_gap(const double *logits, int64_t V, const fs_sampling *p, int64_t r,
                      int32_t token);

/* draft argmax over full logits. */
void ref_argmax(const double *logits, int64_t rows, int64_t V, int32_t *tokens, double *values,
                int32_t *status, double *margin);

/* verify over full target logits [num_draft_tokens + R, V].  Outputs as the
 * library's ([R, max_drafts + 1], -1 / NaN padded).  margin[r] (optional): the
 * smallest decision margin along request r's path (|u - p(x)| of each
 * acceptance test, key gaps of each emitted token). */
void ref_verify(const double *logits, int64_t V, const fs_drafts *d, const fs_sampling *p,
                int32_t *tokens, int32_t *num_emitted, double *logprobs, int32_t *status,
                double *margin);

/* Given another implementation's output for request r (tokens, num_emitted),
 * the decision margin at the first point where it departs from the oracle:
 * 0 if it agrees, inf if it is impossible (e.g. an "accepted" token that is
 * not the draft), else |u - p(x)| or the key gap of the token it chose. */
double ref_verify_gap(const double *logits, int64_t V, const fs_drafts *d, const fs_sampling *p,
                      int64_t r, const int32_t *other_tokens, int32_t other_num_emitted);

/* The draw primitives above, for other oracles (naive_tree.c).  Over log
 * weights lw[V] (-inf = left out): the two-level block draw at (seed, offset,
 * position) and its decision margin; and the argmax of l + b over allowed
 * (lowest id on ties) with its score and the runner-up's. */
int32_t ref_block_draw(const double *lw, int64_t V, uint64_t seed, uint64_t offset, uint32_t pos,
                       double *margin);
int32_t ref_greedy_max(const double *l, int64_t V, const float *bias_row,
                       const uint32_t *allowed_row, double *best_s, double *second_s);

#ifdef __cplusplus
}
#endif

#endif
