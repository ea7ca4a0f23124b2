/* Internal: the logits scan's chunking (scan_logits.cu), declared for C so
 * that a test without a GPU can check the plan. */
#ifndef FS_LOGITS_PLAN_H
#define FS_LOGITS_PLAN_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Chunk bounds, in tokens.  Every chunk is a power of two between them, so
 * a multiple of FS_LOGITS_CHUNK_MIN, itself a multiple of the records'
 * FS_REC_MIN_TOKENS (cuda_common.cuh): the workspace's records-per-row
 * bound holds. */
#define FS_LOGITS_CHUNK_MIN 256
/* A whole row a CTA when rows are many: every CTA's threads draw noise for
 * each block that can still beat their running best, about ln(blocks a
 * thread) + 0.6 of them, so three 65536-token chunks of a 151936-token row
 * drew ~2.4x the noise of one CTA over the row (H200, 1024 rows, sampling:
 * 269 -> 245 M instructions, 506 -> 468 us under ncu). */
#define FS_LOGITS_CHUNK_MAX 262144
/* With filters: each chunk keeps a candidate list, and the lists' count sets
 * how long a prefix of the row the one pass knows exactly (DESIGN,
 * "Sampling filters"). */
#define FS_LOGITS_CHUNK_MAX_FILTERED 4096

/* Tokens per CTA and per record for `rows` rows of `vocab` logits on
 * `sm_count` SMs: the longest chunk up to the bound (FS_LOGITS_CHUNK_MAX,
 * or FS_LOGITS_CHUNK_MAX_FILTERED when the op has filters) that still gives
 * 4 x sm_count (row, chunk) CTAs, else FS_LOGITS_CHUNK_MIN. */
int64_t fs_logits_chunk(int64_t rows, int64_t vocab, int sm_count, int filters);

#ifdef __cplusplus
}
#endif

#endif
