/* Host-side validation shared by every public op: everything the host can
 * see is checked here, before any backend work, so a failing call returns a
 * status, leaves a message on the context and writes nothing. */
#ifndef FS_VALIDATE_H
#define FS_VALIDATE_H

#include "backend.h"

/* Fill a's input fields from a fused (LM head + hidden) call. */
fs_status fs_prepare_fused(fs_context *ctx, const char *fn, const fs_lm_head *head,
                           const void *hidden, int64_t rows, fs_op_args *a);
/* Fill a's input fields from a call over materialised logits. */
fs_status fs_prepare_logits(fs_context *ctx, const char *fn, const void *logits, fs_dtype dtype,
                            int64_t rows, int64_t vocab_size, fs_op_args *a);
fs_status fs_check_sampling(fs_context *ctx, const char *fn, const fs_sampling *params);
/* Check the verify request layout and set a->drafts and a->rows. */
fs_status fs_check_drafts(fs_context *ctx, const char *fn, const fs_drafts *drafts,
                          fs_op_args *a);
fs_status fs_check_workspace_query(const fs_context *ctx, int64_t rows, int64_t vocab_size,
                                   const size_t *out_bytes);

/* Workspace bytes of op on ctx's backend. */
size_t fs_workspace_bytes(const fs_context *ctx, fs_op op, int64_t rows, int64_t requests,
                          int64_t vocab_size);
/* Complete a (whose input is already prepared) with the op, its parameters
 * (checked unless op is FS_OP_ARGMAX), workspace and outputs, check outputs
 * and workspace, then run it on ctx's backend. */
fs_status fs_run_op(fs_context *ctx, const char *fn, fs_op_args *a, fs_op op,
                    const fs_sampling *params, void *workspace, size_t workspace_bytes,
                    int32_t *out_tokens, float *out_values, int32_t *out_num_emitted,
                    int32_t *out_row_status);

#endif
