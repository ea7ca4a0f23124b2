/* Hopper (sm_90a) fused LM-head scan: TMA + mbarrier pipeline + wgmma,
 * warp-specialised, persistent.  Produces the same per-(row, vocabulary tile)
 * records as the generic scans (record.h), for tiles of FS_HOPPER_TILE_V = 128
 * local tokens, so the generic merge / exchange / finalize run unchanged.
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
 * aligned (fs_hopper_aligned); fs_hopper_scan_launch returns
 * cudaErrorInvalidDeviceFunction / cudaErrorInvalidValue otherwise. */
int fs_hopper_supported(int64_t D, int is_16bit);
int fs_hopper_aligned(const void *W, const void *H);

/* Number of vocabulary tiles = ceil(V_local / 128) (independent of rows). */
int64_t fs_hopper_num_tiles(int64_t V_local, int64_t rows);

/* Fused scan.  W [V_local, D] and H [rows, D] row-major, bf16 (is_bf16 = 1)
 * or fp16.  Local token v is global token vocab_offset + v; logit_bias
 * [rows, global_vocab] and allowed [rows, ceil(global_vocab / 32)] are
 * optional (NULL).  For every row r < rows and tile t < n_tiles_out the
 * record of local tokens [128 t, 128 t + 128) of row r is written to
 *     tile_recs[t * rows + r]
 * (rows whose descriptor lacks FS_ROWF_VALID get fs_record_init's record), so
 * merging over t gives the row's record.  n_tiles_out must equal
 * fs_hopper_num_tiles(V_local, rows).  sm_count <= 0: query the device. */
int fs_hopper_scan_launch(const void *W, const void *H, int is_bf16, int64_t V_local, int64_t D,
                          int64_t rows, int64_t vocab_offset, int64_t global_vocab,
                          const fs_row_desc *descs, const float *logit_bias,
                          const uint32_t *allowed, fs_record *tile_recs, int64_t n_tiles_out,
                          int sm_count, cudaStream_t stream);

/* Same, with the record layout and a few development knobs:
 *   record (r, t) goes to tile_recs[t * rec_tile_stride + r * rec_row_stride]
 *   (fs_hopper_scan_launch: rec_tile_stride = rows, rec_row_stride = 1; the
 *   generic CUDA backend's [rows][tiles] layout is rec_tile_stride = 1,
 *   rec_row_stride = n_tiles);
 *   force_bn: 0 = automatic, else one of fs_hopper_bn_list (rows per CTA
 *   tile; rows above it are split into row blocks). */
typedef struct fs_hopper_opts {
    int64_t rec_tile_stride;
    int64_t rec_row_stride;
    int force_bn;
} fs_hopper_opts;

int fs_hopper_scan_launch_ex(const void *W, const void *H, int is_bf16, int64_t V_local,
                             int64_t D, int64_t rows, int64_t vocab_offset, int64_t global_vocab,
                             const fs_row_desc *descs, const float *logit_bias,
                             const uint32_t *allowed, fs_record *tile_recs, int64_t n_tiles_out,
                             int sm_count, const fs_hopper_opts *opts, cudaStream_t stream);

/* The row-block widths compiled in (ascending), and the one the automatic
 * choice takes for `rows` (with the number of row blocks). */
int fs_hopper_bn_list(const int **list);
int fs_hopper_pick_bn(int64_t rows, int64_t *row_blocks);

#ifdef __cplusplus
}
#endif

#endif
