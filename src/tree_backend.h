/* Tree verify's internal interface: the op's arguments (fs_op_args plus the
 * tree and its path output), host-side validation, dispatch, and the CPU
 * backend that runs it.  Kept apart from backend.h's fs_op_args so the chain
 * ops and their CUDA backend are untouched until tree verify has a GPU port. */
#ifndef FS_TREE_BACKEND_H
#define FS_TREE_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "flashspec.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct fs_tree_args {
    /* input, vocabulary, params, workspace, out_tokens, out_values (logprobs),
       out_num_emitted, out_row_status; base.op = FS_OP_VERIFY_TREE,
       base.rows = num_nodes + num_requests, base.drafts unused */
    fs_op_args base;
    const fs_draft_tree *tree;
    int32_t *out_path_nodes; /* optional */
} fs_tree_args;

/* Check the tree's sizes and pointers (validate_tree.c); sets a->tree and
 * a->base.rows. */
fs_status fs_check_tree(fs_context *ctx, const char *fn, const fs_draft_tree *tree,
                        fs_tree_args *a);

/* Complete a (whose input and tree are prepared) with parameters, workspace
 * and outputs, check them, then run it on ctx's backend (dispatch_tree.c):
 * FS_ERR_UNSUPPORTED on a CUDA context, before anything is written. */
fs_status fs_run_tree_op(fs_context *ctx, const char *fn, fs_tree_args *a,
                         const fs_sampling *params, void *workspace, size_t workspace_bytes,
                         int32_t *out_tokens, int32_t *out_path_nodes, int32_t *out_num_emitted,
                         float *out_logprobs, int32_t *out_row_status);

/* The CPU backend (cpu_tree.c). */
size_t fs_cpu_tree_workspace_bytes(int64_t rows, int64_t requests);
fs_status fs_cpu_tree_run(fs_context *ctx, const fs_tree_args *a);

#ifdef __cplusplus
}
#endif

#endif
