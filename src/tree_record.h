/* Tree verify's row descriptor and summary record: record.h's fs_row_desc and
 * fs_record, extended with the row's children.
 *
 * A tree row (the root's, or a node's) is tested against several children
 * c_1 .. c_m at once, so besides what a verify row needs its record keeps
 * the score of every child, and its Gumbel candidate leaves out the whole
 * child set instead of one token.  Everything else -- log-sum-exp, argmax,
 * the two-level Gumbel-max over noise blocks, merge -- is record.h's, called
 * unchanged: a row with one child gives bit for bit the record that
 * fs_record_push_block gives a verify row whose excluded token is that child.
 *
 * Shared host/device code (FS_HD), like record.h, so that the CUDA scan's
 * epilogue can push blocks with fs_tree_record_push_block and the records
 * merge across tiles and vocabulary shards with fs_tree_record_merge. */
#ifndef FS_TREE_RECORD_H
#define FS_TREE_RECORD_H

#include <math.h>
#include <stdint.h>

#include "flashspec.h" /* FS_TREE_MAX_CHILDREN */
#include "fs_hd.h"
#include "philox.h"
#include "record.h"

/* What the scan and the walk need to know about one target row of a tree. */
typedef struct fs_tree_row {
    fs_row_desc base;       /* position = depth of the row's node (root 0); excluded and
                               selected are -1 (the children replace them) */
    int32_t num_children;
    uint32_t excluded_mask; /* bit k: children[k] is left out of the Gumbel candidate
                               (every child; the CPU test hooks clear bits) */
    int32_t children[FS_TREE_MAX_CHILDREN];    /* the children's tokens, in try order */
    int32_t child_nodes[FS_TREE_MAX_CHILDREN]; /* their node indices in the request, so the
                                                  walk steps to a child without a search */
} fs_tree_row;

typedef struct fs_tree_record {
    fs_record base; /* log-sum-exp and argmax over every allowed token; best_* is the
                       candidate drawn with the excluded children left out; sel_s unused */
    float child_s[FS_TREE_MAX_CHILDREN]; /* score of children[k] when allowed and finite,
                                            else -inf */
} fs_tree_record;

FS_HD void fs_tree_record_init(fs_tree_record *r)
{
    fs_record_init(&r->base);
    for (int k = 0; k < FS_TREE_MAX_CHILDREN; ++k)
        r->child_s[k] = -INFINITY;
}

/* Positions inside the noise block starting at id0 (a multiple of
 * FS_NOISE_BLOCK) that hold an excluded child, as bits.  One pass over the
 * children per block instead of a set lookup per token. */
FS_HD uint32_t fs_tree_block_excluded(const fs_tree_row *d, int32_t id0)
{
    uint32_t bits = 0;
    for (int k = 0; k < FS_TREE_MAX_CHILDREN; ++k) {
        if (k >= d->num_children || !((d->excluded_mask >> k) & 1u))
            continue;
        uint32_t at = (uint32_t)(d->children[k] - id0);
        if (at < FS_NOISE_BLOCK)
            bits |= 1u << at;
    }
    return bits;
}

/* Push one noise block (tokens id0 .. id0 + n - 1, scores s, -inf for
 * disallowed tokens) into a tree record: the children's scores are kept, the
 * excluded children go into the log-sum-exp and argmax one by one (in
 * ascending id, as fs_record_push_block pushes its one excluded token), and
 * the rest of the block -- with the excluded children at -inf -- is pushed
 * by fs_record_push_block, whose own exclusion is unused (-1). */
FS_HD void fs_tree_record_push_block(fs_tree_record *r, const fs_tree_row *d, int32_t id0, int n,
                                     const float *s)
{
    for (int k = 0; k < FS_TREE_MAX_CHILDREN; ++k) {
        if (k >= d->num_children)
            continue;
        uint32_t at = (uint32_t)(d->children[k] - id0);
        if (at < (uint32_t)n && s[at] > -INFINITY && s[at] < INFINITY)
            r->child_s[k] = s[at];
    }
    const uint32_t ex = fs_tree_block_excluded(d, id0);
    float v[FS_NOISE_BLOCK];
    for (int i = 0; i < FS_NOISE_BLOCK; ++i) {
        float x = i < n ? s[i] : -INFINITY;
        if ((ex >> i) & 1u) {
            fs_record_push(&r->base, &d->base, id0 + i, x);
            x = -INFINITY;
        }
        v[i] = x;
    }
    fs_record_push_block(&r->base, &d->base, id0, n, v);
}

FS_HD void fs_tree_record_merge(fs_tree_record *a, const fs_tree_record *b)
{
    fs_record_merge(&a->base, &b->base);
    /* each child token lives in exactly one block, so at most one side has it */
    for (int k = 0; k < FS_TREE_MAX_CHILDREN; ++k)
        if (b->child_s[k] > a->child_s[k])
            a->child_s[k] = b->child_s[k];
}

/* The acceptance uniform of the k-th child (in try order) of a row at depth
 * `position`: word k % 4 of the Philox draw at (position, FS_PURPOSE_ACCEPT,
 * counter k / 4).  Child 0 takes word 0 of counter 0, which is
 * fs_accept_uniform(seed, offset, position): a chain's draft at position j
 * and the only child of a chain-shaped tree's row at depth j test against
 * the same number. */
FS_HD float fs_tree_accept_uniform(uint64_t seed, uint64_t offset, uint32_t position, uint32_t k)
{
    fs_u32x4 w = fs_philox_draw(seed, offset, position, FS_PURPOSE_ACCEPT, k >> 2);
    return fs_uniform(w.v[k & 3u]);
}

#endif
