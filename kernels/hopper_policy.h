/* Internal: which Hopper kernel an op takes on this chip, in one place that
 * a test without a GPU can walk (tests/test_hopper_policy.c).  The choices
 * themselves, and the measurements behind them, are in scan_hopper.cu
 * (fs_hopper_rows_span_ew80, fs_hopper_pairs_min, ...) and cuda_ops.cu
 * (hopper_opts_for). */
#ifndef FS_HOPPER_POLICY_H
#define FS_HOPPER_POLICY_H

#include <stdint.h>

#include "backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The FLASHSPEC_* knobs of the CUDA backend read from the environment into
 * ctx, with the defaults of a chip whose memory outpaces an H100's
 * (fast_hbm 1: an H200) or not.  fs_cuda_context_init calls it with the
 * device's own measure. */
void fs_cuda_context_knobs(fs_context *ctx, int fast_hbm);

/* What a launch runs: the kernel (enum fs_hopper_kernel in scan_hopper.cuh:
 * 1 the tile kernel, 2 the rows kernel) and, for the tile kernel, its row
 * block (a pair's half), whether epilogue warps push its blocks (ew) and
 * whether it runs in 2-CTA pairs. */
typedef struct fs_hopper_pick {
    int kernel;
    int bn;
    int ew;
    int pair;
} fs_hopper_pick;

/* The pick for an unfiltered op of `rows` rows on an LM head of hidden size
 * D under ctx's knobs, where the device holds the pairs' clusters (a launch
 * also asks the device: fs_hopper_kernel_for). */
fs_hopper_pick fs_hopper_pick_for(const fs_context *ctx, fs_op op, int64_t rows, int64_t D);

#ifdef __cplusplus
}
#endif

#endif
