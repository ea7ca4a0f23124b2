/* Host-side validation of tree verify's draft-tree argument. */
#include <stdint.h>

#include "philox.h" /* FS_MAX_POSITION */
#include "tree_backend.h"

fs_status fs_check_tree(fs_context *ctx, const char *fn, const fs_draft_tree *t, fs_tree_args *a)
{
    if (!t)
        return fs_fail(ctx, FS_ERR_NULL_POINTER, "%s: tree is NULL", fn);
    if (t->num_requests <= 0 || t->num_requests > INT32_MAX / 2)
        return fs_fail(ctx, FS_ERR_INVALID_SIZE, "%s: num_requests %lld outside [1, INT32_MAX/2]",
                       fn, (long long)t->num_requests);
    /* depths are Philox positions (24 bits) */
    if (t->max_depth < 0 || t->max_depth >= (int64_t)FS_MAX_POSITION)
        return fs_fail(ctx, FS_ERR_INVALID_SIZE, "%s: max_depth %lld outside [0, %u)", fn,
                       (long long)t->max_depth, FS_MAX_POSITION);
    if (t->max_children < 0 || t->max_children > FS_TREE_MAX_CHILDREN)
        return fs_fail(ctx, FS_ERR_INVALID_SIZE, "%s: max_children %lld outside [0, %d]", fn,
                       (long long)t->max_children, FS_TREE_MAX_CHILDREN);
    /* node and row indices are int32 */
    if (t->num_nodes < 0 || t->num_nodes > INT32_MAX - t->num_requests)
        return fs_fail(ctx, FS_ERR_INVALID_SIZE,
                       "%s: num_nodes %lld outside [0, INT32_MAX - num_requests]", fn,
                       (long long)t->num_nodes);
    if (!t->node_offsets)
        return fs_fail(ctx, FS_ERR_NULL_POINTER, "%s: tree->node_offsets is NULL", fn);
    if (t->num_nodes > 0 && !t->tokens)
        return fs_fail(ctx, FS_ERR_NULL_POINTER, "%s: tree->tokens is NULL", fn);
    if (t->num_nodes > 0 && !t->parents)
        return fs_fail(ctx, FS_ERR_NULL_POINTER, "%s: tree->parents is NULL", fn);
    a->tree = t;
    a->base.rows = t->num_nodes + t->num_requests;
    return FS_OK;
}
