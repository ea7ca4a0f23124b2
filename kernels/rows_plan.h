/* Internal: the rows kernel's launch plan (scan_hopper_rows.cu): its row
 * block, and the plan checked from the host so that a test without a GPU
 * can walk it. */
#ifndef FS_ROWS_PLAN_H
#define FS_ROWS_PLAN_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Rows per CTA (row block) for `rows` rows: `requested` when it is 128 or
 * 192; else 192 for 129-192 rows (one block instead of two of 128) and,
 * past 256 rows, where 192-row blocks pad fewer rows (but not an odd count
 * against an even one of 10+ 128-row blocks), or pad as many in an even
 * count (every block paired in a cluster) where 128-row blocks leave one
 * unpaired (for draft argmax, argmax_only, not at 257-384 rows); 128
 * otherwise.  The measured reasons are in the definition.
 *
 * tie (non-NULL on an H200): where both pad as many rows, 128 for draft
 * argmax, and for the sampling ops the block whose longest CTA multiplies
 * fewer rows x units under the launch's plan (V_local tokens, sm_count
 * SMs, the multicast knob of fs_hopper_rows_slots), 192 when even. */
typedef struct fs_rows_tie {
    int64_t V_local;
    int sm_count;
    int multicast;
} fs_rows_tie;
int fs_hopper_rows_block(int64_t rows, int requested, int argmax_only, const fs_rows_tie *tie);

/* Plans the rows kernel's launch for these arguments (as
 * fs_hopper_rows_slots) and walks every CTA's jobs as the kernel does.
 * Returns 0 when every (row block, 128-token unit) is scanned by exactly one
 * job and the two CTAs of each cluster run the same slots with row blocks
 * 2c and 2c + 1; -1 otherwise.  Writes the plan's records per row (*slots),
 * CTAs (*grid) and the most tiles a CTA runs (*max_tiles). */
int fs_hopper_rows_plan_check(int64_t V_local, int64_t rows, int sm_count, int multicast,
                              int row_block, int jobs, int64_t *slots, int64_t *grid,
                              int64_t *max_tiles);

#ifdef __cplusplus
}
#endif

#endif
