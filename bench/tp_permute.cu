/* The layout step of the all-gather baseline: NCCL gathers the vocabulary
 * shards as [ranks][rows][V_local]; sampling needs [rows][V].  Engines pay
 * this copy too (all_gather along the last dimension = gather + movedim). */
#include <cuda_runtime.h>
#include <stdint.h>

#include "tp_permute.h"

__global__ void tp_permute_kernel(const uint16_t *__restrict__ gathered, uint16_t *__restrict__ out,
                                  int64_t rows, int64_t v_local, int ranks)
{
    int64_t n = rows * v_local * ranks;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x) {
        int64_t v = i % v_local, r = (i / v_local) % rows, k = i / (v_local * rows);
        out[r * v_local * ranks + k * v_local + v] = gathered[i];
    }
}

extern "C" cudaError_t tp_permute_bf16(const void *gathered, void *out, int64_t rows,
                                       int64_t v_local, int ranks, cudaStream_t stream)
{
    tp_permute_kernel<<<1024, 256, 0, stream>>>((const uint16_t *)gathered, (uint16_t *)out, rows,
                                                v_local, ranks);
    return cudaGetLastError();
}
