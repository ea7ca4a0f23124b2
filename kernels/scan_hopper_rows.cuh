/* Internal: the rows-as-M Hopper scan (scan_hopper_rows.cu), reached through
 * fs_hopper_scan_launch_ex (scan_hopper.cuh), which checks the device, the
 * shape and the pointers first. */
#ifndef FS_SCAN_HOPPER_ROWS_CUH
#define FS_SCAN_HOPPER_ROWS_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_common.cuh"
#include "cand_list.h"
#include "record.h"
#include "rows_plan.h" /* fs_hopper_rows_block */

#ifdef __cplusplus
extern "C" {
#endif

/* Records per row the kernel writes: one per "slot" (a share of the
 * vocabulary, for each row block; a CTA runs one or more (row block, slot)
 * jobs).  multicast: two row blocks run as 2-CTA clusters sharing W (CTAs
 * then capped at the clusters that fit).  row_block: as
 * fs_hopper_rows_block's `requested`.  jobs: 0 automatic, else the jobs a
 * CTA runs (tests and A/B runs). */
int64_t fs_hopper_rows_slots(int64_t V_local, int64_t rows, int sm_count, int multicast,
                             int row_block, int jobs);

/* Record (row r, slot k) goes to recs[r * slots + k]; slots must be
 * fs_hopper_rows_slots(V_local, rows, sm_count, multicast, row_block, jobs).  tail: run by the
 * last CTA (NULL: none).  argmax_only: the rows are draft argmax's, whose
 * records need no sum of exponentials (sum_exp is then meaningless).
 * tree_rows (NULL: none): the rows are tree verify's, with their children's
 * scores written to tree_child_s [rows][FS_TREE_MAX_CHILDREN] (tree_scan.cuh).
 * cands (NULL: none): the filters' candidate lists, FS_HOPPER_TILE_LISTS per
 * (row, slot) at cands[(r * slots + k) * FS_HOPPER_TILE_LISTS ..] (sampling
 * and verify in 128-row blocks, no tail).
 * w_stream: enum fs_w_stream (scan_hopper.cuh), taken up to 128 rows only;
 * w_hint: enum fs_w_hint (FS_W_HINT_AUTO: by the stream taken). */
int fs_hopper_rows_launch(const void *W, const void *H, int is_bf16, int64_t V_local, int64_t D,
                          int64_t rows, int64_t vocab_offset, int64_t global_vocab,
                          const fs_row_desc *descs, const float *logit_bias,
                          const uint32_t *allowed, fs_record *recs, int64_t slots,
                          const fs_tail_args *tail, int multicast, int row_block, int jobs,
                          int sm_count, int argmax_only, const fs_tree_row *tree_rows,
                          float *tree_child_s, fs_cand_list *cands, int w_stream, int w_hint,
                          int device, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
