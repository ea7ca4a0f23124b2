/* Context lifetime, last-error messages and tensor-parallel attachment. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "record.h" /* FS_NOISE_BLOCK */

fs_status fs_fail(fs_context *ctx, fs_status status, const char *fmt, ...)
{
    if (ctx) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ctx->last_error, sizeof ctx->last_error, fmt, ap);
        va_end(ap);
    }
    return status;
}

int fs_cuda_available(void)
{
#ifdef FS_HAVE_CUDA
    return fs_cuda_device_count() > 0;
#else
    return 0;
#endif
}

fs_status fs_context_create(fs_context **out_ctx, fs_device_kind kind, int device_ordinal)
{
    if (!out_ctx)
        return FS_ERR_NULL_POINTER;
    *out_ctx = NULL;
    if (kind != FS_DEVICE_CPU && kind != FS_DEVICE_CUDA)
        return FS_ERR_INVALID_ARGUMENT;
    fs_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx)
        return FS_ERR_OUT_OF_MEMORY;
    ctx->kind = kind;
    ctx->device = kind == FS_DEVICE_CUDA ? device_ordinal : -1;
    if (kind == FS_DEVICE_CUDA) {
#ifdef FS_HAVE_CUDA
        fs_status st = fs_cuda_context_init(ctx, device_ordinal);
        if (st != FS_OK) {
            free(ctx);
            return st;
        }
#else
        free(ctx);
        return FS_ERR_UNSUPPORTED;
#endif
    }
    *out_ctx = ctx;
    return FS_OK;
}

void fs_context_destroy(fs_context *ctx)
{
    free(ctx);
}

fs_status fs_context_set_stream(fs_context *ctx, void *cuda_stream)
{
    if (!ctx)
        return FS_ERR_NULL_POINTER;
    if (ctx->kind != FS_DEVICE_CUDA && cuda_stream)
        return fs_fail(ctx, FS_ERR_UNSUPPORTED, "fs_context_set_stream: a CPU context has no stream");
    ctx->stream = cuda_stream;
    return FS_OK;
}

fs_device_kind fs_context_device(const fs_context *ctx)
{
    return ctx ? ctx->kind : FS_DEVICE_CPU;
}

const char *fs_context_last_error(const fs_context *ctx)
{
    return ctx ? ctx->last_error : "fs_context_last_error: ctx is NULL";
}

fs_status fs_context_set_vocab_shard(fs_context *ctx, void *nccl_comm, int64_t vocab_offset,
                                     int64_t global_vocab_size)
{
    if (!ctx)
        return FS_ERR_NULL_POINTER;
    if (!nccl_comm && vocab_offset == 0 && global_vocab_size == 0) {
        ctx->nccl_comm = NULL;
        ctx->vocab_offset = 0;
        ctx->global_vocab = 0;
        return FS_OK;
    }
    if (!nccl_comm)
        return fs_fail(ctx, FS_ERR_NULL_POINTER,
                       "fs_context_set_vocab_shard: nccl_comm is NULL (pass all zeros to detach)");
    if (vocab_offset < 0 || global_vocab_size <= 0 || vocab_offset >= global_vocab_size ||
        global_vocab_size > INT32_MAX)
        return fs_fail(ctx, FS_ERR_INVALID_SIZE,
                       "fs_context_set_vocab_shard: need 0 <= vocab_offset (%lld) < "
                       "global_vocab_size (%lld) <= INT32_MAX",
                       (long long)vocab_offset, (long long)global_vocab_size);
    if (vocab_offset % FS_NOISE_BLOCK != 0)
        return fs_fail(ctx, FS_ERR_INVALID_SIZE,
                       "fs_context_set_vocab_shard: vocab_offset (%lld) must be a multiple of %d "
                       "(sampling noise is drawn per block of %d token ids; a block cannot span "
                       "two shards)",
                       (long long)vocab_offset, FS_NOISE_BLOCK, FS_NOISE_BLOCK);
    if (ctx->kind != FS_DEVICE_CUDA)
        return fs_fail(ctx, FS_ERR_UNSUPPORTED,
                       "fs_context_set_vocab_shard: tensor parallelism needs a CUDA context");
#ifndef FS_HAVE_NCCL
    return fs_fail(ctx, FS_ERR_UNSUPPORTED,
                   "fs_context_set_vocab_shard: flashspec was built without NCCL");
#else
    ctx->nccl_comm = nccl_comm;
    ctx->vocab_offset = vocab_offset;
    ctx->global_vocab = global_vocab_size;
    return FS_OK;
#endif
}
