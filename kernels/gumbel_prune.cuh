/* Exact pruning of Gumbel noise against a lower bound `bar` on the best
 * perturbed key a row can end with (the running best key of a record, or a
 * key already seen for the row elsewhere).
 *
 * A token with score s matters only if s + g(u) can reach bar, where
 * g(u) = -log(-log u).  Two tests, both conservative:
 *   fs_noise_hopeless(s, bar)  s + 17 < bar: no uniform can lift it
 *                              (17 > the largest g, 16.64), so the Philox
 *                              call itself can be skipped;
 *   fs_noise_u_floor(s, bar)   a uniform below the returned floor cannot
 *                              lift it either: g(u) > d = bar - s needs
 *                              u > exp(-exp(-d)); the floor is that value
 *                              computed with fast exponentials for a d cut by
 *                              a margin that covers their error and the
 *                              rounding of s + g, then cut by 0.1 %.
 * Below the floor the token gets g = -inf (fs_record_push ignores it), which
 * leaves the record's best exactly as the full computation would, and the
 * two precise logarithms of fs_gumbel are skipped.  Once a row has a good
 * candidate almost every other token falls below its floor. */
#ifndef FS_GUMBEL_PRUNE_CUH
#define FS_GUMBEL_PRUNE_CUH

#include <math.h>

#include "philox.h"

#define FS_GUMBEL_BOUND 17.0f /* > max fs_gumbel = -log(-log(1 - 2^-24)) = 16.64 */

static __device__ __forceinline__ bool fs_noise_hopeless(float s, float bar)
{
    return s + FS_GUMBEL_BOUND < bar;
}

static __device__ __forceinline__ float fs_noise_u_floor(float s, float bar)
{
    /* margin: logf / subtraction error in g (< 1e-4 absolute for |g| <= 17)
       and the rounding of s + g and of bar - s (a few ulp of |s| + |bar|) */
    const float d = (bar - s) - (1e-4f + 4e-6f * (fabsf(s) + fabsf(bar)));
    /* bar = -inf gives d = -inf and a floor of 0: nothing is pruned */
    return 0.999f * __expf(-__expf(-d));
}

/* Word j of w without indexing a register array at run time. */
static __device__ __forceinline__ uint32_t fs_pick_word(const fs_u32x4 &w, int j)
{
    uint32_t x = w.v[3];
    x = j == 2 ? w.v[2] : x;
    x = j == 1 ? w.v[1] : x;
    x = j == 0 ? w.v[0] : x;
    return x;
}

/* g for the Philox word x, or -inf when s + g cannot reach bar. */
static __device__ __forceinline__ float fs_gumbel_pruned(uint32_t x, float s, float bar)
{
    return fs_uniform(x) < fs_noise_u_floor(s, bar) ? -INFINITY : fs_gumbel(x);
}

#endif
