/* Fused LM-head scan for fp32 heads on the CUDA cores (fp32 LM heads are
 * rare; this path is simple and correct rather than fast).
 *
 *   CTA tile   128 tokens x 32 rows, K step 32, 256 threads; each thread
 *              accumulates 4 tokens x 4 rows with fp32 FMAs
 *   smem       W tile [128][33] + hidden tile [32][33] + logits [32][132]
 *              floats (38 KiB, static)
 *   grid       1-D, row-block index fastest (as the tensor-core path)
 *
 * Loads are guarded scalar loads: any V, D and row count. */
#include "cuda_common.cuh"

namespace {

constexpr int BM = FS_FUSED_TILE_V;
constexpr int BN = 32;
constexpr int BK = 32;
constexpr int THREADS = FS_SCAN_THREADS;
constexpr int PITCH = BK + 1;
constexpr int EPI_PITCH = BM + 4;

__global__ void __launch_bounds__(THREADS)
    fs_scan_simt_kernel(const float *__restrict__ W, const float *__restrict__ H, int64_t D,
                        int64_t row_blocks, fs_scan_args a)
{
    __shared__ float sA[BM * PITCH];
    __shared__ float sB[BN * PITCH];
    __shared__ float S[BN * EPI_PITCH];

    const int64_t bid = blockIdx.x;
    const int64_t rb = bid % row_blocks, vt = bid / row_blocks;
    const int64_t v0 = vt * BM, n0 = rb * BN;
    const int64_t V = a.vocab;
    const int tm = threadIdx.x & 31, tn = threadIdx.x >> 5;

    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
            acc[i][j] = 0.0f;

    for (int64_t k0 = 0; k0 < D; k0 += BK) {
        for (int e = threadIdx.x; e < BM * BK; e += THREADS) {
            const int m = e / BK, k = e % BK;
            const int64_t v = v0 + m, kk = k0 + k;
            sA[m * PITCH + k] = (v < V && kk < D) ? W[v * D + kk] : 0.0f;
        }
        for (int e = threadIdx.x; e < BN * BK; e += THREADS) {
            const int n = e / BK, k = e % BK;
            const int64_t r = n0 + n, kk = k0 + k;
            sB[n * PITCH + k] = (r < a.rows && kk < D) ? H[r * D + kk] : 0.0f;
        }
        __syncthreads();
#pragma unroll 4
        for (int k = 0; k < BK; ++k) {
            float w[4], h[4];
#pragma unroll
            for (int i = 0; i < 4; ++i)
                w[i] = sA[(tm + 32 * i) * PITCH + k];
#pragma unroll
            for (int j = 0; j < 4; ++j)
                h[j] = sB[(tn + 8 * j) * PITCH + k];
#pragma unroll
            for (int i = 0; i < 4; ++i)
#pragma unroll
                for (int j = 0; j < 4; ++j)
                    acc[i][j] = fmaf(w[i], h[j], acc[i][j]);
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j)
            S[(tn + 8 * j) * EPI_PITCH + tm + 32 * i] = acc[i][j];
    __syncthreads();
    const int vcount = (int)(V - v0 < BM ? V - v0 : BM);
    fs_tile_epilogue(S, EPI_PITCH, BN, v0, vcount, n0, vt, a);
}

} // namespace

cudaError_t fs_launch_scan_simt(const fs_op_args *a, const fs_scan_args *s, cudaStream_t stream)
{
    const int64_t row_blocks = (a->rows + BN - 1) / BN;
    const int64_t blocks = row_blocks * ((a->vocab_size + BM - 1) / BM);
    if (blocks > 0x7fffffff)
        return cudaErrorInvalidConfiguration;
    fs_scan_simt_kernel<<<(unsigned)blocks, THREADS, 0, stream>>>(
        static_cast<const float *>(a->head->weight), static_cast<const float *>(a->hidden),
        a->head->hidden_dim, row_blocks, *s);
    return cudaGetLastError();
}
