/* Hopper (sm_90a) fused LM-head scan for large row batches with the
 * epilogue beside the matmul instead of after it.
 *
 *   logits^T = W . H^T, vocabulary = wgmma M (128-token tiles, 64 per MMA
 *   warpgroup), rows = wgmma N (BR = 128 or 160 per CTA), K = D.
 *
 * Why a third kernel: in the rows-as-M kernel (scan_hopper_rows.cu) the
 * tensor cores idle while the consumers run a tile's epilogue from their
 * accumulators; under ncu that costs 6-15% over its argmax-only mainloop at
 * 256-1024 rows and drops the tensor pipe from 91-96% busy to 81-88%.  Its
 * 128 accumulators a thread leave no room for a second set, and a 128 x 256
 * fp32 tile cannot be staged beside its stages.  Here a tile is 128 x BR, so
 * its logits (64-80 KB) fit in shared memory next to the pipeline, and a
 * warpgroup of its own runs the epilogue on that copy while the MMA
 * warpgroups compute the next tile.
 *
 *   CTA        4 warpgroups, one CTA per SM (setmaxnreg 40 / 120 / 120 /
 *              232 of the launch's 128 x 512 pool):
 *              producer  thread 0 issues the TMA; warps 1-3 draw the
 *                        sampling noise of the next tile (noise_fill);
 *              2 MMA     wgmma m64nBRk16 on their 64 tokens of the tile;
 *                        at the tile's end they store the accumulators to
 *                        the staging buffer (once the epilogue is done with
 *                        the previous tile) and go straight on;
 *              epilogue  reads the staged tile in the rows kernel's quad
 *                        layout and runs its epilogue (rows_epilogue.cuh) on
 *                        64 rows a pass, carrying the rows' records.
 *   work       CTA = (row block, slot) as in the rows kernel: slot s owns a
 *              contiguous range of 128-token units, one unit per tile.  Two
 *              row blocks of a slot form a 2-CTA cluster: each CTA loads
 *              one 64-token half of a step's W box for both (TMA multicast:
 *              W read from L2 once per slot pair), the stages released to
 *              both producers, and the pair stays in lockstep so W is read
 *              from DRAM once.
 *   pipeline   STAGES x { W 128 x 64, H BR x 64 } (3 for BR = 160, 4 for
 *              128), 128-byte swizzle, full / empty mbarriers; H is one box
 *              moved back to end at the last row, its repeated rows
 *              recorded by their own block only (no TMA zero fill past the
 *              last row).
 *   staging    [BR rows][128 tokens] fp32, 16-byte groups XOR-swizzled by
 *              row: the MMA warpgroups' stores and the epilogue's float2
 *              reads are free of bank conflicts.  One buffer: it is full
 *              from the MMA's end of tile t to the epilogue's end of tile t,
 *              and the MMA of tile t + 1 (~20-28 us at 128-160 rows) is
 *              longer than that epilogue.
 *   records    one per (row, slot): the merge of its quad's records.
 *   tail       the last CTA merges and finalizes the op (op_tail.cuh).
 *
 * Pushes and merges are the shared record.h functions, as everywhere: the
 * records are those of the other kernels up to the sum's rounding. */
#include "scan_hopper_staged.cuh"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "hopper_ptx.cuh"
#include "op_tail.cuh"
#include "pdl.cuh"
#include "record.h"
#include "rows_epilogue.cuh"
#include "wgmma.cuh"

namespace fshs {

using namespace fshp;

constexpr int BV = 128;                        /* tokens per tile */
constexpr int WG = 128;                        /* threads per warpgroup */
constexpr int THREADS = 4 * WG;                /* producer, 2 MMA, epilogue */
constexpr int NBT = BV / FS_NOISE_BLOCK;       /* noise blocks a row in a tile */
constexpr int NA = BV / 2;                     /* epilogue values a thread: 2 rows x 32 */
constexpr int MAX_STAGES = 8;
constexpr int NOISE_THREADS = WG - 32;         /* producer warps 1-3 */
/* named barriers (0 is __syncthreads): the epilogue warpgroup's own */
constexpr int BAR_EPI = 1;
constexpr int BAR_TAIL = 2;

template <int BR> struct Shape {
    static_assert(BR == 128 || BR == 160, "128 or 160 rows a CTA");
    static constexpr int W_BYTES = BV * BK * 2;
    static constexpr int WH_BYTES = W_BYTES / 2; /* a multicast half (64 tokens) */
    static constexpr int H_BYTES = BR * BK * 2;
    static constexpr int STAGE_BYTES = W_BYTES + H_BYTES;
    static constexpr int STG_BYTES = BR * BV * 4;
    static constexpr int NOISE_BYTES = BR * (NBT / 2) * 16; /* {Gumbel, uniform} x 2 blocks */
    static constexpr int DESC_BYTES = BR * (int)sizeof(fs_row_desc);
    /* full / empty per stage; staging full / empty, noise full / empty, the
       tail flag */
    static constexpr int BAR_BYTES = 2 * MAX_STAGES * 8 + 5 * 8;
    static constexpr int FIXED = 1024 + STG_BYTES + NOISE_BYTES + DESC_BYTES + BAR_BYTES;
    static constexpr int FIT = (SMEM_MAX - FIXED) / STAGE_BYTES;
    static constexpr int STAGES = FIT > MAX_STAGES ? MAX_STAGES : FIT;
    static constexpr int SMEM = FIXED + STAGES * STAGE_BYTES;
    static constexpr int PASSES = (BR + 63) / 64; /* epilogue passes of 64 rows */
    static_assert(STAGES >= 3, "stages");
    static_assert(SMEM <= SMEM_MAX, "smem");
};

/* Registers a thread after setmaxnreg: the pool is 128 x 512 (__launch_bounds__
 * with 512 threads caps the kernel at 128).  The MMA warpgroups hold BR / 2 <=
 * 80 accumulators; the epilogue 64 staged values and PASSES x 2 row states
 * (up to 6 records): with 152 / 168 ptxas spilled 100-480 bytes in the
 * sampling epilogue, with 120 / 232 nothing (-Xptxas -warn-spills). */
constexpr int REGS_PRODUCER = 40, REGS_MMA = 120, REGS_EPI = 232;
static_assert(REGS_PRODUCER + 2 * REGS_MMA + REGS_EPI <= 4 * 128, "register pool");
static_assert(REGS_PRODUCER <= 128 && REGS_MMA <= 128 && REGS_EPI >= 128, "dec, dec, inc");

struct Args {
    const fs_row_desc *descs;
    const float *bias;
    const uint32_t *allowed;
    fs_record *recs; /* record (row, slot) at row * slots + slot */
    int64_t rows, V, vocab_offset, global_vocab, words;
    int n_rb, slots, units, kblocks, tail_on;
    fs_tail_args tail;
    const fs_tree_row *tree_rows; /* tree verify only (tree_scan.cuh) */
    float *tree_child_s;
};

/* Units [u0, u1) of slot `slot`: the slots' ranges differ by at most one. */
__host__ __device__ __forceinline__ void slot_range(int slot, int slots, int units, int *u0,
                                                    int *u1)
{
    *u0 = (int)((int64_t)slot * units / slots);
    *u1 = (int)((int64_t)(slot + 1) * units / slots);
}

/* First row of row block rb's H box: moved back to end at the last row when
 * the block would reach past it (a box more than 32 rows past the end is
 * slow: the TMA's zero fill, DESIGN "Lessons"); the repeated rows are the
 * previous block's, which records them. */
__host__ __device__ __forceinline__ int64_t h_base(int rb, int br, int64_t rows)
{
    const int64_t nominal = (int64_t)rb * br;
    return nominal + br > rows && rows >= br ? rows - br : nominal;
}

/* Row held by local row lr of row block rb, or -1 when it is out of range
 * or the previous block's. */
__host__ __device__ __forceinline__ int64_t block_row(int rb, int lr, int br, int64_t rows)
{
    const int64_t row = h_base(rb, br, rows) + lr;
    return lr < br && row >= (int64_t)rb * br && row < rows ? row : -1;
}

#if FSH_SM90A

/* The staged tile [BR rows][128 tokens]: the 16-byte group XOR (row & 7). */
__device__ __forceinline__ int stg_idx(int row, int tok)
{
    return row * BV + (tok ^ ((row & 7) << 2));
}

template <int BR, bool BF16, int CL, bool LSE, bool TREE>
__global__ void __launch_bounds__(THREADS, 1)
    fshs_scan_kernel(const __grid_constant__ CUtensorMap tmw, const __grid_constant__ CUtensorMap tmh,
                     const Args a)
{
    using S = Shape<BR>;
    constexpr int STAGES = S::STAGES, W_BYTES = S::W_BYTES, H_BYTES = S::H_BYTES;
    extern __shared__ unsigned char smem_raw[];
    unsigned char *smem = smem_align_1024(smem_raw);
    const uint32_t sbase = smem_u32(smem);
    const uint32_t sW = sbase;
    const uint32_t sH = sbase + STAGES * W_BYTES;
    unsigned char *fixed = smem + STAGES * S::STAGE_BYTES;
    float *stg = reinterpret_cast<float *>(fixed);
    float4 *s_noise = reinterpret_cast<float4 *>(fixed + S::STG_BYTES);
    fs_row_desc *s_desc = reinterpret_cast<fs_row_desc *>(fixed + S::STG_BYTES + S::NOISE_BYTES);
    const uint32_t sBar = smem_u32(fixed + S::STG_BYTES + S::NOISE_BYTES + S::DESC_BYTES);
    unsigned int *tail_flag = reinterpret_cast<unsigned int *>(
        fixed + S::STG_BYTES + S::NOISE_BYTES + S::DESC_BYTES + 2 * MAX_STAGES * 8 + 4 * 8);
#define FSHS_FULL(s) (sBar + 8u * (uint32_t)(s))
#define FSHS_EMPTY(s) (sBar + 8u * (uint32_t)(MAX_STAGES + (s)))
#define FSHS_STG_FULL (sBar + 8u * (uint32_t)(2 * MAX_STAGES))
#define FSHS_STG_EMPTY (sBar + 8u * (uint32_t)(2 * MAX_STAGES + 1))
#define FSHS_NOISE_FULL (sBar + 8u * (uint32_t)(2 * MAX_STAGES + 2))
#define FSHS_NOISE_EMPTY (sBar + 8u * (uint32_t)(2 * MAX_STAGES + 3))

    const int KB = a.kblocks;
    const int rb = blockIdx.x % a.n_rb, slot = blockIdx.x / a.n_rb;
    const int rank = CL > 1 ? rb & 1 : 0; /* clusters pair row blocks 2 c, 2 c + 1 */
    int u0, u1;
    slot_range(slot, a.slots, a.units, &u0, &u1);
    const int n_tiles = u1 - u0;
    const int lane = threadIdx.x & 31;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(FSHS_FULL(s), 1);
            mbar_init(FSHS_EMPTY(s), 8 * CL); /* every MMA warp of the cluster */
        }
        /* every thread that writes or reads arrives (racecheck: an arrive
           releases its own thread's accesses only) */
        mbar_init(FSHS_STG_FULL, 2 * WG);
        mbar_init(FSHS_STG_EMPTY, WG);
        mbar_init(FSHS_NOISE_FULL, NOISE_THREADS);
        mbar_init(FSHS_NOISE_EMPTY, WG);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
        asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&tmw)) : "memory");
        asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(&tmh)) : "memory");
    }
    /* the peer's barriers must exist before a multicast or an arrive reaches them */
    if (CL > 1)
        cluster_sync();
    else
        __syncthreads();

    if (threadIdx.x < WG) {
        /* ---------------- producer warpgroup ---------------------------- */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS_PRODUCER));
        if (threadIdx.x == 0) {
            /* W and H do not depend on the prep kernel: no fs_pdl_wait */
            const uint64_t pol_w = policy_evict_normal(); /* see scan_hopper.cu */
            const uint64_t pol_h = policy_evict_last();
            const int hb = (int)h_base(rb, BR, a.rows);
            const int steps = n_tiles * KB;
            for (int j = 0; j < steps; ++j) {
                const int s = j % STAGES;
                if (j >= STAGES) /* step j - STAGES released by every MMA warp of the cluster */
                    mbar_wait(FSHS_EMPTY(s), (uint32_t)(j / STAGES - 1) & 1u);
                const int t = j / KB, kb = j - t * KB, u = u0 + t;
                mbar_expect_tx(FSHS_FULL(s), (uint32_t)S::STAGE_BYTES);
                if (CL == 1)
                    tma_load_2d(sW + s * W_BYTES, &tmw, kb * BK, u * BV, FSHS_FULL(s), pol_w);
                else
                    tma_load_2d_multicast(sW + s * W_BYTES + rank * S::WH_BYTES, &tmw, kb * BK,
                                          u * BV + rank * (BV / 2), FSHS_FULL(s), (uint16_t)3u,
                                          pol_w);
                tma_load_2d(sH + s * H_BYTES, &tmh, kb * BK, hb, FSHS_FULL(s), pol_h);
            }
        } else if (LSE && threadIdx.x >= 32) {
            /* the noise of tile t, drawn under its MMA once the epilogue is
               done with tile t - 1's */
            fs_pdl_wait(); /* the row descriptors */
            for (int t = 0; t < n_tiles; ++t) {
                if (t > 0)
                    mbar_wait(FSHS_NOISE_EMPTY, (uint32_t)(t - 1) & 1u);
                fshr::noise_fill<BR, NBT>(s_noise, a.vocab_offset + (int64_t)(u0 + t) * BV,
                                          threadIdx.x - 32, NOISE_THREADS, a,
                                          [&](int lr) { return block_row(rb, lr, BR, a.rows); });
                mbar_arrive(FSHS_NOISE_FULL);
            }
        }
        __syncwarp();
        fs_pdl_launch_dependents();
        /* no CTA leaves while a peer may still arrive on its barriers */
        if (CL > 1)
            cluster_sync();
        return;
    }

    if (threadIdx.x < 3 * WG) {
        /* ---------------- MMA warpgroups --------------------------------- */
        /* below the launch's 128: a decrease (an .inc to fewer registers
           than a thread holds is an illegal instruction) */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(REGS_MMA));
        fs_pdl_launch_dependents(); /* nothing here reads the prep kernel's output */
        const int mt = threadIdx.x - WG;
        const int mw = mt >> 7, wi = (mt >> 5) & 3, ga = lane >> 2, gc = lane & 3;
        float acc[BR / 2];
#pragma unroll
        for (int i = 0; i < BR / 2; ++i)
            acc[i] = 0.0f;
        /* step i's stage is free once every MMA warp of the cluster is past it */
        auto release = [&](int i) {
            const int ps = i % STAGES;
            if (lane == 0) {
                mbar_arrive(FSHS_EMPTY(ps));
                if (CL > 1)
                    mbar_arrive_cluster(FSHS_EMPTY(ps), (uint32_t)(rank ^ 1));
            }
            __syncwarp();
        };
        int j = 0;
        for (int t = 0; t < n_tiles; ++t) {
            for (int kb = 0; kb < KB; ++kb, ++j) {
                const int s = j % STAGES;
                mbar_wait(FSHS_FULL(s), (uint32_t)(j / STAGES) & 1u);
                fence_acc(acc);
                wg_fence();
                mma_kblock<BR, BF16>(acc, sW + s * W_BYTES + mw * (64 * BK * 2), sH + s * H_BYTES,
                                     kb == 0);
                wg_commit();
                wg_wait<1>();
                fence_acc(acc);
                if (kb > 0)
                    release(j - 1);
            }
            wg_wait<0>();
            fence_acc(acc);
            release(j - 1);
            /* the epilogue is done with tile t - 1 (it ran under this tile's MMA) */
            if (t > 0)
                mbar_wait(FSHS_STG_EMPTY, (uint32_t)(t - 1) & 1u);
            /* accumulator 4 n + e: token 16 wi + ga (+ 8 for e >= 2) of this
               warpgroup's 64, row 8 n + 2 gc (+ 1 for odd e) */
            const int v = 64 * mw + 16 * wi + ga;
#pragma unroll
            for (int n = 0; n < BR / 8; ++n) {
                const int r0 = 8 * n + 2 * gc;
                stg[stg_idx(r0, v)] = acc[4 * n + 0];
                stg[stg_idx(r0 + 1, v)] = acc[4 * n + 1];
                stg[stg_idx(r0, v + 8)] = acc[4 * n + 2];
                stg[stg_idx(r0 + 1, v + 8)] = acc[4 * n + 3];
            }
            mbar_arrive(FSHS_STG_FULL);
        }
        if (CL > 1)
            cluster_sync();
        return;
    }

    /* ---------------- epilogue warpgroup ------------------------------- */
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS_EPI));
    /* the row descriptors come from the prep kernel, which may still be
       running (programmatic launch) */
    fs_pdl_wait();
    fs_pdl_launch_dependents();
    const int et = threadIdx.x - 3 * WG, ew = et >> 5, ga = lane >> 2, gc = lane & 3;
    for (int lr = et; lr < BR; lr += WG) {
        const int64_t row = block_row(rb, lr, BR, a.rows);
        s_desc[lr] = row >= 0 ? a.descs[row] : fs_row_desc_skip(); /* flags 0: skipped */
    }
    fs_named_bar(BAR_EPI, WG);
    /* pass p: this warp's rows 64 p + 16 ew + ga (half 0) and + 8 (half 1);
       a pass past BR rows is skipped by the whole warp */
    fshr::RowState rs[S::PASSES][2];
#pragma unroll
    for (int p = 0; p < S::PASSES; ++p)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const int lr = 64 * p + 16 * ew + ga + 8 * h;
            const int64_t row = block_row(rb, lr, BR, a.rows);
            fshr::row_init(rs[p][h], row >= 0 ? (int)row : 0, s_desc + (lr < BR ? lr : 0));
        }
    for (int t = 0; t < n_tiles; ++t) {
        mbar_wait(FSHS_STG_FULL, (uint32_t)t & 1u);
        if (LSE)
            mbar_wait(FSHS_NOISE_FULL, (uint32_t)t & 1u);
        const int64_t v0 = (int64_t)(u0 + t) * BV;
        const int nc = (int)(a.V - v0 < BV ? a.V - v0 : BV);
#pragma unroll
        for (int p = 0; p < S::PASSES; ++p) {
            if (64 * p + 16 * ew >= BR) /* warp-uniform */
                continue;
            const int lr = 64 * p + 16 * ew + ga;
            /* the quad layout rows_epilogue.cuh reads: value 4 j + 2 h + e
               is token 8 j + 2 gc + e of row lr + 8 h */
            float vals[NA];
#pragma unroll
            for (int jj = 0; jj < NA / 4; ++jj)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    const float2 x = *reinterpret_cast<const float2 *>(
                        stg + stg_idx(lr + 8 * h, 8 * jj + 2 * gc));
                    vals[4 * jj + 2 * h] = x.x;
                    vals[4 * jj + 2 * h + 1] = x.y;
                }
            fshr::row_tile<0, NA, LSE, TREE>(rs[p][0], vals, v0, nc, gc, a,
                                             s_noise + lr * (NBT / 2));
            fshr::row_tile<1, NA, LSE, TREE>(rs[p][1], vals, v0, nc, gc, a,
                                             s_noise + (lr + 8) * (NBT / 2));
        }
        mbar_arrive(FSHS_STG_EMPTY);
        if (LSE) /* the noise buffer is free for tile t + 1 */
            mbar_arrive(FSHS_NOISE_EMPTY);
    }
#pragma unroll
    for (int p = 0; p < S::PASSES; ++p) {
        if (64 * p + 16 * ew >= BR)
            continue;
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            const fs_record q = fshr::quad_record(rs[p][h]);
            const int lr = 64 * p + 16 * ew + ga + 8 * h;
            if (gc == 0 && block_row(rb, lr, BR, a.rows) >= 0)
                a.recs[(int64_t)rs[p][h].row * a.slots + slot] = q;
        }
    }
    if (CL > 1)
        cluster_sync();
    if (a.tail_on)
        fs_op_tail(a.tail, a.recs, a.slots, a.rows, a.descs, et, WG, BAR_TAIL, tail_flag,
                   reinterpret_cast<fs_record *>(smem), /* the stages: all consumed */
                   (STAGES * S::STAGE_BYTES) / (int)sizeof(fs_record));
#undef FSHS_FULL
#undef FSHS_EMPTY
#undef FSHS_STG_FULL
#undef FSHS_STG_EMPTY
#undef FSHS_NOISE_FULL
#undef FSHS_NOISE_EMPTY
}

#else /* not sm_90a: the kernel exists (for the host stub) but is empty */

template <int BR, bool BF16, int CL, bool LSE, bool TREE>
__global__ void __launch_bounds__(THREADS, 1)
    fshs_scan_kernel(const __grid_constant__ CUtensorMap tmw, const __grid_constant__ CUtensorMap tmh,
                     const Args a)
{
}

#endif /* FSH_SM90A */

template <int BR, bool BF16, int CL, bool LSE, bool TREE> cudaError_t configure(int device)
{
    static unsigned long long done = 0;
    return set_smem_once(reinterpret_cast<const void *>(fshs_scan_kernel<BR, BF16, CL, LSE, TREE>),
                         Shape<BR>::SMEM, &done, device);
}

template <int BR, bool BF16, int CL, bool LSE, bool TREE>
cudaError_t launch(fs_pdl_config &pc, const CUtensorMap &w, const CUtensorMap &h, const Args &a,
                   int device)
{
    cudaError_t e = configure<BR, BF16, CL, LSE, TREE>(device);
    if (e != cudaSuccess)
        return e;
    pc.cluster_x(CL);
    return cudaLaunchKernelEx(&pc.cfg, fshs_scan_kernel<BR, BF16, CL, LSE, TREE>, w, h, a);
}

/* argmax only (no exponentials), sampling / verify, tree verify: separate
 * kernels, so that the others carry no tree code */
enum Epi { EPI_ARGMAX, EPI_LSE, EPI_TREE };

template <int BR, bool BF16, int CL>
cudaError_t launch_epi(Epi epi, fs_pdl_config &pc, const CUtensorMap &w, const CUtensorMap &h,
                       const Args &a, int device)
{
    return epi == EPI_ARGMAX ? launch<BR, BF16, CL, false, false>(pc, w, h, a, device)
           : epi == EPI_LSE  ? launch<BR, BF16, CL, true, false>(pc, w, h, a, device)
                             : launch<BR, BF16, CL, true, true>(pc, w, h, a, device);
}

template <int BR>
cudaError_t launch_shape(bool bf16, int cl, Epi epi, fs_pdl_config &pc, const CUtensorMap &w,
                         const CUtensorMap &h, const Args &a, int device)
{
    if (cl == 2)
        return bf16 ? launch_epi<BR, true, 2>(epi, pc, w, h, a, device)
                    : launch_epi<BR, false, 2>(epi, pc, w, h, a, device);
    return bf16 ? launch_epi<BR, true, 1>(epi, pc, w, h, a, device)
                : launch_epi<BR, false, 1>(epi, pc, w, h, a, device);
}

int64_t row_blocks(int64_t rows, int br)
{
    return (rows + br - 1) / br;
}

/* Pairs of row blocks share W through a 2-CTA cluster; an odd count (one
 * block: at most 160 rows) runs unclustered. */
int cluster_size(int64_t n_rb, int multicast)
{
    return multicast && n_rb % 2 == 0 ? 2 : 1;
}

/* 2-CTA clusters of shape BR the current device holds at once (0: unknown),
 * asked once per device: the GPCs' SM counts need not be even. */
template <int BR> int max_clusters_2()
{
    static int known[64]; /* count + 1 once asked */
    int device = 0, n = 0;
    if (cudaGetDevice(&device) != cudaSuccess)
        return 0;
    if (device < 64) {
        const int k = __atomic_load_n(&known[device], __ATOMIC_ACQUIRE);
        if (k > 0)
            return k - 1;
    }
    if (configure<BR, true, 2, true, false>(device) != cudaSuccess)
        return 0;
    fs_pdl_config pc(dim3(2), dim3(THREADS), Shape<BR>::SMEM, nullptr, false);
    pc.cluster_x(2);
    if (cudaOccupancyMaxActiveClusters(&n, fshs_scan_kernel<BR, true, 2, true, false>, &pc.cfg) !=
        cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    if (device < 64)
        __atomic_store_n(&known[device], n + 1, __ATOMIC_RELEASE);
    return n;
}

} // namespace fshs

extern "C" int fs_hopper_staged_block(int64_t rows)
{
    const int64_t p128 = (rows + 255) / 256 * 256, p160 = (rows + 319) / 320 * 320;
    return p160 < p128 ? 160 : 128;
}

extern "C" int64_t fs_hopper_staged_slots(int64_t V_local, int64_t rows, int sm_count,
                                          int multicast)
{
    if (V_local <= 0 || rows <= 0)
        return 0;
    const int br = fs_hopper_staged_block(rows);
    const int64_t units = (V_local + fshs::BV - 1) / fshs::BV;
    const int64_t n_rb = fshs::row_blocks(rows, br);
    int64_t slots = sm_count / n_rb;
    if (fshs::cluster_size(n_rb, multicast) == 2) {
        /* slots x n_rb / 2 clusters must be resident at once */
        const int mc = br == 160 ? fshs::max_clusters_2<160>() : fshs::max_clusters_2<128>();
        if (mc > 0 && 2 * mc / n_rb < slots)
            slots = 2 * mc / n_rb;
    }
    if (slots < 1)
        slots = 1;
    return slots < units ? slots : units;
}

extern "C" int fs_hopper_staged_launch(const void *W, const void *H, int is_bf16, int64_t V_local,
                                       int64_t D, int64_t rows, int64_t vocab_offset,
                                       int64_t global_vocab, const fs_row_desc *descs,
                                       const float *logit_bias, const uint32_t *allowed,
                                       fs_record *recs, int64_t slots, const fs_tail_args *tail,
                                       int multicast, int argmax_only,
                                       const fs_tree_row *tree_rows, float *tree_child_s,
                                       int device, cudaStream_t stream)
{
    using namespace fshs;
    const int br = fs_hopper_staged_block(rows);
    const int64_t n_rb = row_blocks(rows, br);
    const int64_t units = (V_local + BV - 1) / BV;
    const int64_t grid = slots * n_rb;
    if (slots < 1 || slots > units || grid > INT32_MAX || rows > INT32_MAX || units > INT32_MAX ||
        (tree_rows && (argmax_only || !tree_child_s)))
        return (int)cudaErrorInvalidValue;
    Args a;
    fill_scan_args(a, descs, logit_bias, allowed, recs, rows, V_local, vocab_offset, global_vocab,
                   D, tail);
    a.n_rb = (int)n_rb;
    a.slots = (int)slots;
    a.units = (int)units;
    a.tree_rows = tree_rows;
    a.tree_child_s = tree_rows ? tree_child_s : nullptr;

    const int cl = cluster_size(n_rb, multicast);
    CUtensorMap w, h;
    cudaError_t e = make_map(&w, W, is_bf16, D, V_local, BV / cl);
    if (e == cudaSuccess)
        e = make_map(&h, H, is_bf16, D, rows, br);
    if (e != cudaSuccess)
        return (int)e;
    const bool wide = br == 160;
    /* programmatic launch: overlaps the prep kernel (fs_pdl_wait above) */
    fs_pdl_config pc(dim3((unsigned)grid), dim3(THREADS),
                     wide ? Shape<160>::SMEM : Shape<128>::SMEM, stream, true);
    const bool bf = is_bf16 != 0;
    const Epi epi = argmax_only ? EPI_ARGMAX : tree_rows ? EPI_TREE : EPI_LSE;
    e = wide ? launch_shape<160>(bf, cl, epi, pc, w, h, a, device)
             : launch_shape<128>(bf, cl, epi, pc, w, h, a, device);
    return (int)(e != cudaSuccess ? e : cudaGetLastError());
}
