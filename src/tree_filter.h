/* The filters on tree rows: the kept record of a tree row whose kept set F
 * is resolved (filter_finalize.h), built from the same blocks as a verify
 * row's but pushed through fs_tree_record_push_block.  So the children's
 * scores are kept only where the child is in F (a child outside F keeps
 * child_s = -inf: p = 0, never accepted), the children in F count in the
 * log-sum-exp but not in the noise, and the candidate is drawn from F with
 * every excluded child left out -- the tree record of the row under the mask
 * "allowed and kept".  docs/DESIGN.md ("Tree verification", "5. Filters").
 *
 * Shared by the CPU backend and (marked FS_HD for) the CUDA kernels. */
#ifndef FS_TREE_FILTER_H
#define FS_TREE_FILTER_H

#include "filter_finalize.h"
#include "fs_hd.h"
#include "tree_record.h"

FS_HD void fs_tree_filter_kept_record(const fs_filter_record *f, const fs_filter_cut *c,
                                      const fs_tree_row *d, fs_tree_record *out)
{
    int32_t ids[FS_FILTER_CANDIDATES];
    float ss[FS_FILTER_CANDIDATES];
    const int m = fs_filter_kept_sorted(f, c, ids, ss);
    fs_tree_record_init(out);
    int i = 0;
    while (i < m) {
        float v[FS_NOISE_BLOCK];
        const int32_t id0 = fs_filter_kept_block(ids, ss, m, &i, v);
        fs_tree_record_push_block(out, d, id0, FS_NOISE_BLOCK, v);
    }
}

#endif
