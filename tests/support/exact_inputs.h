/* Inputs whose logits are exact in fp32 whatever the summation order, so
 * that a GPU and the CPU oracle compute the same floats and must agree token
 * for token (the GPU filter and tree tests), and Zipf-like biases that make
 * rows peaked while staying exact. */
#ifndef FS_EXACT_INPUTS_H
#define FS_EXACT_INPUTS_H

#include <stdint.h>

#include "fs_test.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An LM head W [V, D] of multiples of 1/8 in [-1/2, 1/2] and hidden states
 * H [rows, D] of multiples of 1/2 in [-1, 1], drawn from rng in that order
 * (malloc'd floats; both exact in bf16, their products' sums exact in fp32
 * for D up to 2^17). */
void fst_exact_head(fst_rng *rng, int64_t V, int64_t D, int64_t rows, float **w, float **h);

/* Logits [rows, V] of multiples of 1/16 in [-4, 4] (malloc'd). */
float *fst_exact_logits(fst_rng *rng, int64_t rows, int64_t V);

/* Zipf-like peaks [rows, V]: the token of rank q (a random order per row)
 * gets 6 - 1.5 log2(1 + q) rounded to 1/16 for q < 512, -8 for the rest
 * (malloc'd). */
float *fst_zipf_bias(uint64_t seed, int64_t rows, int64_t V);

#ifdef __cplusplus
}
#endif

#endif
