/* Warp shuffle of a whole summary record, shared by every scan kernel's
 * in-warp merges. */
#ifndef FS_RECORD_SHFL_CUH
#define FS_RECORD_SHFL_CUH

#include "record.h"

/* The record of lane (lane ^ mask); all 32 lanes must take part. */
static __device__ __forceinline__ fs_record fs_record_shfl_xor(const fs_record &r, int mask)
{
    fs_record o;
    o.max_s = __shfl_xor_sync(0xffffffffu, r.max_s, mask);
    o.max_id = __shfl_xor_sync(0xffffffffu, r.max_id, mask);
    o.sum_exp = __shfl_xor_sync(0xffffffffu, r.sum_exp, mask);
    o.best_key = __shfl_xor_sync(0xffffffffu, r.best_key, mask);
    o.best_id = __shfl_xor_sync(0xffffffffu, r.best_id, mask);
    o.best_s = __shfl_xor_sync(0xffffffffu, r.best_s, mask);
    o.sel_s = __shfl_xor_sync(0xffffffffu, r.sel_s, mask);
    o.flags = __shfl_xor_sync(0xffffffffu, r.flags, mask);
    return o;
}

#endif
