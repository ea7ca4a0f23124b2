/* The CUDA backend's top-k / top-p / min-p filters after the scan: the
 * resolve kernel (filter_resolve.cu) and the exact second pass
 * (filter_fallback.cu).  docs/DESIGN.md ("Sampling filters") has the
 * algorithm; src/filter_finalize.h and src/filter_select.h the decisions,
 * shared with the CPU backend. */
#ifndef FS_FILTER_GPU_CUH
#define FS_FILTER_GPU_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_common.cuh"
#include "filter_select.h"

/* One row the one pass could not resolve, as the second pass carries it. */
typedef struct fs_fallback_row {
    int32_t row;      /* scanned row */
    int32_t count;    /* finite allowed tokens (from the candidate lists) */
    int32_t phase;    /* FS_FB_* */
    uint32_t max_key; /* fs_select_key of the row's largest score, second pass */
    float m1;         /* the first pass's max score: the reference of the masses */
    float t_k;        /* top-k threshold (-inf: none) */
    float t_p;        /* top-p threshold (-inf: none) */
    fs_select q;      /* the select running in phase FS_FB_K / FS_FB_P (its float
                         masses unused: need_m, above_m) */
    unsigned long long need_m;  /* top-p: the mass target, fixed point */
    unsigned long long above_m; /* fixed-point mass above the prefix's range */
    uint32_t n_defer; /* FS_FB_DEFER_* / FS_FB_LIN: blocks deferred by the draw */
    /* FS_FB_LIN: the score buckets [lin_a, lin_b] (lin_bucket) that hold
       every threshold still open, and what lies above them */
    int32_t lin_a, lin_b;
    int32_t lin_c_above;
    unsigned long long lin_m_above, lin_m_total;
} fs_fallback_row;

/* Phases of a handed-over row.  FS_FB_LIN: the first pass's histogram of
 * scores in fixed-width buckets below the first pass's max located every
 * open threshold in buckets holding at most FS_FB_DEFER_CAP tokens: the
 * draw runs next, deferring the noise blocks with a token there, and the
 * thresholds are found among those tokens after it.  FS_FB_DEFER_K / _P:
 * the row's last select
 * (top-k without top-p, or top-p) has one level left, whose band -- the
 * tokens matching the key prefix fixed so far -- holds at most
 * FS_FB_DEFER_CAP tokens: the draw runs now, deferring the noise blocks
 * with a band token, and the level is resolved from those blocks after
 * it (filter_fallback.cu). */
enum {
    FS_FB_K = 0,
    FS_FB_P = 1,
    FS_FB_DRAW = 2,
    FS_FB_DEFER_K = 3,
    FS_FB_DEFER_P = 4,
    FS_FB_LIN = 5,
    FS_FB_DONE = 6 /* finalized after a guessed draw (filter_fallback.cu) */
};

#define FS_FB_DEFER_CAP 256

/* A noise block the draw deferred: its scores (-inf where cut), which of
 * them lie in the band (kept or not once the last level is known) and
 * which of the others are kept. */
typedef struct fs_fb_defer {
    int32_t v;     /* the block's first token (index into this vocabulary) */
    uint32_t band; /* bit i: token v + i is in the band */
    uint32_t kept; /* bit i: token v + i is outside the band and kept */
    float x[FS_NOISE_BLOCK];
} fs_fb_defer;

/* Masses of the second pass are fixed point (exp(s - m1) * 2^40 in 64-bit
 * integers) so that the atomics that add them are order-independent: the
 * histograms, hence the thresholds, are the same on every run. */
#define FS_FB_MASS_ONE 1099511627776.0 /* 2^40 */

/* Blocks of the filtered merge that run a made-up row ahead of the rows
 * (fs_filter_ws.warm; merge_row.cuh). */
#define FS_FILTER_WARM_SLOTS 3

/* Workspace of the filters, carved by cuda_ops.cu. */
typedef struct fs_filter_ws {
    fs_filter_desc *fdescs;   /* [rows] */
    fs_cand_list *cands;      /* [rows][lists_per_row] */
    int64_t lists_per_row;
    unsigned int *flag_n;     /* rows flagged for the second pass (zeroed by prep) */
    fs_fallback_row *fb;      /* [rows] */
    uint32_t *hist_count;     /* [rows][FS_SELECT_BUCKETS] */
    unsigned long long *hist_mass; /* [rows][FS_SELECT_BUCKETS] */
    fs_record *fb_recs;       /* [rows][fb_grid] */
    fs_fb_defer *defer;       /* [rows][FS_FB_DEFER_CAP] */
    int fb_grid;              /* blocks of the second pass (co-resident) */
    int defer_last;           /* the last select level may run beside the draw */
    int warm;                 /* the merge kernel's first FS_FILTER_WARM_SLOTS blocks resolve
                                 a made-up row ahead of the rows, to pull the resolve's code
                                 into L2 (merge_row.cuh) */
    /* sharded (tensor-parallel) contexts only; NULL otherwise */
    fs_filter_summary *sums;       /* [rows] this shard's candidates */
    fs_filter_summary *sum_gather; /* [ranks][rows] every shard's, after the exchange */
    fs_fallback_row *fb_stage;     /* [rows] handed-over rows by row (-1: not handed over) */
    uint32_t *tp_max;              /* [rows] second pass: max score key, all-reduced */
    fs_record *tp_part;            /* [rows] second pass: this shard's kept record */
    /* tree verify only, NULL for the chain ops: the rows' children, whose
       kept scores (children outside the kept set at -inf) replace the scan's
       in tree_child_s [rows][FS_TREE_MAX_CHILDREN] (filter_resolve.cuh) */
    const fs_tree_row *tree_rows;
    float *tree_child_s;
    int wide; /* rows the best 64 candidates leave undecided are resolved from up to 512
                 of their exact prefix (filter_resolve.cuh) */
} fs_filter_ws;

/* The filters' workspace region of `rows` rows over `vocab` tokens, carved
 * from p (256-byte aligned regions; p NULL: sizes only) into *w when given;
 * returns its bytes.  Shared by the chain ops' and tree verify's layouts
 * (cuda_ops.cu, cuda_tree.cu); lists_per_row is the bound, which the caller
 * lowers once the scan has run. */
size_t fs_filter_carve(const fs_context *ctx, int64_t rows, int64_t vocab, char *p,
                       fs_filter_ws *w);

/* What the second pass reads of the op. */
typedef struct fs_fallback_src {
    const void *weight;      /* fused: W [V, D]; NULL for logits */
    const void *hidden;      /* fused: H [rows, D] */
    int64_t D;
    fs_dtype wdtype;
    const void *logits;      /* logits ops: [rows, V] */
    fs_dtype ldtype;
} fs_fallback_src;

/* The second pass's source of an op: its LM head and hidden states, or its
 * logits (cuda_ops.cu). */
fs_fallback_src fs_fallback_src_make(const fs_op_args *a);

/* What every op does between its merge and its finalizer on a sharded
 * context (cuda_ops.cu): the exchange of the records, and with filters
 * (filt non-NULL) the shards' candidate summaries, every rank's resolve and
 * the second pass across the ranks.  Nothing on one GPU, where the merge
 * resolves and runs the second pass (fs_launch_filter_merge).  *e and
 * *step: the first failed launch and its name, left as they are when *e
 * already holds an error; a failed collective returns its status (reported
 * with fs_fail). */
fs_status fs_launch_after_merge(fs_context *ctx, const fs_op_args *a, const fs_row_desc *descs,
                                fs_filter_ws *filt, const fs_scan_args *s, fs_record *row_recs,
                                void *tp_gather, cudaStream_t stream, cudaError_t *e,
                                const char **step);

/* The filtered merge (fs_launch_merge's arguments; s: the scan's, for the
 * second pass).  On one GPU every row merged and resolved, then, in the
 * same cooperative launch, the exact second pass over the rows the resolve
 * handed over, which finalizes them (finalize != 0, sample) or stores their
 * kept records in row_recs.  On a sharded context (w->sums) every row's
 * record stored and its candidates exported, for the exchange. */
cudaError_t fs_launch_filter_merge(const fs_op_args *a, const fs_record *tile_recs,
                                   int64_t tiles_per_row, const fs_row_desc *descs,
                                   const int32_t *pre_status, fs_record *row_recs, int finalize,
                                   const fs_filter_ws *w, int force_second_pass,
                                   const fs_scan_args *s, bool overlap, cudaStream_t stream);

/* Sharded contexts: resolve the filtered rows after the exchange of records
 * and summaries (merge_finalize.cu). */
cudaError_t fs_launch_filter_tp_resolve(const fs_op_args *a, const fs_row_desc *descs,
                                        fs_record *row_recs, const fs_filter_ws *filt, int ranks,
                                        int force_second_pass, cudaStream_t stream);

/* The steps of the second pass on a sharded context (filter_fallback.cu), in
 * the order fs_tp_filter_second_pass (tp_exchange.cu) enqueues them between
 * its NCCL calls.  n_host: the handed-over rows as the host knows them (the
 * count, or every row when it cannot read it), which bounds the slots each
 * all-reduce carries; the kernels read the device's count. */
/* fb = the staged rows in row order; histograms [n_host] and tp_max zeroed */
cudaError_t fs_launch_tp_fb_begin(const fs_filter_ws *w, int64_t rows, int64_t n_host,
                                  cudaStream_t stream);
/* this shard's histogram of pass `pass` (pass 0: and each row's max) */
cudaError_t fs_launch_tp_fb_hist(const fs_op_args *a, const fs_filter_ws *w,
                                 const fs_scan_args *s, const fs_fallback_src *src, int pass,
                                 cudaStream_t stream);
/* the select steps on the all-reduced histograms, which it zeroes again */
cudaError_t fs_launch_tp_fb_step(const fs_filter_ws *w, int pass, cudaStream_t stream);
/* the draw over this shard: each row's kept record of the shard in tp_part */
cudaError_t fs_launch_tp_fb_draw(const fs_op_args *a, const fs_filter_ws *w,
                                 const fs_scan_args *s, const fs_fallback_src *src,
                                 cudaStream_t stream);
/* the shards' kept records (gather [ranks][n_host]) merged in rank order
   into row_recs */
cudaError_t fs_launch_tp_fb_store(const fs_filter_ws *w, const fs_record *gather, int64_t n_host,
                                  int ranks, fs_record *row_recs, cudaStream_t stream);

/* Blocks of the second pass that fit on the device at once. */
int fs_filter_fallback_grid(int sm_count);

/* The filtered merge kernels' dynamic shared-memory limit on the current
 * device (fs_cuda_configure_current, once per device). */
cudaError_t fs_filter_merge_configure(void);

#endif
