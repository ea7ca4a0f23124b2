/* Hopper (sm_90a) fused LM-head scan: TMA + mbarrier pipeline + wgmma,
 * warp-specialised, persistent.  Produces per-row partial records (record.h)
 * that the generic merge / exchange / finalize read unchanged.
 *
 * Host functions only; all device pointers.  Every function returns 0 or a
 * cudaError_t value (cudaSuccess == FS_OK == 0).  Nothing allocates or
 * synchronises: a launch can be captured in a CUDA graph (the tensor maps are
 * kernel parameters built on the host at launch time). */
#ifndef FS_SCAN_HOPPER_CUH
#define FS_SCAN_HOPPER_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_common.cuh"
#include "record.h"

/* Tokens per vocabulary tile of the FS_HOPPER_TILE kernel. */
#define FS_HOPPER_TILE_V 128

#ifdef __cplusplus
extern "C" {
#endif

/* 1 when the Hopper path can take this shape: 16-bit weights (bf16 / fp16)
 * and D % 8 == 0 (TMA needs 16-byte row strides).  The caller must also check
 * that the device is compute capability 9.0 and that W and H are 16-byte
 * aligned (fs_hopper_aligned); fs_hopper_scan_launch_ex returns
 * cudaErrorInvalidDeviceFunction / cudaErrorInvalidValue otherwise. */
int fs_hopper_supported(int64_t D, int is_16bit);
int fs_hopper_aligned(const void *W, const void *H);

/* Two kernels share this entry point:
 *   FS_HOPPER_TILE  vocabulary as the wgmma M dimension (scan_hopper.cu), one
 *                   row block of up to FS_HOPPER_TILE_MAX_ROWS rows;
 *   FS_HOPPER_ROWS  rows as M (scan_hopper_rows.cu), any number of rows.
 * Either writes one record per (row, CTA): merging a row's records gives the
 * row's record over the shard. */
enum fs_hopper_kernel { FS_HOPPER_AUTO = 0, FS_HOPPER_TILE = 1, FS_HOPPER_ROWS = 2 };

#define FS_HOPPER_TILE_MAX_ROWS 160

/* Candidate lists per (row, CTA) the tile kernel writes for filtered rows:
 * one per epilogue thread of the row (at most 8: a tile's noise blocks). */
#define FS_HOPPER_TILE_LISTS 8

/* The automatic choice takes FS_HOPPER_ROWS from FS_HOPPER_ROWS_MIN_DEFAULT
 * rows up, for every op; fs_hopper_opts.rows_min > 0 replaces the rule by
 * "rows kernel from rows_min rows" (up to rows_max, when that is > 0). */
#define FS_HOPPER_ROWS_MIN_DEFAULT 97
/* An H200's first row count on the rows kernel where D > 5120 and the tile
 * kernel's epilogue warps start at 80 rows or fewer (fs_hopper_rows_span_ew80):
 * 97-103 rows run the EW tile kernel's 128-row block. */
#define FS_HOPPER_ROWS_MIN_EW80_WIDE 104

/* How the Hopper kernels stream the LM head (fs_hopper_opts.w_stream; the
 * context picks it per chip by its peak memory bandwidth, cuda_context.cu).
 * W is read once, in 128-byte rows of TMA boxes.
 *   PROMOTED  each L2 miss fetches 256 bytes (the next box's half) and W
 *             is loaded evict_normal: on an H100 (3.35 TB/s) the tile
 *             kernel reads W at the HBM floor this way, and evict_first
 *             cost 1.5-4% a call there (DESIGN, "Measured and dropped").
 *   PLAIN     no promotion, no L2 hint (fs_w_hint): on an H200 (4.8 TB/s)
 *             the promoted stream holds the tile kernel at 3.4 TB/s (ncu:
 *             DRAM 71% busy, cuBLAS's kernel 90%) and a 1-row sample at
 *             1.23x the bound; no promotion alone 1.11x, with evict_first
 *             1.06x (151936 x 4096), and without any hint 1.01x the
 *             matmul (4.3-4.5 TB/s).  The rows kernel takes it up to 128
 *             rows in one row block only (fs_hopper_rows_launch). */
enum fs_w_stream { FS_W_STREAM_PROMOTED = 0, FS_W_STREAM_PLAIN = 1 };

/* The L2 hint on W's loads (fs_hopper_opts.w_hint).  AUTO: none with the
 * plain stream, evict_normal with the promoted one (fs_w_hint_for).  On an
 * H200 the plain stream reads W at 4.29 TB/s without a hint, 4.10 with
 * evict_first and 3.72-3.76 with an evict_normal policy, the default
 * priority (bench/w_stream_probe.cu, TMA loads alone); the promoted
 * stream's evict_normal is what the H100 was measured with. */
enum fs_w_hint {
    FS_W_HINT_AUTO = -1,
    FS_W_HINT_NONE = 0,
    FS_W_HINT_EVICT_FIRST = 1,
    FS_W_HINT_EVICT_NORMAL = 2
};

static inline int fs_w_hint_for(int w_hint, int plain)
{
    if (w_hint >= FS_W_HINT_NONE && w_hint <= FS_W_HINT_EVICT_NORMAL)
        return w_hint;
    return plain ? FS_W_HINT_NONE : FS_W_HINT_EVICT_NORMAL;
}

typedef struct fs_hopper_opts {
    int kernel;               /* enum fs_hopper_kernel (TILE is honoured up to 160 rows) */
    int64_t rows_min;         /* FS_HOPPER_AUTO: rows kernel from this many rows; 0 = default */
    int64_t rows_max;         /* with rows_min: and up to this many, the tile kernel past them
                                 (to its 160 rows); 0 = no bound */
    int no_multicast;         /* rows kernel: no 2-CTA clusters (A/B runs) */
    int odd_pairs;            /* rows kernel: an odd count of row blocks (3+) in 2-CTA
                                 clusters, all but the last block sharing W */
    int row_block;            /* rows kernel: rows per CTA, 128 or 192; 0 = automatic
                                 (fs_hopper_rows_block) */
    int ties_128;             /* rows kernel, automatic row block where 128 and 192 rows
                                 pad as many: by the plan's balance for the sampling ops
                                 (an H200; fs_hopper_rows_block's tie) */
    int jobs;                 /* rows kernel: (row block, slot) jobs a CTA runs; 0 =
                                 automatic (scan_hopper_rows.cu, rows_plan) */
    int w_stream;             /* enum fs_w_stream (the rows kernel: up to 128 rows) */
    int w_hint;               /* enum fs_w_hint (AUTO: by w_stream) */
    int no_epi_wg;            /* tile kernel: 128-160-row blocks without filters push in the
                                 MMA warpgroups, not in epilogue warps (A/B runs) */
    int ew_min_bn;            /* tile kernel: the smallest row block the epilogue warps take
                                 (48, 64, 80, 96; other values: 128) */
    int bn_step16;            /* tile kernel: single CTAs past 128 rows in 144- and 160-row
                                 blocks, without the 136- and 152-row ones (A/B runs) */
    int64_t tile_pairs_min;   /* tile kernel in pairs (2-CTA clusters, each CTA half the
                                 rows, W multicast) from this many rows, 161-320 rows
                                 without filters (241-256 only with pairs_128); 0 =
                                 never (scan_hopper.cu) */
    int pairs_128;            /* the pairs take 241-256 rows too, in 128-row halves */
    int64_t tile_groups_max;  /* pairs past 320 rows: row groups of up to 320 rows, each
                                 on every slot, up to this many rows where they multiply
                                 fewer rows than the rows kernel; 0 = never */
    int argmax_only;          /* the rows are fs_draft_argmax's: only the max and its id are
                                 read (the rows kernel then skips the exponentials) */
    const fs_tail_args *tail; /* the op's end, run by the last CTA (op_tail.cuh); NULL: the
                                 caller merges the records itself */
    fs_cand_list *cands;      /* the filters' candidate lists, n_recs * FS_HOPPER_TILE_LISTS
                                 per row (the rows kernel: sample and verify in 128-row
                                 blocks); NULL: no filters */
    /* tree verify (tree_scan.cuh): the rows' children and their scores; either kernel */
    const fs_tree_row *tree_rows;
    float *tree_child_s;
} fs_hopper_opts;

/* The rows from which the rows kernel takes sample, verify, tree verify
 * (argmax 0) or draft argmax (argmax 1) with hidden size D on a chip whose memory
 * outpaces an H100's (an H200: fs_context.hopper_rows_early), where the
 * tile kernel's plain 80- and 96-row blocks lose to it (scan_hopper.cu):
 * with its epilogue warps from 128 rows only (FLASHSPEC_TILE_EW_MIN_ROWS=128). */
int64_t fs_hopper_rows_min_fast_hbm(int argmax, int64_t D);

/* The last row count the rows kernel takes on such a chip (from
 * fs_hopper_rows_min_fast_hbm's) for tree verify (tree 1) or the other
 * ops: past it, up to 160 rows, the tile kernel's epilogue-warpgroup
 * blocks are the faster (scan_hopper.cu).  0: every count. */
int64_t fs_hopper_rows_max_fast_hbm(int tree, int64_t D);

/* Whether bn is a row block the tile kernel's epilogue warps can start
 * from (fs_hopper_opts::ew_min_bn): 48, 64, 80, 96 or 128. */
int fs_hopper_ew_min_valid(int bn);

/* The smallest row block the tile kernel's epilogue warps take by default
 * on such a chip, by hidden size D (fs_hopper_opts::ew_min_bn): 48 or 80. */
int fs_hopper_ew_min_fast_hbm(int64_t D);

/* On such a chip with the tile kernel's epilogue warps from 80 rows or
 * fewer (fs_hopper_opts::ew_min_bn): the rows the rows kernel takes up to 160,
 * rows_min .. rows_max (0: no bound), for tree verify (tree) or another op
 * with hidden size D. */
void fs_hopper_rows_span_ew80(int tree, int64_t D, int64_t *rows_min, int64_t *rows_max);

/* The rows from which the tile kernel's pairs take the unfiltered ops, tree
 * verify included (up to 320 rows, 241-256 as fs_hopper_pairs_128 says; 0:
 * never), on a chip whose memory outpaces an H100's (fast_hbm) or not --
 * every op and hidden size alike where measured. */
int64_t fs_hopper_pairs_min(int fast_hbm);

/* The most rows the tile kernel's pairs take in row groups past 320 rows
 * (fs_hopper_opts::tile_groups_max; 0: never) on a chip whose memory
 * outpaces an H100's (fast_hbm) or not, for tree verify (tree) or another
 * op on an LM head of hidden size D. */
int64_t fs_hopper_groups_max(int fast_hbm, int tree, int64_t D);

/* Whether the pairs take 241-256 rows as well (fs_hopper_opts::pairs_128)
 * on such a chip, for sample or verify (sample_verify), tree verify (tree)
 * or draft argmax, on an LM head of hidden size D. */
int fs_hopper_pairs_128(int fast_hbm, int sample_verify, int tree, int64_t D);

/* The kernel a launch with these options takes (opts may be NULL). */
int fs_hopper_kernel_for(int64_t rows, const fs_hopper_opts *opts);

/* The same choice where pairs_fit says whether the device holds the pairs'
 * clusters (fs_hopper_kernel_for asks it; fs_hopper_scan_launch_ex launches
 * the block and kernel this gives), with the tile kernel's row block
 * (*bn: a pair's half; 0 for the rows kernel), whether its epilogue warps
 * push (*ew) and whether it runs in pairs (*pair); NULL outputs are not
 * written. */
int fs_hopper_kernel_plan(int64_t rows, const fs_hopper_opts *opts, int pairs_fit, int *bn,
                          int *ew, int *pair);

/* Records per row (n_recs) that fs_hopper_scan_launch_ex writes.  sm_count
 * <= 0: query the current device. */
int64_t fs_hopper_records_per_row(int64_t V_local, int64_t rows, int sm_count,
                                  const fs_hopper_opts *opts);

/* Fused scan.  W [V_local, D] and H [rows, D] row-major, bf16 (is_bf16 = 1)
 * or fp16.  Local token v is global token vocab_offset + v (vocab_offset a
 * multiple of FS_NOISE_BLOCK); logit_bias [rows, global_vocab] and allowed
 * [rows, ceil(global_vocab / 32)] are optional (NULL).  Writes n_recs records
 * for every row r < rows at recs[r * n_recs + k] (rows whose descriptor lacks
 * FS_ROWF_VALID get fs_record_init's records), then runs opts->tail if given.
 * n_recs must equal fs_hopper_records_per_row(V_local, rows, sm_count, opts). */
int fs_hopper_scan_launch_ex(const void *W, const void *H, int is_bf16, int64_t V_local,
                             int64_t D, int64_t rows, int64_t vocab_offset, int64_t global_vocab,
                             const fs_row_desc *descs, const float *logit_bias,
                             const uint32_t *allowed, fs_record *recs, int64_t n_recs,
                             int sm_count, const fs_hopper_opts *opts, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
