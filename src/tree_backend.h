/* Tree verify's internal interface: the op's arguments (fs_op_args plus the
 * tree and its path output), host-side validation, dispatch, and the
 * backends that run it.  Kept apart from backend.h's fs_op_args: the chain
 * ops never see a tree. */
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
 * FS_ERR_UNSUPPORTED on a tensor-parallel context, before anything is
 * written. */
fs_status fs_run_tree_op(fs_context *ctx, const char *fn, fs_tree_args *a,
                         const fs_sampling *params, void *workspace, size_t workspace_bytes,
                         int32_t *out_tokens, int32_t *out_path_nodes, int32_t *out_num_emitted,
                         float *out_logprobs, int32_t *out_row_status);

/* The CPU backend (cpu_tree.c). */
size_t fs_cpu_tree_workspace_bytes(int64_t rows, int64_t requests);
fs_status fs_cpu_tree_run(fs_context *ctx, const fs_tree_args *a);

/* Workspace bytes of ctx's backend for `rows` target rows of `requests`
 * requests over a local vocabulary of vocab_size (dispatch_tree.c). */
size_t fs_tree_workspace_bytes(const fs_context *ctx, int64_t rows, int64_t requests,
                               int64_t vocab_size);

#ifdef FS_HAVE_CUDA
/* The CUDA backend (kernels/cuda_tree.cu): enqueued on ctx's stream, per-request
 * failures in out_row_status only (FS_OK without synchronising). */
size_t fs_cuda_tree_workspace_bytes(const fs_context *ctx, int64_t rows, int64_t requests,
                                     int64_t vocab_size);
fs_status fs_cuda_tree_run(fs_context *ctx, const fs_tree_args *a);
#endif

#ifdef __cplusplus
}
#endif

#endif
