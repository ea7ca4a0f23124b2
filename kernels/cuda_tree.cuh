/* Tree verify on the CUDA backend: the two kernels of its own (the row
 * preparation and the walk) around the shared scan and merge (cuda_tree.cu
 * orchestrates; docs/DESIGN.md, "Tree verification"). */
#ifndef FS_CUDA_TREE_CUH
#define FS_CUDA_TREE_CUH

#include <cuda_runtime.h>
#include <stdint.h>

#include "cuda_common.cuh"
#include "tree_backend.h"
#include "tree_record.h"

/* Every lane of a warp: the tree kernels work a warp per request. */
#define FS_FULL_WARP 0xffffffffu

/* Per request: status before the scan and the fs_tree_row of each of its
 * rows (what tree_finalize.h's fs_tree_request_rows builds; a warp per
 * request here); descs[i] = rows[i].base for
 * the scan and merge kernels, which read plain descriptors; child_s all
 * -inf (kernels/tree_prep.cu).  filters non-NULL (the call filters; its
 * fdescs and flag_n are read, the parameters come from a's): as
 * fs_launch_prep's -- FS_ROW_BAD_FILTER, the rows' fs_filter_desc and
 * FS_ROWF_FILTER in descs, out_filter_fallback and *flag_n zeroed. */
cudaError_t fs_launch_tree_prep(const fs_tree_args *a, fs_row_desc *descs, fs_tree_row *rows,
                                float *child_s, int32_t *pre_status,
                                const fs_prep_filters *filters, cudaStream_t stream);

/* Per request: its merged records and children's scores assembled into
 * tree_recs, its status (fs_tree_records_status), then the walk
 * (fs_tree_walk) into a's outputs (kernels/tree_finalize.cu). */
cudaError_t fs_launch_tree_finalize(const fs_tree_args *a, const fs_record *row_recs,
                                    const float *child_s, const fs_tree_row *rows,
                                    const int32_t *pre_status, fs_tree_record *tree_recs,
                                    cudaStream_t stream);

#endif
