/* Header-only helpers of the tensor-parallel GPU tests (tests/test_gpu_tp*.c):
 * fatal checks (a rank thread that fails exits the process, so no other
 * rank is left waiting in a collective), device memory, bf16 rounding, the
 * ragged vocabulary split, and one rank's context on its GPU with its
 * communicator and shard.  Needs NCCL. */
#ifndef FS_TP_UTIL_H
#define FS_TP_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "flashspec.h"

#define CHECK(cond, ...)                                                                     \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                                  \
            fprintf(stderr, __VA_ARGS__);                                                    \
            fprintf(stderr, "\n");                                                           \
            exit(1);                                                                         \
        }                                                                                    \
    } while (0)
#define CUDA_OK(x) CHECK((x) == cudaSuccess, "%s failed", #x)
#define FS_OK_(ctx, x) CHECK((x) == FS_OK, "%s: %s", #x, fs_context_last_error(ctx))

/* Round to nearest even. */
static inline uint16_t tp_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

static inline void *tp_dalloc(size_t bytes)
{
    void *d = NULL;
    CUDA_OK(cudaMalloc(&d, bytes ? bytes : 1));
    return d;
}

/* A device copy of src (NULL for NULL: optional inputs stay absent). */
static inline void *tp_upload(const void *src, size_t bytes)
{
    if (!src)
        return NULL;
    void *d = tp_dalloc(bytes);
    CUDA_OK(cudaMemcpy(d, src, bytes, cudaMemcpyHostToDevice));
    return d;
}

static inline void tp_download(void *dst, const void *src, size_t bytes)
{
    CUDA_OK(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost));
}

/* Logprobs up to the rounding of the order in which the shards' partition
 * functions are summed; a NaN is near nothing (callers that compare NaN
 * padding say so). */
static inline int tp_near(float a, float b)
{
    return fabsf(a - b) <= 1e-4f * (1.0f + fabsf(b));
}

/* Ragged shards of a vocabulary of V over n ranks: rank k holds a share
 * proportional to k + 1, cut on a noise-block boundary (16 token ids), as
 * fs_context_set_vocab_shard requires; the last one ends at V. */
static inline void tp_ragged_shards(int n, int64_t V, int64_t *offset, int64_t *size)
{
    const int64_t total_w = (int64_t)n * (n + 1) / 2;
    int64_t at = 0;
    for (int k = 0; k < n; ++k) {
        offset[k] = at;
        size[k] = k == n - 1 ? V - at : ((V * (k + 1) / total_w) / 16) * 16;
        at += size[k];
    }
}

/* Rank `rank` of `ranks`: a CUDA context on GPU `rank`, and with more than
 * one rank its communicator and the shard [offset, offset + size) of a
 * vocabulary of V.  *comm is NULL for a single rank. */
static inline fs_context *tp_open_rank(int rank, int ranks, const ncclUniqueId *id,
                                       int64_t offset, int64_t V, ncclComm_t *comm)
{
    CUDA_OK(cudaSetDevice(rank));
    fs_context *ctx = NULL;
    CHECK(fs_context_create(&ctx, FS_DEVICE_CUDA, rank) == FS_OK, "context on GPU %d", rank);
    *comm = NULL;
    if (ranks > 1) {
        CHECK(ncclCommInitRank(comm, ranks, *id, rank) == ncclSuccess, "ncclCommInitRank rank %d",
              rank);
        FS_OK_(ctx, fs_context_set_vocab_shard(ctx, *comm, offset, V));
    }
    return ctx;
}

static inline void tp_close_rank(fs_context *ctx, ncclComm_t comm)
{
    if (comm)
        ncclCommDestroy(comm);
    fs_context_destroy(ctx);
}

#endif
