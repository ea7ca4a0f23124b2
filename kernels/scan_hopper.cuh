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

#include "record.h"

/* Tokens per record tile (equal to the generic path's FS_FUSED_TILE_V). */
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

/* Number of 128-token vocabulary tiles of the FS_HOPPER_TILE kernel. */
int64_t fs_hopper_num_tiles(int64_t V_local, int64_t rows);

/* Two kernels share this entry point:
 *   FS_HOPPER_TILE  vocabulary as the wgmma M dimension (scan_hopper.cu): one
 *                   record per (row, 128-token tile); best up to ~64 rows.
 *   FS_HOPPER_ROWS  rows as M (scan_hopper_rows.cu): one record per (row,
 *                   slot), a slot being one CTA's share of the vocabulary;
 *                   for large row batches.
 * The automatic choice takes FS_HOPPER_ROWS from rows_min rows up. */
enum fs_hopper_kernel { FS_HOPPER_AUTO = 0, FS_HOPPER_TILE = 1, FS_HOPPER_ROWS = 2 };

/* From 256 rows up the rows kernel is faster for draft argmax on H100
 * (bench/NOTES.md, 2026-11-22 session 2); 200 sits between 160 and 256. */
#define FS_HOPPER_ROWS_MIN_DEFAULT 200

typedef struct fs_hopper_opts {
    int records_row_major; /* 1: record (r, k) at recs[r * n_recs + k]; 0: at recs[k * rows + r] */
    int kernel;            /* enum fs_hopper_kernel */
    int64_t rows_min;      /* FS_HOPPER_AUTO: rows kernel from this many rows; 0 = default */
    int force_bn;          /* FS_HOPPER_TILE: 0 = automatic, else one of fs_hopper_bn_list */
} fs_hopper_opts;

/* The kernel a launch with these options takes (opts may be NULL). */
int fs_hopper_kernel_for(int64_t rows, const fs_hopper_opts *opts);

/* Records per row (n_recs) that fs_hopper_scan_launch_ex writes: merging a
 * row's n_recs records gives the row's record.  sm_count <= 0: query the
 * current device. */
int64_t fs_hopper_records_per_row(int64_t V_local, int64_t rows, int sm_count,
                                  const fs_hopper_opts *opts);

/* Fused scan.  W [V_local, D] and H [rows, D] row-major, bf16 (is_bf16 = 1)
 * or fp16.  Local token v is global token vocab_offset + v; logit_bias
 * [rows, global_vocab] and allowed [rows, ceil(global_vocab / 32)] are
 * optional (NULL).  Writes n_recs records for every row r < rows (layout:
 * opts->records_row_major) whose merge is the row's record over the shard
 * (rows whose descriptor lacks FS_ROWF_VALID get fs_record_init's records).
 * n_recs must equal fs_hopper_records_per_row(V_local, rows, sm_count, opts).
 * opts NULL: automatic kernel, [n_recs][rows] layout. */
int fs_hopper_scan_launch_ex(const void *W, const void *H, int is_bf16, int64_t V_local,
                             int64_t D, int64_t rows, int64_t vocab_offset, int64_t global_vocab,
                             const fs_row_desc *descs, const float *logit_bias,
                             const uint32_t *allowed, fs_record *recs, int64_t n_recs,
                             int sm_count, const fs_hopper_opts *opts, cudaStream_t stream);

/* The row-block widths compiled in (ascending), and the one the automatic
 * choice takes for `rows` (with the number of row blocks). */
int fs_hopper_bn_list(const int **list);
int fs_hopper_pick_bn(int64_t rows, int64_t *row_blocks);

#ifdef __cplusplus
}
#endif

#endif
