/* Tree-verify helpers of the test suite: the ops with a freshly queried
 * workspace, random draft trees within given bounds, draft tokens chosen
 * from the target rows (so walks go deep and stop everywhere), and a chain
 * of drafts laid out as a tree. */
#ifndef FS_TREE_TEST_H
#define FS_TREE_TEST_H

#include <stdint.h>

#include "flashspec.h"

#ifdef __cplusplus
extern "C" {
#endif

fs_status fstt_verify_tree_logits(fs_context *ctx, const void *logits, fs_dtype dt, int64_t V,
                                  const fs_draft_tree *t, const fs_sampling *p, int32_t *tok,
                                  int32_t *path, int32_t *nem, float *lp, int32_t *st);
fs_status fstt_verify_tree(fs_context *ctx, const fs_lm_head *head, const void *hidden,
                           const fs_draft_tree *t, const fs_sampling *p, int32_t *tok,
                           int32_t *path, int32_t *nem, float *lp, int32_t *st);

typedef struct fstt_tree {
    int32_t *tokens, *parents, *offsets;
    fs_draft_tree t;
} fstt_tree;

/* Random shapes: request r gets n_r nodes, uniform in [0, max_nodes]
 * (request 0 always none), each node's parent uniform among the earlier
 * nodes (and the root) that still have room under max_depth and
 * max_children.  Tokens are all 0 until chosen.  Returns the number of
 * target rows (num_nodes + R). */
int64_t fstt_make_shapes(fstt_tree *tr, int64_t R, int64_t max_nodes, int64_t max_depth,
                         int64_t max_children, uint64_t seed);
/* Request r of R is a chain of n_r = lens[r] drafts (node i's parent i - 1),
 * with tokens x (concatenated, as fs_drafts lays them out). */
int64_t fstt_make_chains(fstt_tree *tr, int64_t R, const int32_t *lens, const int32_t *x,
                         int64_t max_depth);
void fstt_free(fstt_tree *tr);

/* Tokens from the target rows (ref: [rows, V] double logits; bias and mask
 * from p): a node whose parent's row is row, as the c-th child (c = 0, 1, ..),
 * takes the (c+1)-th best token of row (after bias and mask) with
 * probability 0.5, a token sampled from row 0.3, a uniform token 0.15, and
 * its previous sibling's token (a repeat) 0.05. */
void fstt_choose_tokens(fstt_tree *tr, const double *ref, int64_t V, const fs_sampling *p,
                        uint64_t seed);

#ifdef __cplusplus
}
#endif

#endif
