// The rows kernel's candidate-list epilogue (kernels/rows_epilogue.cuh:
// max_part with FILT, cand_tile) run by one warp on values the test chooses,
// for tests/test_gpu_rows_lists.c, which checks every list against its
// definition (src/cand_list.h).  Lane l holds rows 2 l and 2 l + 1 (HALF 0
// and 1) and, as in the kernel, columns 8 j + 2 gc + e of each 256-token
// tile (gc = l % 4).
#include <cuda_runtime.h>

#include "rows_epilogue.cuh"

namespace {

constexpr int NA = 128; /* accumulators a thread: 2 rows x 64 tokens */

template <int HALF>
__device__ void lists_tile(fshr::RowState &r, const float (&acc)[NA], fs_cand_list *cl,
                           int64_t g0, int gc)
{
    float m, mp[2], mn;
    int mcol;
    fshr::max_part<HALF, NA, false, true>(acc, m, mcol, gc, false, mp, mn);
    fshr::cand_tile<HALF, NA>(r, acc, cl, mp, mn, g0, gc, r.d->inv_temp);
}

/* vals [tiles][32 lanes][2 rows][64]: value 2 j + e is column 8 j + 2 gc + e */
__global__ void rows_lists_kernel(const float *vals, const fs_row_desc *descs, int tiles,
                                  int64_t vocab_offset, fs_cand_list *out)
{
    __shared__ fs_row_desc sd[64];
    __shared__ fs_cand_list lists[32 * 4];
    const int lane = threadIdx.x, gc = lane & 3;
    sd[2 * lane] = descs[2 * lane];
    sd[2 * lane + 1] = descs[2 * lane + 1];
    for (int k = 0; k < 4; ++k)
        fs_cand_init(&lists[4 * lane + k]);
    __syncwarp();
    fshr::RowState r0, r1;
    fshr::row_init(r0, 2 * lane, &sd[2 * lane]);
    fshr::row_init(r1, 2 * lane + 1, &sd[2 * lane + 1]);
    for (int t = 0; t < tiles; ++t) {
        float acc[NA];
        const float *v = vals + ((int64_t)t * 32 + lane) * 128;
#pragma unroll
        for (int j = 0; j < 32; ++j)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                acc[4 * j + e] = v[2 * j + e];
                acc[4 * j + 2 + e] = v[64 + 2 * j + e];
            }
        const int64_t g0 = vocab_offset + (int64_t)t * 256;
        lists_tile<0>(r0, acc, &lists[4 * lane], g0, gc);
        lists_tile<1>(r1, acc, &lists[4 * lane + 2], g0, gc);
    }
    __syncwarp();
    for (int k = 0; k < 4; ++k)
        out[4 * lane + k] = lists[4 * lane + k];
}

} // namespace

extern "C" int fs_test_rows_lists(const float *vals, const fs_row_desc *descs, int tiles,
                                  int64_t vocab_offset, fs_cand_list *out)
{
    float *dv = nullptr;
    fs_row_desc *dd = nullptr;
    fs_cand_list *dout = nullptr;
    const size_t nv = (size_t)tiles * 32 * 128;
    cudaError_t e = cudaMalloc(&dv, nv * sizeof(float));
    if (e == cudaSuccess)
        e = cudaMalloc(&dd, 64 * sizeof(fs_row_desc));
    if (e == cudaSuccess)
        e = cudaMalloc(&dout, 128 * sizeof(fs_cand_list));
    if (e == cudaSuccess)
        e = cudaMemcpy(dv, vals, nv * sizeof(float), cudaMemcpyHostToDevice);
    if (e == cudaSuccess)
        e = cudaMemcpy(dd, descs, 64 * sizeof(fs_row_desc), cudaMemcpyHostToDevice);
    if (e == cudaSuccess) {
        rows_lists_kernel<<<1, 32>>>(dv, dd, tiles, vocab_offset, dout);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess)
        e = cudaMemcpy(out, dout, 128 * sizeof(fs_cand_list), cudaMemcpyDeviceToHost);
    cudaFree(dv);
    cudaFree(dd);
    cudaFree(dout);
    return (int)e;
}
