/* The candidate lists' warp shuffles (the list itself, its inserts and
 * merges: src/cand_list.h, shared with the CPU tests). */
#ifndef FS_FILTER_CANDS_CUH
#define FS_FILTER_CANDS_CUH

#include "cand_list.h"

#ifdef __CUDACC__

/* The list of lane (lane ^ mask); every lane named by `mask_lanes` takes part. */
static __device__ __forceinline__ fs_cand_list fs_cand_shfl_xor(const fs_cand_list &c, int mask,
                                                               unsigned mask_lanes = 0xffffffffu)
{
    fs_cand_list o;
#pragma unroll
    for (int i = 0; i < FS_CAND_LIST; ++i) {
        o.s[i] = __shfl_xor_sync(mask_lanes, c.s[i], mask);
        o.id[i] = __shfl_xor_sync(mask_lanes, c.id[i], mask);
    }
    o.drop = __shfl_xor_sync(mask_lanes, c.drop, mask);
    o.count = __shfl_xor_sync(mask_lanes, c.count, mask);
    return o;
}

/* Merge a full warp's lists into every lane. */
static __device__ __forceinline__ void fs_cand_warp_reduce(fs_cand_list &c)
{
#pragma unroll
    for (int mask = 16; mask > 0; mask >>= 1) {
        const fs_cand_list o = fs_cand_shfl_xor(c, mask);
        fs_cand_merge(&c, &o);
    }
}

#endif /* __CUDACC__ */

#endif
