/* The naive materialised oracle of tree verify, in double precision, with
 * the SAME noise as the library (docs/DESIGN.md, "Tree verification"):
 *   at a node of depth d with target p (materialised from the row's logits,
 *   bias and mask) and children c_0 .. c_{m-1} in ascending node index,
 *   child k is accepted iff u_k * R <= p(c_k), where u_k = word k % 4 of the
 *   Philox draw (seed, offset, position d, FS_PURPOSE_ACCEPT, counter k / 4)
 *   and R = the materialised mass of p outside the children tried before
 *   (a repeated token, or p(c_k) = 0, is rejected untested); if none is
 *   accepted, the residual -- p with every child's token zeroed -- is drawn
 *   from with the two-level block Gumbel draw at position d; at a leaf, p
 *   itself.  At T = 0: the first child equal to the argmax of l + b, else
 *   the argmax.  Nothing here uses the library's scan, records or walk.
 *
 * flags select deliberately WRONG walks, for the power of the statistical
 * tests:
 *   REF_TREE_KEEP_SIBLINGS   the residual zeroes only the last child's token
 *                            (a chain's rule), so rejected siblings return
 *   REF_TREE_UNRENORMALISED  child k is accepted iff u_k <= p(c_k), its
 *                            probability without the rejected siblings
 *                            removed and renormalised */
#ifndef NAIVE_TREE_H
#define NAIVE_TREE_H

#include <stdint.h>

#include "flashspec.h"

#ifdef __cplusplus
extern "C" {
#endif

enum ref_tree_flags {
    REF_TREE_EXACT = 0,
    REF_TREE_KEEP_SIBLINGS = 1u,
    REF_TREE_UNRENORMALISED = 2u
};

/* Tree verify over full target logits [num_nodes + R, V] (double).  Outputs
 * as the library's: tokens and logprobs [R, max_depth + 1] (-1 / NaN padded),
 * path [R, max_depth] (-1 padded; may be NULL), num_emitted, status [R].
 * margin[r] (optional): the smallest decision margin along request r's walk
 * (|u_k R - p(c_k)| of each test at T > 0, the argmax's lead at T = 0, and
 * the key or in-block gap of each drawn token); a departure from the oracle
 * is a floating-point accident only where it is tiny. */
void ref_verify_tree(const double *logits, int64_t V, const fs_draft_tree *t,
                     const fs_sampling *p, unsigned flags, int32_t *tokens, int32_t *path,
                     int32_t *num_emitted, double *logprobs, int32_t *status, double *margin);

#ifdef __cplusplus
}
#endif

#endif
