/* Tree verify's part of a scan kernel's block push.
 *
 * A tree row's record is src/tree_record.h's fs_tree_record: an fs_record
 * plus the score of each child.  The scan kernels keep carrying plain
 * fs_records and call this just before fs_record_push_block: it pushes the
 * block's excluded children into the log-sum-exp and argmax one by one and
 * sets them to -inf, which is exactly what fs_tree_record_push_block does
 * before its own fs_record_push_block call, so the fs_record part comes out
 * bit for bit the same, and the records merge with the unchanged merge
 * kernel.  The children's scores need no merge: a child token lies in one
 * noise block of one tile, so the one thread that pushes that block writes
 * its score straight to child_s, which the prep kernel set to -inf.
 *
 * Every other op passes no tree rows and never enters here; the call site's
 * test is on a kernel argument, uniform over the grid. */
#ifndef FS_TREE_SCAN_CUH
#define FS_TREE_SCAN_CUH

#include <math.h>
#include <stdint.h>

#include "record.h"
#include "tree_record.h"

#ifdef __CUDACC__

/* Whether the noise block starting at id0 holds one of the row's children
 * (t): only then has fs_tree_scan_block work there, and a block without
 * one is pushed as any row's (the Hopper tile kernels' plain blocks). */
static __device__ __forceinline__ bool fs_tree_block_has_child(const fs_tree_row *t, int32_t id0)
{
    const int nc = t->num_children;
    bool any = false;
    for (int k = 0; k < nc; ++k)
        any |= (uint32_t)(t->children[k] - id0) < (uint32_t)FS_NOISE_BLOCK;
    return any;
}

/* Block id0 .. id0 + n - 1 (1 <= n <= FS_NOISE_BLOCK) of a tree row with
 * descriptor d (the row's base) and children t; s holds the block's scores
 * (-inf for disallowed tokens) and is updated in place.  child_s: the row's
 * FS_TREE_MAX_CHILDREN scores in global memory.  s is only ever indexed by
 * unrolled constants, so that it stays in registers in the callers. */
static __device__ __forceinline__ void fs_tree_scan_block(fs_record *rec, const fs_row_desc &d,
                                                          const fs_tree_row *t, float *child_s,
                                                          int32_t id0, int n,
                                                          float (&s)[FS_NOISE_BLOCK])
{
    const int nc = t->num_children;
    if (nc == 0)
        return; /* a leaf: its row is a plain bonus row */
    for (int k = 0; k < nc; ++k) {
        const uint32_t at = (uint32_t)(t->children[k] - id0);
        if (at >= (uint32_t)n)
            continue;
        float x = -INFINITY;
#pragma unroll
        for (int i = 0; i < FS_NOISE_BLOCK; ++i)
            if ((uint32_t)i == at)
                x = s[i];
        if (x > -INFINITY && x < INFINITY)
            child_s[k] = x;
    }
    const uint32_t ex = fs_tree_block_excluded(t, id0);
    if (ex == 0)
        return;
#pragma unroll
    for (int i = 0; i < FS_NOISE_BLOCK; ++i)
        if ((ex >> i) & 1u) {
            fs_record_push(rec, &d, id0 + i, i < n ? s[i] : -INFINITY);
            s[i] = -INFINITY;
        }
}

#endif /* __CUDACC__ */

#endif
