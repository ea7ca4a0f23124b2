/* Device-made LM heads with peaked or moderate (Zipf-like) or flat logits,
 * for the filter benchmark; filter_inputs.cu says how they are built. */
#ifndef FS_BENCH_FILTER_INPUTS_H
#define FS_BENCH_FILTER_INPUTS_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The logits' shape. */
enum { FB_FLAT = 0, FB_PEAKED = 1, FB_MODERATE = 2 };

/* W [V, D] and H [rows, D], bf16, on the device; shape one of FB_*. */
cudaError_t fb_fill_head(void *w, void *h, int64_t V, int64_t D, int64_t rows, int shape,
                         uint64_t seed, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
