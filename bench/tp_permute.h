#ifndef FS_BENCH_TP_PERMUTE_H
#define FS_BENCH_TP_PERMUTE_H

#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* out [rows][ranks * v_local] from gathered [ranks][rows][v_local], bf16. */
cudaError_t tp_permute_bf16(const void *gathered, void *out, int64_t rows, int64_t v_local,
                            int ranks, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
