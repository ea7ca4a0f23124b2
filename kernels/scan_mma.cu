/* Fused LM-head scan on tensor cores (sm_80+): logits = hidden . W^T tile by
 * tile with mma.sync m16n8k16 (bf16 or fp16 in, fp32 accumulate), never
 * written to memory; the epilogue pushes each tile's tokens into per-(row,
 * tile) records.
 *
 * Decode GEMMs are skinny, so the vocabulary is the MMA's M dimension: the
 * LM head W [V, D] row-major is the row-major A operand as stored, and the
 * hidden states [rows, D] row-major are exactly the "col" B operand.
 *
 *   CTA tile   BM = 128 tokens x BN rows (BN = 32 for few rows, 128 else),
 *              K step BK = 64, 256 threads = 8 warps
 *   warps      BN = 32: 8 x 1 (warp tile 16 x 32); BN = 128: 4 x 2 (32 x 64)
 *   pipeline   cp.async 16-byte copies, STAGES deep (4 for BN 32, 3 for BN 128),
 *              rows of 64 halves = 8 16-byte chunks, XOR-swizzled by row & 7
 *              so ldmatrix and the copies are free of bank conflicts
 *   smem       STAGES * (BM + BN) * BK * 2 bytes: 80 KiB (BN 32), 96 KiB (BN 128);
 *              the epilogue reuses it for the fp32 logits tile [BN][BM + 4]
 *   grid       1-D, row-block index fastest: the CTAs that share a W tile run
 *              together and read it from L2
 *
 * Any V, D and row count: tokens and rows past the end and k past D are
 * zero-filled.  When D % 8 != 0 or a pointer is not 16-byte aligned the copies
 * cannot be 16-byte cp.async; the same pipeline then fills shared memory with
 * guarded scalar loads (slower, still correct for any D, odd D included). */
#include "cuda_common.cuh"
#include "mma_sync.cuh"

namespace {

constexpr int BM = FS_FUSED_TILE_V;
constexpr int BK = 64;
constexpr int THREADS = FS_SCAN_THREADS;
constexpr int EPI_PITCH = BM + 4;

template <int BN> struct mma_cfg {
    static constexpr int STAGES = BN >= 128 ? 3 : 4;
    static constexpr int WARPS_N = BN >= 128 ? 2 : 1;
    static constexpr int WARPS_M = (THREADS / 32) / WARPS_N;
    static constexpr int WM = BM / WARPS_M;
    static constexpr int WN = BN / WARPS_N;
    static constexpr int MT = WM / 16;
    static constexpr int NT = WN / 8;
    static constexpr size_t PIPE_BYTES = (size_t)STAGES * (BM + BN) * BK * 2;
    static constexpr size_t EPI_BYTES = (size_t)BN * EPI_PITCH * 4;
    static constexpr size_t SMEM = PIPE_BYTES > EPI_BYTES ? PIPE_BYTES : EPI_BYTES;
    static_assert(MT >= 1 && NT >= 2 && NT % 2 == 0, "warp tile");
};

__device__ __forceinline__ void ldmatrix_x4(uint32_t addr, uint32_t &r0, uint32_t &r1,
                                            uint32_t &r2, uint32_t &r3)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(addr));
}

/* Element offset of (row, 16-byte chunk c) in a [rows][BK] swizzled tile. */
__device__ __forceinline__ int swz(int row, int c)
{
    return row * BK + ((c ^ (row & 7)) << 3);
}

/* Copy `nrows` x BK halves starting at (row0, k0) of the [*, D] matrix g
 * (rows < row_end valid) into the swizzled tile s. */
__device__ __forceinline__ void load_tile(uint16_t *s, const uint16_t *__restrict__ g,
                                          int nrows, int64_t row0, int64_t row_end, int64_t k0,
                                          int64_t D, bool vec)
{
    for (int i = threadIdx.x; i < nrows * (BK / 8); i += THREADS) {
        const int row = i >> 3, c = i & 7;
        const int64_t grow = row0 + row, k = k0 + c * 8;
        uint16_t *dst = s + swz(row, c);
        const bool row_ok = grow < row_end;
        if (vec) {
            const bool ok = row_ok && k < D; /* D % 8 == 0: the chunk is all in or all out */
            const uint16_t *src = ok ? g + grow * D + k : g;
            fs_cp_async16(fs_smem_addr(dst), src, ok ? 16 : 0);
        } else {
            uint32_t w[4];
#pragma unroll
            for (int j = 0; j < 4; ++j) {
                uint32_t lo = 0, hi = 0;
                if (row_ok && k + 2 * j < D)
                    lo = g[grow * D + k + 2 * j];
                if (row_ok && k + 2 * j + 1 < D)
                    hi = g[grow * D + k + 2 * j + 1];
                w[j] = lo | (hi << 16);
            }
            *reinterpret_cast<uint4 *>(dst) = make_uint4(w[0], w[1], w[2], w[3]);
        }
    }
}

template <bool BF16, int BN>
__global__ void __launch_bounds__(THREADS)
    fs_scan_mma_kernel(const uint16_t *__restrict__ W, const uint16_t *__restrict__ H, int64_t D,
                       int vec, int64_t row_blocks, fs_scan_args a)
{
    using cfg = mma_cfg<BN>;
    extern __shared__ __align__(128) unsigned char smem_raw[];
    uint16_t *sA = reinterpret_cast<uint16_t *>(smem_raw);
    uint16_t *sB = sA + cfg::STAGES * BM * BK;

    const int64_t bid = blockIdx.x;
    const int64_t rb = bid % row_blocks, vt = bid / row_blocks;
    const int64_t v0 = vt * BM, n0 = rb * BN;
    const int64_t V = a.vocab;
    const int KT = (int)((D + BK - 1) / BK);
    const bool vecb = vec != 0;

    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int wm = warp % cfg::WARPS_M, wn = warp / cfg::WARPS_M;

    float acc[cfg::MT][cfg::NT][4];
#pragma unroll
    for (int i = 0; i < cfg::MT; ++i)
#pragma unroll
        for (int j = 0; j < cfg::NT; ++j)
#pragma unroll
            for (int k = 0; k < 4; ++k)
                acc[i][j][k] = 0.0f;

#pragma unroll
    for (int s = 0; s < cfg::STAGES - 1; ++s) {
        if (s < KT) {
            load_tile(sA + s * BM * BK, W, BM, v0, V, (int64_t)s * BK, D, vecb);
            load_tile(sB + s * BN * BK, H, BN, n0, a.rows, (int64_t)s * BK, D, vecb);
        }
        fs_cp_async_commit();
    }

    for (int kt = 0; kt < KT; ++kt) {
        fs_cp_async_wait<cfg::STAGES - 2>();
        __syncthreads();
        {
            const int pf = kt + cfg::STAGES - 1;
            if (pf < KT) {
                const int st = pf % cfg::STAGES;
                load_tile(sA + st * BM * BK, W, BM, v0, V, (int64_t)pf * BK, D, vecb);
                load_tile(sB + st * BN * BK, H, BN, n0, a.rows, (int64_t)pf * BK, D, vecb);
            }
            fs_cp_async_commit();
        }
        const uint16_t *tA = sA + (kt % cfg::STAGES) * BM * BK;
        const uint16_t *tB = sB + (kt % cfg::STAGES) * BN * BK;
#pragma unroll
        for (int kk = 0; kk < BK / 16; ++kk) {
            uint32_t af[cfg::MT][4];
#pragma unroll
            for (int mt = 0; mt < cfg::MT; ++mt) {
                const int row = wm * cfg::WM + mt * 16 + (lane & 15);
                const int c = kk * 2 + (lane >> 4);
                ldmatrix_x4(fs_smem_addr(tA + swz(row, c)), af[mt][0], af[mt][1], af[mt][2],
                            af[mt][3]);
            }
            uint32_t bf[cfg::NT][2];
#pragma unroll
            for (int np = 0; np < cfg::NT / 2; ++np) {
                const int row = wn * cfg::WN + np * 16 + (lane & 7) + ((lane >> 4) << 3);
                const int c = kk * 2 + ((lane >> 3) & 1);
                ldmatrix_x4(fs_smem_addr(tB + swz(row, c)), bf[2 * np][0], bf[2 * np][1],
                            bf[2 * np + 1][0], bf[2 * np + 1][1]);
            }
#pragma unroll
            for (int mt = 0; mt < cfg::MT; ++mt)
#pragma unroll
                for (int nt = 0; nt < cfg::NT; ++nt)
                    fs_mma16816<BF16>(acc[mt][nt], af[mt], bf[nt][0], bf[nt][1]);
        }
    }
    fs_cp_async_wait<0>();
    __syncthreads();

    /* stage the fp32 logits as [row][token] and push them */
    float *S = reinterpret_cast<float *>(smem_raw);
#pragma unroll
    for (int mt = 0; mt < cfg::MT; ++mt)
#pragma unroll
        for (int nt = 0; nt < cfg::NT; ++nt) {
            const int m = wm * cfg::WM + mt * 16 + (lane >> 2);
            const int n = wn * cfg::WN + nt * 8 + (lane & 3) * 2;
            S[n * EPI_PITCH + m] = acc[mt][nt][0];
            S[(n + 1) * EPI_PITCH + m] = acc[mt][nt][1];
            S[n * EPI_PITCH + m + 8] = acc[mt][nt][2];
            S[(n + 1) * EPI_PITCH + m + 8] = acc[mt][nt][3];
        }
    __syncthreads();
    const int vcount = (int)(V - v0 < BM ? V - v0 : BM);
    fs_tile_epilogue(S, EPI_PITCH, BN, v0, vcount, n0, vt, a);
}

template <bool BF16, int BN> cudaError_t set_smem()
{
    return cudaFuncSetAttribute(fs_scan_mma_kernel<BF16, BN>,
                                cudaFuncAttributeMaxDynamicSharedMemorySize,
                                (int)mma_cfg<BN>::SMEM);
}

template <bool BF16, int BN>
cudaError_t launch(const fs_op_args *a, const fs_scan_args *s, cudaStream_t stream)
{
    const int64_t D = a->head->hidden_dim;
    const int64_t row_blocks = (a->rows + BN - 1) / BN;
    const int64_t vtiles = (a->vocab_size + BM - 1) / BM;
    const int64_t blocks = row_blocks * vtiles;
    if (blocks > 0x7fffffff)
        return cudaErrorInvalidConfiguration;
    const bool vec = D % 8 == 0 && ((uintptr_t)a->head->weight & 15) == 0 &&
                     ((uintptr_t)a->hidden & 15) == 0;
    fs_scan_mma_kernel<BF16, BN><<<(unsigned)blocks, THREADS, mma_cfg<BN>::SMEM, stream>>>(
        static_cast<const uint16_t *>(a->head->weight), static_cast<const uint16_t *>(a->hidden),
        D, vec ? 1 : 0, row_blocks, *s);
    return cudaGetLastError();
}

} // namespace

cudaError_t fs_scan_mma_configure(void)
{
    cudaError_t e;
    if ((e = set_smem<true, 32>()) != cudaSuccess)
        return e;
    if ((e = set_smem<true, 128>()) != cudaSuccess)
        return e;
    if ((e = set_smem<false, 32>()) != cudaSuccess)
        return e;
    return set_smem<false, 128>();
}

/* Rows per CTA: up to 64 rows two 32-row blocks share each W tile through L2;
 * beyond that the 128-row tile re-reads W fewer times. */
cudaError_t fs_launch_scan_mma(const fs_op_args *a, const fs_scan_args *s, cudaStream_t stream)
{
    const bool bf16 = a->head->dtype == FS_DTYPE_BF16;
    const bool small = a->rows <= 64;
    if (bf16)
        return small ? launch<true, 32>(a, s, stream) : launch<true, 128>(a, s, stream);
    return small ? launch<false, 32>(a, s, stream) : launch<false, 128>(a, s, stream);
}
