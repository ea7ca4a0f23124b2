/* Inputs of the filter benchmark (filter_bench.c): an LM head whose logits
 * have a chosen shape, made on the device (a 151936 x 4096 head is 1.2 GB).
 *
 *   W[v, k] = a_v u_k + sigma n(v, k),   H[r, k] = u_k + 0.05 n'(r, k),
 *   u_k = +-1/sqrt(D) (a hashed sign), n, n' ~ N(0, 1) (hashed Box-Muller),
 *
 * so logit(r, v) = a_v + noise of std ~sigma.  Peaked: a_v = 8 - 2 ln(1 +
 * rank_v), rank_v a hash of v, and sigma = 0.3 -- Zipf-like with exponent 2:
 * the top token holds ~60% of the mass, the top 10 ~90%, and a long tail of
 * 150k tokens; a Zipf exponent near 1 (natural text's unigram law) spreads
 * a 0.9 nucleus over thousands of tokens, which is not what a model's
 * next-token distribution mostly looks like.  Moderate: a_v = 8 - 1.4 ln(1 +
 * rank_v), sigma = 0.3 -- exponent 1.4: the top token holds ~25-50%, a 0.9
 * nucleus ~100-300 tokens (a sampled sequence's open-ended positions), past
 * the 64 candidates that decide most peaked rows.  Flat: a_v = 0 and sigma =
 * 1: N(0, 1) logits, no token stands out. */
#include <cuda_bf16.h>
#include <math.h>
#include <stdint.h>

#include "filter_inputs.h"

namespace {

__device__ __forceinline__ uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

__device__ __forceinline__ float normal(uint64_t key)
{
    const uint64_t h = mix(key);
    const float u1 = ((float)(h >> 40) + 0.5f) * (1.0f / 16777216.0f);
    const float u2 = ((float)(h & 0xffffffu) + 0.5f) * (1.0f / 16777216.0f);
    return sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
}

__device__ __forceinline__ float u_of(int64_t k, int64_t D, uint64_t seed)
{
    return (mix(seed ^ 0xabcdefull ^ (uint64_t)k) & 1u ? 1.0f : -1.0f) * rsqrtf((float)D);
}

__global__ void fill_w(__nv_bfloat16 *w, int64_t V, int64_t D, int shape, uint64_t seed)
{
    const int64_t n = V * D;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t v = i / D, k = i % D;
        float a = 0.0f;
        if (shape != FB_FLAT) {
            const uint64_t rank = mix(seed ^ (uint64_t)v) % (uint64_t)V;
            a = 8.0f - (shape == FB_PEAKED ? 2.0f : 1.4f) * logf(1.0f + (float)rank);
        }
        const float sigma = shape != FB_FLAT ? 0.3f : 1.0f;
        w[i] = __float2bfloat16(a * u_of(k, D, seed) + sigma * normal(seed * 31 + (uint64_t)i));
    }
}

__global__ void fill_h(__nv_bfloat16 *h, int64_t rows, int64_t D, uint64_t seed)
{
    const int64_t n = rows * D;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        h[i] = __float2bfloat16(u_of(i % D, D, seed) +
                                0.05f * normal(seed * 17 + 0x777ull + (uint64_t)i));
}

} // namespace

extern "C" cudaError_t fb_fill_head(void *w, void *h, int64_t V, int64_t D, int64_t rows,
                                    int shape, uint64_t seed, cudaStream_t stream)
{
    fill_w<<<4096, 256, 0, stream>>>(static_cast<__nv_bfloat16 *>(w), V, D, shape, seed);
    fill_h<<<256, 256, 0, stream>>>(static_cast<__nv_bfloat16 *>(h), rows, D, seed);
    return cudaGetLastError();
}
