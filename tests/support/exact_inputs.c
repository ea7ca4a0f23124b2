/* Exact test inputs; see exact_inputs.h. */
#include "exact_inputs.h"

#include <math.h>
#include <stdlib.h>

void fst_exact_head(fst_rng *rng, int64_t V, int64_t D, int64_t rows, float **w, float **h)
{
    float *wf = malloc(sizeof(float) * (size_t)(V * D));
    float *hf = malloc(sizeof(float) * (size_t)(rows * D));
    for (int64_t i = 0; i < V * D; ++i)
        wf[i] = (float)(fst_randint(rng, 9) - 4) / 8.0f;
    for (int64_t i = 0; i < rows * D; ++i)
        hf[i] = (float)(fst_randint(rng, 5) - 2) / 2.0f;
    *w = wf;
    *h = hf;
}

float *fst_exact_logits(fst_rng *rng, int64_t rows, int64_t V)
{
    float *l = malloc(sizeof(float) * (size_t)(rows * V));
    for (int64_t i = 0; i < rows * V; ++i)
        l[i] = (float)(fst_randint(rng, 129) - 64) / 16.0f;
    return l;
}

float *fst_zipf_bias(uint64_t seed, int64_t rows, int64_t V)
{
    float *b = malloc(sizeof(float) * (size_t)(rows * V));
    int64_t *perm = malloc(sizeof(int64_t) * (size_t)V);
    fst_rng rng;
    fst_rng_seed(&rng, seed);
    for (int64_t r = 0; r < rows; ++r) {
        for (int64_t v = 0; v < V; ++v)
            perm[v] = v;
        fst_shuffle(&rng, perm, V);
        for (int64_t q = 0; q < V; ++q)
            b[r * V + perm[q]] =
                q < 512 ? (float)(round(16.0 * (6.0 - 1.5 * log2(1.0 + (double)q))) / 16.0)
                        : -8.0f;
    }
    free(perm);
    return b;
}
