/* Internal: the staged-epilogue Hopper scan (scan_hopper_staged.cu), reached
 * through fs_hopper_scan_launch_ex (scan_hopper.cuh), which checks the
 * device, the shape and the pointers first. */
#ifndef FS_SCAN_HOPPER_STAGED_CUH
#define FS_SCAN_HOPPER_STAGED_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_common.cuh"
#include "record.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Rows per CTA for `rows` rows: 128 or 160, whichever pads the rows least
 * in pairs of row blocks (the 2-CTA clusters); 128 on a tie. */
int fs_hopper_staged_block(int64_t rows);

/* Records per row the kernel writes: one per slot (a CTA's share of the
 * vocabulary, for each row block).  multicast: pairs of row blocks run as
 * 2-CTA clusters sharing W (slots then capped at the clusters that fit). */
int64_t fs_hopper_staged_slots(int64_t V_local, int64_t rows, int sm_count, int multicast);

/* Record (row r, slot k) goes to recs[r * slots + k]; slots must be
 * fs_hopper_staged_slots(V_local, rows, sm_count, multicast).  tail, argmax_only,
 * tree_rows, tree_child_s: as fs_hopper_rows_launch's. */
int fs_hopper_staged_launch(const void *W, const void *H, int is_bf16, int64_t V_local,
                            int64_t D, int64_t rows, int64_t vocab_offset, int64_t global_vocab,
                            const fs_row_desc *descs, const float *logit_bias,
                            const uint32_t *allowed, fs_record *recs, int64_t slots,
                            const fs_tail_args *tail, int multicast, int argmax_only,
                            const fs_tree_row *tree_rows, float *tree_child_s, int device,
                            cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
