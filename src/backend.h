/* The internal interface between the public ops and the backends.
 *
 * Every public op validates what the host can see, then describes itself as
 * one fs_op_args -- which input (fused LM head or logits), which rows, which
 * finalizer -- and hands it to the context's backend.  A backend implements
 * the single vocabulary-scan engine once and switches only on the finalizer. */
#ifndef FS_BACKEND_H
#define FS_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "flashspec.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fs_op {
    FS_OP_SAMPLE = 0,
    FS_OP_ARGMAX = 1,
    FS_OP_VERIFY = 2,
    FS_OP_VERIFY_TREE = 3 /* run by dispatch_tree.c, never by fs_run_op */
} fs_op;

typedef struct fs_op_args {
    fs_op op;
    /* input: either a fused LM head + hidden states, or logits */
    const fs_lm_head *head;   /* NULL for the *_logits variants */
    const void *hidden;       /* [rows, D] */
    const void *logits;       /* [rows, vocab_size] */
    fs_dtype logits_dtype;
    int64_t vocab_size;       /* tokens held by this context (the shard) */
    int64_t vocab_offset;     /* global id of the first token held here */
    int64_t global_vocab;     /* size of the whole vocabulary */
    int64_t rows;             /* scanned rows (verify: num_draft_tokens + num_requests) */
    const fs_sampling *params; /* NULL for argmax */
    const fs_drafts *drafts;   /* verify only */
    void *workspace;
    size_t workspace_bytes;
    int32_t *out_tokens;
    float *out_values;         /* logprobs (sample, verify) or logits (argmax); optional */
    int32_t *out_num_emitted;  /* verify only */
    int32_t *out_row_status;
    int64_t logits_ld;         /* row stride of logits in elements; 0 = vocab_size.  Only the
                                  CPU backend's shard emulation sets it (a shard's slice of
                                  full-vocabulary logits); the public ops leave it 0 */
} fs_op_args;

/* Default of fs_context.tail_rows_max (FLASHSPEC_TAIL_ROWS_MAX).  H100, A/B
 * of both ends: the merge kernel (programmatic launch, a block per row) beats the
 * scan's last CTA from 16 rows up -- by 30-90 us at 128-320 rows, where one
 * SM reading every record was the bottleneck -- and is even at 1-5.  An
 * H200 (fast_hbm) ends up to 8 rows there: in one process, both ways
 * round, verify of one request with four drafts (5 rows) 0.5-0.7% faster
 * on three shapes with 8 than with 4; with five to seven drafts, and
 * sample and draft argmax of 6-8 rows, even
 * (bench/results/2026-12-01-h200-alt-rechecks/). */
#define FS_TAIL_ROWS_MAX_DEFAULT 4
#define FS_TAIL_ROWS_MAX_FAST_HBM 8

struct fs_context {
    fs_device_kind kind;
    int device;
    void *stream;
    void *nccl_comm;
    int64_t vocab_offset;
    int64_t global_vocab; /* 0 = not sharded */
    int sm_count;
    int cc_major, cc_minor;
    int hopper; /* use the sm_90a TMA + wgmma scan where the shape allows */
    int64_t hopper_rows_min; /* rows from which the rows-as-M Hopper kernel runs; 0 = its default */
    int hopper_rows_early;   /* the default takes the rows kernel below 97 rows by op and
                                hidden size (fs_hopper_rows_min_fast_hbm): an H200's */
    int hopper_no_multicast; /* the rows kernel runs without 2-CTA clusters */
    int tile_no_epi_wg;      /* the tile kernel's 128-160-row blocks without the epilogue
                                warpgroup */
    int tile_ew_min_bn;      /* the tile kernel's epilogue warps from this row block (48,
                                64, 80, 96, 128); 0: by the chip (hopper_opts_for) */
    int tile_bn_step16;      /* the tile kernel's single CTAs past 128 rows in 144- and
                                160-row blocks only, not 136 and 152 (A/B runs) */
    int64_t tile_pairs_min;  /* the tile kernel in 2-CTA pairs from this many rows (up to
                                320; 241-256 by fs_hopper_pairs_128); 0: never, -1:
                                by the chip (fs_hopper_pairs_min) */
    int tile_pairs_128;      /* the pairs take 241-256 rows too (1) or not (0); -1: by
                                the chip and op (fs_hopper_pairs_128) */
    int64_t tile_groups_max; /* the tile kernel's pairs in row groups past 320 rows, up to
                                this many rows; 0: never, -1: by the chip
                                (fs_hopper_groups_max) */
    int hopper_odd_pairs;    /* the rows kernel pairs an odd count of row blocks */
    int hopper_row_block;    /* the rows kernel's rows per CTA (128 / 192); 0: automatic */
    int hopper_rows_ties_128; /* where 128 and 192 rows pad as many, the automatic row
                                 block by the H200's rule (fs_hopper_rows_block's tie) */
    int hopper_rows_jobs;    /* the rows kernel's jobs per CTA; 0: automatic */
    int w_stream;            /* how the Hopper kernels stream W (enum fs_w_stream,
                                kernels/scan_hopper.cuh): by the chip's memory bandwidth */
    int w_hint;              /* W loads' L2 hint (enum fs_w_hint); -1: by the stream */
    int64_t tail_rows_max;   /* the Hopper scan's last CTA ends ops of up to this many rows;
                                past it, a merge kernel on every SM does */
    int single_launch;       /* unfiltered sample, draft argmax and verify on the Hopper
                                tile kernel run as one launch, without prep, merge or
                                finalize kernels */
    int filter_force_second_pass; /* FLASHSPEC_FILTER_SECOND_PASS: every filtered row takes the
                                     filters' second pass (tests of that pass) */
    int filter_defer;             /* FLASHSPEC_FILTER_DEFER=0: the second pass runs every select
                                     level as a pass of its own, none beside the draw (tests) */
    int filter_warm;              /* FLASHSPEC_FILTER_WARM=0: the filtered merge kernel runs no
                                     block ahead of the rows to warm the resolve's code (A/B,
                                     tests) */
    char last_error[512];
    int filter_wide; /* FLASHSPEC_FILTER_WIDE=0: rows the best 64 candidates leave undecided
                        take the second pass without the wide resolve (A/B, tests) */
    int64_t filter_rows_min; /* filtered sample and verify of this many rows up take the
                                Hopper rows kernel with candidate lists, fewer the tile
                                kernel; 0: the tile kernel in row chunks of 160 at any
                                count (FLASHSPEC_FILTER_ROWS_MIN) */
};

/* Record a formatted message as ctx's last error and return status.  The
 * const queries (workspace sizes) record messages too: every context is a
 * heap object from fs_context_create, never a const object, so writing its
 * message buffer through a cast pointer is defined; use fs_fail_const. */
fs_status fs_fail(fs_context *ctx, fs_status status, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
#define fs_fail_const(ctx, ...) fs_fail((fs_context *)(ctx), __VA_ARGS__)

/* Workspace bytes a backend needs for `rows` scanned rows, `requests`
 * requests (= rows except for verify) and a local vocabulary of vocab_size.
 * fs_*_run receive a fully validated fs_op_args: fs_run_op has checked the
 * outputs and that the workspace holds at least this many bytes. */
size_t fs_cpu_workspace_bytes(fs_op op, int64_t rows, int64_t requests, int64_t vocab_size);
fs_status fs_cpu_run(fs_context *ctx, const fs_op_args *a);

#ifdef FS_HAVE_CUDA
size_t fs_cuda_workspace_bytes(const fs_context *ctx, fs_op op, int64_t rows, int64_t requests,
                               int64_t vocab_size);
fs_status fs_cuda_run(fs_context *ctx, const fs_op_args *a);
/* Context lifetime hooks: query the device (sm count, capability). */
fs_status fs_cuda_context_init(fs_context *ctx, int device_ordinal);
int fs_cuda_device_count(void);
#endif

#ifdef __cplusplus
}
#endif

#endif
