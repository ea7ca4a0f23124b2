/* Host-side argument validation shared by every public op. */
#include <stdint.h>

#include "filter_check.h"
#include "philox.h"
#include "validate.h"

static int dtype_ok(fs_dtype d)
{
    return d == FS_DTYPE_F32 || d == FS_DTYPE_F16 || d == FS_DTYPE_BF16;
}

/* Vocabulary placement of this context: the whole vocabulary, or its shard. */
static fs_status set_vocab(fs_context *ctx, const char *fn, int64_t vocab_size, fs_op_args *a)
{
    if (vocab_size <= 0 || vocab_size > INT32_MAX)
        return fs_fail(ctx, FS_ERR_INVALID_SIZE, "%s: vocab_size %lld outside [1, INT32_MAX]", fn,
                       (long long)vocab_size);
    a->vocab_size = vocab_size;
    a->vocab_offset = ctx->global_vocab ? ctx->vocab_offset : 0;
    a->global_vocab = ctx->global_vocab ? ctx->global_vocab : vocab_size;
    if (a->vocab_offset + vocab_size > a->global_vocab)
        return fs_fail(ctx, FS_ERR_INVALID_SIZE,
                       "%s: shard [%lld, %lld) exceeds the global vocabulary of %lld", fn,
                       (long long)a->vocab_offset, (long long)(a->vocab_offset + vocab_size),
                       (long long)a->global_vocab);
    return FS_OK;
}

static fs_status check_rows(fs_context *ctx, const char *fn, int64_t rows)
{
    if (rows <= 0 || rows > INT32_MAX)
        return fs_fail(ctx, FS_ERR_INVALID_SIZE, "%s: rows %lld outside [1, INT32_MAX]", fn,
                       (long long)rows);
    return FS_OK;
}

fs_status fs_prepare_fused(fs_context *ctx, const char *fn, const fs_lm_head *head,
                           const void *hidden, int64_t rows, fs_op_args *a)
{
    if (!head)
        return fs_fail(ctx, FS_ERR_NULL_POINTER, "%s: head is NULL", fn);
    if (!head->weight)
        return fs_fail(ctx, FS_ERR_NULL_POINTER, "%s: head->weight is NULL", fn);
    if (!hidden)
        return fs_fail(ctx, FS_ERR_NULL_POINTER, "%s: hidden is NULL", fn);
    if (!dtype_ok(head->dtype))
        return fs_fail(ctx, FS_ERR_INVALID_ARGUMENT, "%s: head->dtype %d is not an fs_dtype", fn,
                       (int)head->dtype);
    if (head->hidden_dim <= 0 || head->hidden_dim > INT32_MAX)
        return fs_fail(ctx, FS_ERR_INVALID_SIZE, "%s: hidden_dim %lld outside [1, INT32_MAX]", fn,
                       (long long)head->hidden_dim);
    fs_status st = check_rows(ctx, fn, rows);
    if (st != FS_OK)
        return st;
    a->head = head;
    a->hidden = hidden;
    a->rows = rows;
    return set_vocab(ctx, fn, head->vocab_size, a);
}

fs_status fs_prepare_logits(fs_context *ctx, const char *fn, const void *logits, fs_dtype dtype,
                            int64_t rows, int64_t vocab_size, fs_op_args *a)
{
    if (!logits)
        return fs_fail(ctx, FS_ERR_NULL_POINTER, "%s: logits is NULL", fn);
    if (!dtype_ok(dtype))
        return fs_fail(ctx, FS_ERR_INVALID_ARGUMENT, "%s: dtype %d is not an fs_dtype", fn,
                       (int)dtype);
    fs_status st = check_rows(ctx, fn, rows);
    if (st != FS_OK)
        return st;
    a->logits = logits;
    a->logits_dtype = dtype;
    a->rows = rows;
    return set_vocab(ctx, fn, vocab_size, a);
}

fs_status fs_check_sampling(fs_context *ctx, const char *fn, const fs_sampling *params)
{
    if (!params)
        return fs_fail(ctx, FS_ERR_NULL_POINTER, "%s: params is NULL", fn);
    if (!params->temperature)
        return fs_fail(ctx, FS_ERR_NULL_POINTER, "%s: params->temperature is NULL", fn);
    if (!params->seed)
        return fs_fail(ctx, FS_ERR_NULL_POINTER, "%s: params->seed is NULL", fn);
    return fs_check_filter_backend(ctx, fn, params);
}

fs_status fs_check_drafts(fs_context *ctx, const char *fn, const fs_drafts *d, fs_op_args *a)
{
    if (!d)
        return fs_fail(ctx, FS_ERR_NULL_POINTER, "%s: drafts is NULL", fn);
    if (d->num_requests <= 0 || d->num_requests > INT32_MAX / 2)
        return fs_fail(ctx, FS_ERR_INVALID_SIZE, "%s: num_requests %lld outside [1, INT32_MAX/2]",
                       fn, (long long)d->num_requests);
    if (d->max_drafts < 0 || d->max_drafts >= (int64_t)FS_MAX_POSITION)
        return fs_fail(ctx, FS_ERR_INVALID_SIZE, "%s: max_drafts %lld outside [0, %u)", fn,
                       (long long)d->max_drafts, FS_MAX_POSITION);
    if (d->num_draft_tokens < 0 || d->num_draft_tokens > d->num_requests * d->max_drafts)
        return fs_fail(ctx, FS_ERR_INVALID_SIZE,
                       "%s: num_draft_tokens %lld outside [0, num_requests * max_drafts = %lld]",
                       fn, (long long)d->num_draft_tokens,
                       (long long)(d->num_requests * d->max_drafts));
    if (!d->draft_offsets)
        return fs_fail(ctx, FS_ERR_NULL_POINTER, "%s: drafts->draft_offsets is NULL", fn);
    if (!d->draft_tokens && d->num_draft_tokens > 0)
        return fs_fail(ctx, FS_ERR_NULL_POINTER, "%s: drafts->draft_tokens is NULL", fn);
    a->drafts = d;
    a->rows = d->num_draft_tokens + d->num_requests;
    return FS_OK;
}

fs_status fs_check_workspace_query(const fs_context *ctx, int64_t rows, int64_t vocab_size,
                                   const size_t *out_bytes)
{
    if (!ctx || !out_bytes)
        return FS_ERR_NULL_POINTER;
    if (rows <= 0 || rows > INT32_MAX || vocab_size <= 0 || vocab_size > INT32_MAX)
        return fs_fail_const(ctx, FS_ERR_INVALID_SIZE,
                       "workspace size query: rows %lld and vocab_size %lld must be in "
                       "[1, INT32_MAX]",
                       (long long)rows, (long long)vocab_size);
    return FS_OK;
}

size_t fs_workspace_bytes(const fs_context *ctx, fs_op op, int64_t rows, int64_t requests,
                          int64_t vocab_size)
{
#ifdef FS_HAVE_CUDA
    if (ctx->kind == FS_DEVICE_CUDA)
        return fs_cuda_workspace_bytes(ctx, op, rows, requests, vocab_size);
#endif
    (void)ctx;
    return fs_cpu_workspace_bytes(op, rows, requests, vocab_size);
}
